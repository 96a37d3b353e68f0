//! The local backend's job schedulers: the `schedulers` table as the `SchedulerTable` that
//! `lifecycle::schedulers` writes, and `JobSchedulers` for `LocalBackend`. Every operation runs
//! inside the writer's transaction, which holds the file's write lock (`BEGIN IMMEDIATE`), so
//! what it reads is what other processes committed and nothing changes under it: concurrent
//! upserts of one key, from any process, leave exactly one pending occurrence.

use rusqlite::{Connection, OptionalExtension, Row};

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::{BoxFuture, JobSchedulers};
use crate::jobs::lifecycle::{self, SchedulerTable, StoredScheduler};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;
use crate::jobs::paging::index_range;
use crate::jobs::scheduler::{JobScheduler, Template};
use crate::schedule::ScheduleSpec;

use super::rows::{self, sql};
use super::storage::SqlStore;
use super::LocalBackend;

const COLUMNS: &str = "key, spec, name, data, options, count, next_run";

fn json_error(error: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
}

/// A row of `schedulers`: its key and the scheduler.
fn stored(row: &Row<'_>) -> rusqlite::Result<(String, StoredScheduler)> {
    let spec: String = row.get(1)?;
    let options: String = row.get(4)?;
    let stored = StoredScheduler {
        spec: serde_json::from_str(&spec).map_err(json_error)?,
        template: Template {
            name: row.get(2)?,
            data: row.get(3)?,
            options: serde_json::from_str::<JobOptions>(&options).map_err(json_error)?,
        },
        count: row.get::<_, i64>(5)? as u64,
        next_run: row.get::<_, i64>(6)? as Millis,
    };
    Ok((row.get(0)?, stored))
}

fn json<T: serde::Serialize>(value: &T) -> CoreResult<String> {
    serde_json::to_string(value).map_err(|e| CoreError::Storage(e.to_string()))
}

fn save(conn: &Connection, key: &str, s: &StoredScheduler) -> CoreResult<()> {
    let spec = json(&s.spec)?;
    let options = json(&s.template.options)?;
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO schedulers ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            key,
            spec,
            s.template.name,
            s.template.data,
            options,
            s.count as i64,
            s.next_run as i64
        ])
    })
    .map(|_| ())
    .map_err(sql)
}

impl SchedulerTable for SqlStore<'_> {
    fn scheduler(&self, key: &str) -> CoreResult<Option<StoredScheduler>> {
        self.conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM schedulers WHERE key = ?1"))
            .and_then(|mut stmt| stmt.query_row([key], stored).optional())
            .map(|row| row.map(|(_, stored)| stored))
            .map_err(sql)
    }

    fn scheduler_next_run(&self, key: &str) -> CoreResult<Option<Millis>> {
        self.conn
            .prepare_cached("SELECT next_run FROM schedulers WHERE key = ?1")
            .and_then(|mut stmt| stmt.query_row([key], |r| r.get::<_, i64>(0)).optional())
            .map(|run| run.map(|run| run as Millis))
            .map_err(sql)
    }

    fn save_scheduler(&mut self, key: &str, scheduler: StoredScheduler) -> CoreResult<()> {
        save(self.conn, key, &scheduler)
    }

    fn delete_scheduler(&mut self, key: &str) -> CoreResult<bool> {
        self.conn
            .prepare_cached("DELETE FROM schedulers WHERE key = ?1")
            .and_then(|mut stmt| stmt.execute([key]))
            .map(|n| n > 0)
            .map_err(sql)
    }

    fn scheduler_count(&self) -> CoreResult<usize> {
        self.conn
            .prepare_cached("SELECT count(*) FROM schedulers")
            .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as usize)
            .map_err(sql)
    }

    fn scheduler_page(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<Vec<(String, StoredScheduler)>> {
        let range = index_range(self.scheduler_count()?, start, end);
        if range.is_empty() {
            return Ok(Vec::new());
        }
        let order = if ascending {
            "next_run, key"
        } else {
            "next_run DESC, key DESC"
        };
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM schedulers ORDER BY {order} LIMIT ?1 OFFSET ?2"
            ))
            .map_err(sql)?;
        let rows = stmt
            .query_map([range.len() as i64, range.start as i64], stored)
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
    }

    fn occurrence_state(&self, id: &str) -> CoreResult<Option<JobState>> {
        rows::state(self.conn, id)
    }
}

impl JobSchedulers for LocalBackend {
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        self.call(move |conn, env| {
            let max = env.max_payload_bytes;
            let mut store = SqlStore::new(conn, env);
            lifecycle::schedulers::upsert(&mut store, &key, spec, template, max, now)
        })
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.direct(move |conn, env| lifecycle::schedulers::get(&SqlStore::new(conn, env), &key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.direct(move |conn, env| {
            lifecycle::schedulers::list(&SqlStore::new(conn, env), start, end, ascending)
        })
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.direct(|conn, env| SqlStore::new(conn, env).scheduler_count())
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| {
            lifecycle::schedulers::remove(&mut SqlStore::new(conn, env), &key, now)
        })
    }
}
