//! The writer thread's `Env`, and the SQL steps the other local files share: creating a job
//! (`lifecycle::create_as` on the file, for dedup, flows, the relay and job schedulers), the
//! queue's settings as `meta` reads, when a claim could next return something, a job under its
//! lock, deleting a job. The transitions themselves are `lifecycle`'s, run on `SqlStore`.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle;
use crate::jobs::model::{self, FinishedResult, Job, JobState, Millis};

use super::dedup;
use super::flows;
use super::rows::{self, count, count_delta, event, load, meta, meta_number, sql, AutoIds};
use super::storage::SqlStore;

/// What the writer thread keeps between operations, and what an operation reports back.
pub struct Env {
    /// The name of the file's one queue (flows name jobs `<queue>:<id>`).
    pub queue: String,
    pub max_events: usize,
    pub max_payload_bytes: usize,
    random: RandomState,
    /// Jobs that finished or disappeared in this batch, for in-process `wait_finished` callers.
    pub finished: Vec<(String, FinishedResult)>,
    /// Set by `close`: the writer stops after committing the current batch.
    pub closing: bool,
    /// Unfinished children removed by this operation, with their parents: their parents hear
    /// of it once the removal's events are written (`flows::settle_removals`).
    pub flow_removed: Vec<(ParentRef, String)>,
    /// The directory of this queue's file when it is `<dir>/<queue>.sqlite3`: other queues'
    /// files are beside it, so flows may span them (`relay`).
    pub dir: Option<PathBuf>,
    /// Connections to other queues' files, opened once (`relay::with_link`).
    pub links: HashMap<String, Connection>,
    /// Set when a message was written to the outbox: delivered after the commit.
    pub outbox_pending: bool,
    /// How this file's own connection syncs its commits (`relay` makes messages durable
    /// before delivering them when that is `Normal`).
    pub sync: super::sync::LocalSync,
}

impl Env {
    pub fn new(queue: &str, max_payload_bytes: usize, max_events: usize) -> Self {
        Self {
            queue: queue.to_owned(),
            max_events,
            max_payload_bytes,
            random: RandomState::new(),
            finished: Vec::new(),
            closing: false,
            flow_removed: Vec::new(),
            dir: None,
            links: HashMap::new(),
            outbox_pending: false,
            sync: super::sync::LocalSync::Full,
        }
    }

    pub fn random(&self, seed: u64) -> u64 {
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(seed);
        hasher.finish()
    }

    pub fn event(
        &self,
        conn: &Connection,
        now: Millis,
        name: &str,
        job: Option<&str>,
        field: Option<(&str, &str)>,
    ) -> CoreResult<()> {
        event(conn, self.max_events, now, name, job, [field, None])
    }

    /// Like `event`, with a second field.
    pub fn event_fields(
        &self,
        conn: &Connection,
        now: Millis,
        name: &str,
        job: Option<&str>,
        fields: [Option<(&str, &str)>; 2],
    ) -> CoreResult<()> {
        event(conn, self.max_events, now, name, job, fields)
    }
}

/// Writes a new job (its checks done) and its events; with `hold`, the job waits for children
/// (a flow's parent) before anything else, its delay counting from its release.
pub fn create_with(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    hold: bool,
    now: Millis,
) -> CoreResult<Job> {
    let id = match &new.options.job_id {
        Some(id) => id.clone(),
        None => auto_ids.take().to_string(),
    };
    create_as(conn, env, new, &id, seq, hold, now)
}

/// `create_with` under the id `id` (a flow's job whose id its parent's queue reserved here).
pub fn create_as(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    id: &str,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<Job> {
    let mut store = SqlStore::new(conn, env);
    lifecycle::create_as(&mut store, new.clone(), Arc::from(id), seq, hold, now)
}

pub fn is_paused(conn: &Connection) -> CoreResult<bool> {
    Ok(meta(conn, "paused")?.as_deref() == Some("1"))
}

pub fn max_active(conn: &Connection) -> CoreResult<Option<u32>> {
    Ok(meta_number(conn, "max_active")?.map(|v| v as u32))
}

pub fn rate_limit(conn: &Connection) -> CoreResult<Option<(u32, Millis)>> {
    Ok(
        match (
            meta_number(conn, "rate_max")?,
            meta_number(conn, "rate_duration")?,
        ) {
            (Some(max), Some(duration)) => Some((max as u32, duration)),
            _ => None,
        },
    )
}

/// Until when the rate limits hold claims back at `now` (`model::rate_limited_until`).
pub fn rate_limited_until(conn: &Connection, now: Millis) -> CoreResult<Option<Millis>> {
    Ok(super::storage::read_gate(conn)?.limited_until(now))
}

/// When a claim could next return something (see `MemoryStore::next_ready_at`).
pub fn next_ready_at(conn: &Connection, now: Millis) -> CoreResult<Option<Millis>> {
    let next_delayed: Option<i64> = conn
        .query_row(
            "SELECT min(delay_until) FROM jobs WHERE state = 1",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let window_end = rate_limited_until(conn, now)?;
    let active = count(conn, JobState::Active)?;
    let maxed = max_active(conn)?.is_some_and(|max| active >= max as usize);
    Ok(model::next_ready_at(
        now,
        is_paused(conn)?,
        count(conn, JobState::Waiting)? > 0,
        window_end,
        maxed,
        next_delayed.map(|d| d as Millis),
    ))
}

/// Deletes a job (as `delete`) and the dedup key it holds, if any, and notes an unfinished
/// child for its parent (the caller then runs `flows::settle_removals`): what removals other
/// than retention do.
pub fn delete_releasing(
    conn: &Connection,
    env: &mut Env,
    id: &str,
) -> CoreResult<Option<JobState>> {
    dedup::release(conn, id)?;
    if let Some(job) = load(conn, id)? {
        flows::on_removal(env, &job);
    }
    delete(conn, id)
}

/// Deletes a job and its logs; returns its state if it existed. Its dedup key stays (retention
/// removes finished jobs, whose keys their finish already settled).
pub fn delete(conn: &Connection, id: &str) -> CoreResult<Option<JobState>> {
    let state: Option<i64> = conn
        .prepare_cached("DELETE FROM jobs WHERE id = ?1 RETURNING state")
        .and_then(|mut stmt| {
            use rusqlite::OptionalExtension;
            stmt.query_row([id], |r| r.get(0)).optional()
        })
        .map_err(sql)?;
    let Some(state) = state else { return Ok(None) };
    let state = rows::state_of(state).map_err(sql)?;
    flows::on_delete(conn, id)?;
    count_delta(conn, state, -1)?;
    conn.prepare_cached("DELETE FROM logs WHERE job_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map_err(sql)?;
    Ok(Some(state))
}
