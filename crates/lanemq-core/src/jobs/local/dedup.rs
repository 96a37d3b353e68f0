//! The local backend's dedup keys: the `dedup` table as the `DedupTable` that
//! `lifecycle::dedup` writes (its plain SQL is `dedup_keys.rs`), a flow's add of a job with
//! dedup options, and `JobDedup` for `LocalBackend`.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::{BoxFuture, JobDedup, NewJob};
use crate::jobs::lifecycle::{self, DedupKey, DedupTable};
use crate::jobs::model::{FinishedResult, Job, Millis};
use crate::jobs::options::JobOptions;

use super::dedup_keys::{delete_key, read_key};
use super::env::Env;
use super::rows::{sql, AutoIds};
use super::storage::SqlStore;
use super::LocalBackend;

fn storage_error(error: serde_json::Error) -> CoreError {
    CoreError::Storage(error.to_string())
}

impl DedupTable for SqlStore<'_> {
    fn dedup_key(&self, id: &str) -> CoreResult<Option<DedupKey>> {
        read_key(self.conn, id)
    }

    fn set_dedup_key(
        &mut self,
        id: &str,
        owner: &Arc<str>,
        expires_at: Option<Millis>,
    ) -> CoreResult<()> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO dedup (id, job_id, expires_at) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    id,
                    &**owner,
                    expires_at.map(|v| v as i64)
                ])
            })
            .map(|_| ())
            .map_err(sql)
    }

    /// One statement either way: the expiry alone, or with the next job.
    fn extend_dedup_key(
        &mut self,
        id: &str,
        expires_at: Option<Millis>,
        next: Option<NewJob>,
    ) -> CoreResult<()> {
        let expires_at = expires_at.map(|v| v as i64);
        let done = match next {
            Some(next) => {
                let options = serde_json::to_string(&next.options).map_err(storage_error)?;
                self.conn
                    .prepare_cached(
                        "UPDATE dedup SET expires_at = ?1, next_name = ?2, next_data = ?3, \
                         next_options = ?4 WHERE id = ?5",
                    )
                    .and_then(|mut stmt| {
                        stmt.execute(rusqlite::params![
                            expires_at, next.name, next.data, options, id
                        ])
                    })
            }
            None => self
                .conn
                .prepare_cached("UPDATE dedup SET expires_at = ?1 WHERE id = ?2")
                .and_then(|mut stmt| stmt.execute(rusqlite::params![expires_at, id])),
        };
        done.map(|_| ()).map_err(sql)
    }

    fn take_next_job(&mut self, id: &str) -> CoreResult<Option<NewJob>> {
        let next: Option<(Option<String>, Option<String>, Option<String>)> = self
            .conn
            .prepare_cached("SELECT next_name, next_data, next_options FROM dedup WHERE id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .optional()
            })
            .map_err(sql)?;
        delete_key(self.conn, id)?;
        let Some((Some(name), Some(data), Some(options))) = next else {
            return Ok(None);
        };
        let options: JobOptions = serde_json::from_str(&options).map_err(storage_error)?;
        Ok(Some(NewJob {
            name,
            data,
            options,
        }))
    }

    fn next_job_id(&self, id: &str) -> CoreResult<Option<String>> {
        let options: Option<Option<String>> = self
            .conn
            .prepare_cached("SELECT next_options FROM dedup WHERE id = ?1")
            .and_then(|mut stmt| stmt.query_row([id], |r| r.get(0)).optional())
            .map_err(sql)?;
        let Some(options) = options.flatten() else {
            return Ok(None);
        };
        let options: JobOptions = serde_json::from_str(&options).map_err(storage_error)?;
        Ok(options.job_id)
    }

    fn delete_dedup_key(&mut self, id: &str) -> CoreResult<()> {
        delete_key(self.conn, id)
    }

    fn purge_dedup_keys(&mut self, now: Millis) -> CoreResult<()> {
        self.conn
            .prepare_cached("DELETE FROM dedup WHERE expires_at <= ?1 AND next_name IS NULL")
            .and_then(|mut stmt| stmt.execute([now as i64]))
            .map(|_| ())
            .map_err(sql)
    }

    fn note_replaced(&mut self, id: &Arc<str>) -> CoreResult<()> {
        self.env
            .finished
            .push((id.to_string(), FinishedResult::Missing));
        Ok(())
    }
}

/// A flow's add of a job with dedup options (`lifecycle::dedup::add`), automatic ids taken
/// from the flow's `auto_ids`; with `hold`, a job created waits for children.
pub fn add_with(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    hold: bool,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    let mut store = SqlStore::lending(conn, env, auto_ids);
    lifecycle::dedup::add(&mut store, new.clone(), seq, hold, now)
}

impl JobDedup for LocalBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.direct(move |conn, env| {
            lifecycle::dedup::holder(&SqlStore::new(conn, env), &dedup_id, now)
        })
    }

    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>> {
        self.direct(move |conn, env| {
            lifecycle::dedup::ttl(&SqlStore::new(conn, env), &dedup_id, now)
        })
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| {
            lifecycle::dedup::remove_key(&mut SqlStore::new(conn, env), &dedup_id, now)
        })
    }
}
