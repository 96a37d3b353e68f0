//! The job transitions in SQL: adding, claiming, finishing, leases and stall recovery. They
//! mirror `MemoryStore` (the reference) step for step; the conformance suite holds both to it.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};
use crate::jobs::constants::{STACKTRACE_LIMIT, STALLED_REASON};
use crate::jobs::contract::FailOutcome;
use crate::jobs::contract::{Failure, NewJob};
use crate::jobs::flow::{ChildOutcome, ParentRef};
use crate::jobs::model::{self, FinishedResult, Job, JobState, Lock, Millis};
use crate::jobs::options::{check_payload, JobOptions, Retention};

use super::dedup;
use super::flows;
use super::rows::{
    self, code, count, count_delta, event, load, meta, meta_number, require, reserve, save,
    set_meta, sql, AutoIds,
};
use super::schedulers;

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

fn check_new(env: &Env, job: &NewJob) -> CoreResult<()> {
    job.options.validate()?;
    check_payload(&job.data, env.max_payload_bytes)
}

/// Moves `job` to `state` (updating the per-state counts) and writes it.
pub fn transition(conn: &Connection, job: &mut Job, state: JobState) -> CoreResult<()> {
    if job.state != state {
        count_delta(conn, job.state, -1)?;
        count_delta(conn, state, 1)?;
    }
    job.state = state;
    save(conn, job)
}

/// Puts `job` at the back (or front, or newest-first for LIFO) of its priority in waiting.
pub fn to_waiting(conn: &Connection, job: &mut Job, front: bool) -> CoreResult<()> {
    let seq = reserve(conn, "seq", 1)? as i64;
    job.order = if front || job.options.lifo { -seq } else { seq };
    job.lock = None;
    set_meta(conn, "drained", None)?;
    transition(conn, job, JobState::Waiting)
}

pub fn add(conn: &Connection, env: &mut Env, job: &NewJob, now: Millis) -> CoreResult<(Job, bool)> {
    check_new(env, job)?;
    add_bulk(conn, env, std::slice::from_ref(job), now).map(|mut added| added.remove(0))
}

pub fn add_bulk(
    conn: &Connection,
    env: &mut Env,
    jobs: &[NewJob],
    now: Millis,
) -> CoreResult<Vec<(Job, bool)>> {
    for (index, job) in jobs.iter().enumerate() {
        check_new(env, job).map_err(|e| match e {
            CoreError::InvalidConfig(m) => CoreError::InvalidConfig(format!("job #{index}: {m}")),
            other => other,
        })?;
    }
    // Sequence numbers are reserved once for the whole batch (a duplicate leaves a gap, which
    // is fine); automatic ids are taken only by the jobs created, as the memory store does.
    let mut auto_ids = AutoIds::read(conn)?;
    let first_seq = reserve(conn, "seq", jobs.len() as u64)?;
    let mut added = Vec::with_capacity(jobs.len());
    for (seq, job) in (first_seq..).zip(jobs) {
        added.push(insert(conn, env, job, seq, &mut auto_ids, now)?);
    }
    auto_ids.write(conn)?;
    if added
        .iter()
        .any(|(job, created)| *created && job.state == JobState::Waiting)
    {
        set_meta(conn, "drained", None)?;
    }
    Ok(added)
}

/// Adds a validated job: the existing one if its custom id is taken (`false`), the holder of
/// its dedup key if that is held (`false`), else a new one (`true`).
fn insert(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    if let Some(existing) = existing(conn, env, &new.options, now)? {
        return Ok((existing, false));
    }
    if new.options.dedup.is_some() {
        return dedup::add(conn, env, new, seq, auto_ids, now);
    }
    Ok((create(conn, env, new, seq, auto_ids, now)?, true))
}

