//! The local backend's job schedulers (the SQL side of `memory_scheduler`), decided by
//! `jobs::scheduler`. Every operation runs inside the writer's transaction, which holds the
//! file's write lock (`BEGIN IMMEDIATE`), so what it reads is what other processes committed
//! and nothing changes under it: concurrent upserts of one key, from any process, leave exactly
//! one pending occurrence.

use rusqlite::{Connection, OptionalExtension, Row};

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::JobOptions;
use crate::jobs::paging::index_range;
use crate::jobs::scheduler::{
    self, occurrence_id, occurrence_options, Current, JobScheduler, OnClaim, OnUpsert, Template,
};
use crate::schedule::ScheduleSpec;

use super::ops::{self, Env};
use super::rows::{self, reserve, set_meta, sql, AutoIds};
use super::LocalBackend;
use crate::jobs::contract::{BoxFuture, JobSchedulers};

const COLUMNS: &str = "key, spec, name, data, options, count, next_run";

/// A scheduler as stored (its pending occurrence's id is derived from `next_run`).
struct Stored {
    key: String,
    spec: ScheduleSpec,
    template: Template,
    count: u64,
    next_run: Millis,
}

fn json_error(error: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
}

fn stored(row: &Row<'_>) -> rusqlite::Result<Stored> {
    let spec: String = row.get(1)?;
    let options: String = row.get(4)?;
    Ok(Stored {
        key: row.get(0)?,
        spec: serde_json::from_str(&spec).map_err(json_error)?,
        template: Template {
            name: row.get(2)?,
            data: row.get(3)?,
            options: serde_json::from_str::<JobOptions>(&options).map_err(json_error)?,
        },
        count: row.get::<_, i64>(5)? as u64,
        next_run: row.get::<_, i64>(6)? as Millis,
    })
}

fn load(conn: &Connection, key: &str) -> CoreResult<Option<Stored>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM schedulers WHERE key = ?1"))
        .and_then(|mut stmt| stmt.query_row([key], stored).optional())
        .map_err(sql)
}

fn json<T: serde::Serialize>(value: &T) -> CoreResult<String> {
    serde_json::to_string(value).map_err(|e| CoreError::Storage(e.to_string()))
}

fn save(conn: &Connection, s: &Stored) -> CoreResult<()> {
    let spec = json(&s.spec)?;
    let options = json(&s.template.options)?;
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO schedulers ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    ))
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            s.key,
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

fn delete(conn: &Connection, key: &str) -> CoreResult<bool> {
    conn.prepare_cached("DELETE FROM schedulers WHERE key = ?1")
        .and_then(|mut stmt| stmt.execute([key]))
        .map(|n| n > 0)
        .map_err(sql)
}

fn exists(conn: &Connection, id: &str) -> CoreResult<bool> {
    Ok(rows::state(conn, id)?.is_some())
}

/// Removes a pending occurrence, as a removal by hand does (a `removed` event).
fn remove_occurrence(conn: &Connection, env: &mut Env, id: &str, now: Millis) -> CoreResult<()> {
    if let Some(state) = ops::delete_releasing(conn, env, id)? {
        env.finished.push((id.to_owned(), FinishedResult::Missing));
        env.event(
            conn,
            now,
            "removed",
            Some(id),
            Some(("prev", state.as_str())),
        )?;
    }
    super::flows::settle_removals(conn, env, now, false)
}

fn create_occurrence(
    conn: &Connection,
    env: &mut Env,
    key: &str,
    template: &Template,
    run: Millis,
    now: Millis,
) -> CoreResult<Job> {
    let new = NewJob {
        name: template.name.clone(),
        data: template.data.clone(),
        options: occurrence_options(key, &template.options, run, now),
    };
    let seq = reserve(conn, "seq", 1)?;
    // The id is the occurrence's own: no automatic id is taken.
    let job = ops::create(conn, env, &new, seq, &mut AutoIds::read(conn)?, now)?;
    if job.state == JobState::Waiting {
        set_meta(conn, "drained", None)?;
    }
    Ok(job)
}

pub fn upsert(
    conn: &Connection,
    env: &mut Env,
    key: &str,
    spec: ScheduleSpec,
    template: Template,
    now: Millis,
) -> CoreResult<Job> {
    scheduler::check(key, &spec, &template, now, env.max_payload_bytes)?;
    let existing = load(conn, key)?;
    let pending_id = existing.as_ref().map(|s| occurrence_id(key, s.next_run));
    let pending = match &pending_id {
        Some(id) => rows::state(conn, id)?,
        None => None,
    };
    let current = existing.as_ref().map(|s| Current {
        spec: &s.spec,
        template: &s.template,
        iteration_count: s.count,
        next_run: s.next_run,
        pending,
    });
    let (replace, number, from) =
        match scheduler::on_upsert(key, &spec, &template, current.as_ref(), now)? {
            OnUpsert::Keep => {
                let id = pending_id.expect("a kept scheduler has a pending occurrence");
                return rows::require(conn, &id);
            }
            OnUpsert::Produce {
                replace,
                number,
                from,
            } => (replace, number, from),
        };
    let replaced = pending_id.filter(|_| replace);
    let run = scheduler::place(&spec, key, from, number, now, |id| {
        Ok(replaced.as_deref() != Some(id) && exists(conn, id)?)
    })?
    .ok_or_else(|| scheduler::no_free_run(key, &spec))?;
    if let Some(id) = replaced {
        remove_occurrence(conn, env, &id, now)?;
    }
    let created = create_occurrence(conn, env, key, &template, run, now)?;
    save(
        conn,
        &Stored {
            key: key.to_owned(),
            spec,
            template,
            count: number,
            next_run: run,
        },
    )?;
    Ok(created)
}

/// After a claim started `job_id`, an occurrence of scheduler `key`: if it was the pending one,
/// produces the next, or removes the scheduler when the schedule has ended.
pub fn on_claim(
    conn: &Connection,
    env: &mut Env,
    key: &str,
    job_id: &str,
    now: Millis,
) -> CoreResult<()> {
    let Some(mut stored) = load(conn, key)? else {
        return Ok(());
    };
    let current = Some((&stored.spec, stored.count, stored.next_run));
    let placed = match scheduler::on_claim(job_id, key, current, now) {
        OnClaim::Ignore => return Ok(()),
        OnClaim::Finish => None,
        OnClaim::Advance { from, number } => {
            scheduler::place(&stored.spec, key, from, number, now, |id| exists(conn, id))?
                .map(|run| (run, number))
        }
    };
    let Some((run, number)) = placed else {
        delete(conn, key)?;
        return Ok(());
    };
    stored.count = number;
    stored.next_run = run;
    create_occurrence(conn, env, key, &stored.template, run, now)?;
    save(conn, &stored)
}

pub fn remove(conn: &Connection, env: &mut Env, key: &str, now: Millis) -> CoreResult<bool> {
    let Some(stored) = load(conn, key)? else {
        return Ok(false);
    };
    let pending = occurrence_id(key, stored.next_run);
    if scheduler::not_started(rows::state(conn, &pending)?) {
        remove_occurrence(conn, env, &pending, now)?;
    }
    delete(conn, key)
}

fn view(conn: &Connection, stored: Stored) -> CoreResult<JobScheduler> {
    let pending = occurrence_id(&stored.key, stored.next_run);
    let job_id = scheduler::not_started(rows::state(conn, &pending)?).then_some(pending);
    Ok(JobScheduler {
        key: stored.key,
        spec: stored.spec,
        template: stored.template,
        iteration_count: stored.count,
        next_run: stored.next_run,
        job_id,
    })
}

pub fn get(conn: &Connection, key: &str) -> CoreResult<Option<JobScheduler>> {
    load(conn, key)?.map(|s| view(conn, s)).transpose()
}

pub fn count(conn: &Connection) -> CoreResult<usize> {
    conn.prepare_cached("SELECT count(*) FROM schedulers")
        .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, i64>(0)))
        .map(|n| n.max(0) as usize)
        .map_err(sql)
}

/// Schedulers by next run time (then key), as `scheduler::page` orders and slices them.
pub fn list(
    conn: &Connection,
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<Vec<JobScheduler>> {
    let range = index_range(count(conn)?, start, end);
    if range.is_empty() {
        return Ok(Vec::new());
    }
    let order = if ascending {
        "next_run, key"
    } else {
        "next_run DESC, key DESC"
    };
    let page = {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM schedulers ORDER BY {order} LIMIT ?1 OFFSET ?2"
            ))
            .map_err(sql)?;
        let rows = stmt
            .query_map([range.len() as i64, range.start as i64], stored)
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)?
    };
    page.into_iter().map(|s| view(conn, s)).collect()
}

impl JobSchedulers for LocalBackend {
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        self.call(move |conn, env| upsert(conn, env, &key, spec, template, now))
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.direct(move |conn, _| get(conn, &key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.direct(move |conn, _| list(conn, start, end, ascending))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.direct(|conn, _| count(conn))
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| remove(conn, env, &key, now))
    }
}