/// The job that already has the custom id of `options`, if any (a `duplicated` event).
pub fn existing(
    conn: &Connection,
    env: &mut Env,
    options: &JobOptions,
    now: Millis,
) -> CoreResult<Option<Job>> {
    let Some(existing) = options
        .job_id
        .as_deref()
        .map(|id| load(conn, id))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    env.event(conn, now, "duplicated", Some(&existing.id), None)?;
    Ok(Some(existing))
}

/// Writes a new job (its checks done) and its events.
pub fn create(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    now: Millis,
) -> CoreResult<Job> {
    create_with(conn, env, new, seq, auto_ids, false, now)
}

/// `create`; with `hold`, the job waits for children (a flow's parent) before anything else,
/// its delay counting from its release.
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
    let order = if new.options.lifo {
        -(seq as i64)
    } else {
        seq as i64
    };
    let job = Job::added(
        Arc::from(id),
        Arc::from(new.name.as_str()),
        Arc::from(new.data.as_str()),
        new.options.clone(),
        (seq, order),
        hold,
        now,
    );
    save(conn, &job)?;
    count_delta(conn, job.state, 1)?;
    env.event(conn, now, "added", Some(id), Some(("name", &new.name)))?;
    if hold {
        env.event(conn, now, "waiting-children", Some(id), None)?;
    } else if job.state == JobState::Delayed {
        env.event(
            conn,
            now,
            "delayed",
            Some(id),
            Some(("delay", &job.delay_until.to_string())),
        )?;
    } else {
        env.event(conn, now, "waiting", Some(id), None)?;
    }
    Ok(job)
}

fn ids(conn: &Connection, query: &str, params: impl rusqlite::Params) -> CoreResult<Vec<String>> {
    let mut stmt = conn.prepare_cached(query).map_err(sql)?;
    let rows = stmt
        .query_map(params, |r| r.get::<_, String>(0))
        .map_err(sql)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
}

pub fn promote_due(conn: &Connection, env: &mut Env, now: Millis) -> CoreResult<()> {
    let due = ids(
        conn,
        "SELECT id FROM jobs WHERE state = 1 AND delay_until <= ?1 ORDER BY delay_until, seq",
        [now as i64],
    )?;
    for id in due {
        let mut job = require(conn, &id)?;
        to_waiting(conn, &mut job, false)?;
        env.event(conn, now, "waiting", Some(&id), Some(("prev", "delayed")))?;
    }
    Ok(())
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

/// When the manual rate-limit wait (`rate_limit`) ends; 0 for none.
fn rate_until(conn: &Connection) -> CoreResult<Millis> {
    Ok(meta_number(conn, "rate_until")?.unwrap_or(0))
}

/// Until when the rate limits hold claims back at `now` (`model::rate_limited_until`).
pub fn rate_limited_until(conn: &Connection, now: Millis) -> CoreResult<Option<Millis>> {
    let limit = rate_limit(conn)?;
    let (start, used) = match limit {
        Some(_) => (
            meta_number(conn, "rate_start")?.unwrap_or(0),
            meta_number(conn, "rate_count")?.unwrap_or(0),
        ),
        None => (0, 0),
    };
    let until = rate_until(conn)?;
    Ok(model::rate_limited_until(now, until, limit, start, used))
}

/// Holds every claim back for `duration` ms from `now` (`MemoryStore::rate_limit`).
pub fn set_rate_limit_wait(conn: &Connection, duration: Millis, now: Millis) -> CoreResult<()> {
    let end = model::rate_limit_end(duration, now)?;
    set_meta(conn, "rate_until", Some(&end.to_string()))
}

/// Ends the manual wait and the current window (`MemoryStore::remove_rate_limit_key`).
pub fn remove_rate_limit_key(conn: &Connection) -> CoreResult<()> {
    for key in ["rate_until", "rate_start", "rate_count"] {
        set_meta(conn, key, None)?;
    }
    Ok(())
}

/// How many jobs the rate limits let start now: none during a manual wait, else what is left
/// of the window (opening a new window if the last one ended).
fn rate_allowance(conn: &Connection, now: Millis) -> CoreResult<usize> {
    if now < rate_until(conn)? {
        return Ok(0);
    }
    let Some((max, duration)) = rate_limit(conn)? else {
        return Ok(usize::MAX);
    };
    let start = meta_number(conn, "rate_start")?.unwrap_or(0);
    if now >= start + duration {
        set_meta(conn, "rate_start", Some(&now.to_string()))?;
        set_meta(conn, "rate_count", Some("0"))?;
        return Ok(max as usize);
    }
    let used = meta_number(conn, "rate_count")?.unwrap_or(0) as u32;
    Ok(max.saturating_sub(used) as usize)
}

pub fn claim(
    conn: &Connection,
    env: &mut Env,
    worker: &str,
    lease: Millis,
    max_jobs: usize,
    now: Millis,
) -> CoreResult<Vec<Job>> {
    promote_due(conn, env, now)?;
    if is_paused(conn)? {
        return Ok(Vec::new());
    }
    let mut allowed = max_jobs.min(rate_allowance(conn, now)?);
    if let Some(max) = max_active(conn)? {
        allowed = allowed.min((max as usize).saturating_sub(count(conn, JobState::Active)?));
    }
    let picked = if allowed == 0 {
        Vec::new()
    } else {
        ids(
            conn,
            "SELECT id FROM jobs WHERE state = 0 ORDER BY priority, ord LIMIT ?1",
            [allowed as i64],
        )?
    };
    let mut claimed = Vec::with_capacity(picked.len());
    let first_seq = reserve(conn, "seq", picked.len() as u64)?;
    for (i, id) in picked.iter().enumerate() {
        let seq = first_seq + i as u64;
        let token = format!("{:016x}-{seq:x}", env.random(seq));
        let mut stmt = conn
            .prepare_cached(&format!(
                "UPDATE jobs SET state = 2, attempts_made = attempts_made + 1, processed_on = ?1, \
                 lock_token = ?2, lock_worker = ?3, lock_expires = ?4 WHERE id = ?5 RETURNING {}",
                rows::COLUMNS
            ))
            .map_err(sql)?;
        let job = stmt
            .query_row(
                rusqlite::params![now as i64, token, worker, (now + lease) as i64, id],
                rows::job,
            )
            .map_err(sql)?;
        env.event(conn, now, "active", Some(id), Some(("prev", "waiting")))?;
        claimed.push(job);
    }
    // Job schedulers whose pending occurrence started produce their next one (after the loop,
    // as the memory store does: a next occurrence due at once is not claimed by this claim).
    for job in &claimed {
        if let Some(key) = &job.options.scheduler {
            schedulers::on_claim(conn, env, key, &job.id, now)?;
        }
    }
    if !claimed.is_empty() {
        count_delta(conn, JobState::Waiting, -(claimed.len() as i64))?;
        count_delta(conn, JobState::Active, claimed.len() as i64)?;
        if rate_limit(conn)?.is_some() {
            let used = meta_number(conn, "rate_count")?.unwrap_or(0) + claimed.len() as u64;
            set_meta(conn, "rate_count", Some(&used.to_string()))?;
        }
    } else if count(conn, JobState::Waiting)? == 0 && meta(conn, "drained")?.is_none() {
        set_meta(conn, "drained", Some("1"))?;
        env.event(conn, now, "drained", None, None)?;
    }
    Ok(claimed)
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

/// The job, if `token` holds its live lock (the same checks and messages as the memory store).
pub fn locked(conn: &Connection, id: &str, token: &str, now: Millis) -> CoreResult<Job> {
    let job = require(conn, id)?;
    job.check_lock(token, now)?;
    Ok(job)
}

pub fn complete(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    token: &str,
    result: &str,
    now: Millis,
) -> CoreResult<()> {
    let job = locked(conn, id, token, now)?;
    conn.prepare_cached(
        "UPDATE jobs SET state = 4, finished_on = ?1, return_value = ?2, lock_token = NULL, \
         lock_worker = NULL, lock_expires = NULL WHERE id = ?3",
    )
    .and_then(|mut stmt| stmt.execute(rusqlite::params![now as i64, result, id]))
    .map_err(sql)?;
    count_delta(conn, JobState::Active, -1)?;
    count_delta(conn, JobState::Completed, 1)?;
    env.event(
        conn,
        now,
        "completed",
        Some(id),
        Some(("returnvalue", result)),
    )?;
    env.finished.push((
        id.to_owned(),
        FinishedResult::Completed(Some(Arc::from(result))),
    ));
    dedup::on_finish(conn, env, &job, now)?;
    flows::on_finish(
        conn,
        env,
        &job.options,
        id,
        ChildOutcome::Completed(result.to_owned()),
        now,
    )?;
    retain(
        conn,
        JobState::Completed,
        &job.options.remove_on_complete,
        id,
        now,
    )
}

pub fn fail(
    conn: &Connection,
    env: &mut Env,
    failure: &Failure,
    now: Millis,
) -> CoreResult<FailOutcome> {
    let mut job = locked(conn, &failure.id, &failure.token, now)?;
    job.failed_reason = Some(failure.error.clone());
    if let Some(trace) = &failure.stacktrace {
        job.stacktrace.push(trace.clone());
        let excess = job.stacktrace.len().saturating_sub(STACKTRACE_LIMIT);
        job.stacktrace.drain(..excess);
    }
    if failure.retry && job.attempts_made < job.options.attempts {
        let random = crate::jobs::jitter::random_unit();
        let wait = failure
            .delay
            .or_else(|| {
                job.options
                    .backoff
                    .as_ref()
                    .map(|b| b.delay_for(job.attempts_made, random))
            })
            .unwrap_or(0);
        if wait > 0 {
            job.delay_until = now + wait;
            job.lock = None;
            transition(conn, &mut job, JobState::Delayed)?;
            env.event(
                conn,
                now,
                "delayed",
                Some(&failure.id),
                Some(("delay", &(now + wait).to_string())),
            )?;
            return Ok(FailOutcome::Retry {
                delay_until: Some(now + wait),
            });
        }
        to_waiting(conn, &mut job, false)?;
        env.event(
            conn,
            now,
            "waiting",
            Some(&failure.id),
            Some(("prev", "failed")),
        )?;
        return Ok(FailOutcome::Retry { delay_until: None });
    }
    fail_for_good(conn, env, &mut job, &failure.error, now)?;
    Ok(FailOutcome::Failed)
}

pub fn fail_for_good(
    conn: &Connection,
    env: &mut Env,
    job: &mut Job,
    reason: &str,
    now: Millis,
) -> CoreResult<()> {
    job.finished_on = Some(now);
    job.failed_reason = Some(reason.to_owned());
    job.lock = None;
    transition(conn, job, JobState::Failed)?;
    env.event(
        conn,
        now,
        "failed",
        Some(&job.id),
        Some(("failedReason", reason)),
    )?;
    if job.attempts_made >= job.options.attempts {
        env.event(
            conn,
            now,
            "retries-exhausted",
            Some(&job.id),
            Some(("attemptsMade", &job.attempts_made.to_string())),
        )?;
    }
    env.finished.push((
        job.id.to_string(),
        FinishedResult::Failed(reason.to_owned()),
    ));
    dedup::on_finish(conn, env, job, now)?;
    let outcome = ChildOutcome::Failed {
        reason: reason.to_owned(),
        policy: job.options.parent_policy,
    };
    flows::on_finish(conn, env, &job.options, &job.id, outcome, now)?;
    retain(
        conn,
        JobState::Failed,
        &job.options.remove_on_fail,
        &job.id,
        now,
    )
}

pub fn renew(
    conn: &Connection,
    id: &str,
    token: &str,
    lease: Millis,
    now: Millis,
) -> CoreResult<()> {
    locked(conn, id, token, now)?;
    conn.prepare_cached("UPDATE jobs SET lock_expires = ?1 WHERE id = ?2")
        .and_then(|mut stmt| stmt.execute(rusqlite::params![(now + lease) as i64, id]))
        .map(|_| ())
        .map_err(sql)
}

pub fn move_to_delayed(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    token: &str,
    until: Millis,
    now: Millis,
) -> CoreResult<()> {
    let mut job = locked(conn, id, token, now)?;
    job.attempts_made = job.attempts_made.saturating_sub(1);
    job.delay_until = until.max(now);
    job.lock = None;
    transition(conn, &mut job, JobState::Delayed)?;
    env.event(
        conn,
        now,
        "delayed",
        Some(id),
        Some(("delay", &until.to_string())),
    )
}

pub fn release(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<()> {
    let mut job = locked(conn, id, token, now)?;
    job.attempts_made = job.attempts_made.saturating_sub(1);
    to_waiting(conn, &mut job, true)?;
    env.event(conn, now, "waiting", Some(id), Some(("prev", "active")))
}

pub fn recover_stalled(
    conn: &Connection,
    env: &mut Env,
    now: Millis,
) -> CoreResult<(Vec<String>, Vec<String>)> {
    let expired = ids(
        conn,
        "SELECT id FROM jobs WHERE state = 2 AND lock_expires <= ?1 ORDER BY lock_expires, seq",
        [now as i64],
    )?;
    let (mut recovered, mut failed) = (Vec::new(), Vec::new());
    for id in expired {
        let mut job = require(conn, &id)?;
        job.stalled_count += 1;
        job.attempts_made = job.attempts_made.saturating_sub(1);
        env.event(
            conn,
            now,
            "stalled",
            Some(&id),
            Some(("stalledCount", &job.stalled_count.to_string())),
        )?;
        if job.stalled_count > job.options.max_stalled_count {
            fail_for_good(conn, env, &mut job, STALLED_REASON, now)?;
            failed.push(id);
        } else {
            to_waiting(conn, &mut job, true)?;
            env.event(conn, now, "waiting", Some(&id), Some(("prev", "stalled")))?;
            recovered.push(id);
        }
    }
    Ok((recovered, failed))
}

pub fn holds_lock(conn: &Connection, id: &str, token: &str, now: Millis) -> CoreResult<bool> {
    Ok(load(conn, id)?
        .and_then(|j| j.lock)
        .is_some_and(|l: Lock| l.token == token && l.expires_at > now))
}

/// Applies a finished job's retention policy to its state.
fn retain(
    conn: &Connection,
    state: JobState,
    policy: &Retention,
    just_finished: &str,
    now: Millis,
) -> CoreResult<()> {
    let doomed = match policy {
        Retention::KeepAll => return Ok(()),
        Retention::RemoveAll => vec![just_finished.to_owned()],
        Retention::Keep {
            count: keep,
            age,
            limit,
        } => {
            let limit = limit.map_or(i64::MAX, |l| l as i64);
            let over = keep.map_or(0, |k| {
                count(conn, state).unwrap_or(0).saturating_sub(k as usize)
            });
            let mut doomed = ids(
                conn,
                "SELECT id FROM jobs WHERE state = ?1 ORDER BY finished_on, seq LIMIT ?2",
                rusqlite::params![code(state), (over as i64).min(limit)],
            )?;
            if let Some(age) = age {
                let older = ids(
                    conn,
                    "SELECT id FROM jobs WHERE state = ?1 AND finished_on < ?2 ORDER BY finished_on, seq LIMIT ?3",
                    rusqlite::params![code(state), now.saturating_sub(*age) as i64, limit],
                )?;
                for id in older {
                    if !doomed.contains(&id) {
                        doomed.push(id);
                    }
                }
            }
            doomed.truncate(limit.min(usize::MAX as i64) as usize);
            doomed
        }
    };
    for id in doomed {
        delete(conn, &id)?;
    }
    Ok(())
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
