//! The plain SQL steps the other local files share, below `SqlStore`: the queue's settings and
//! gate as `meta` reads, when a claim could next return something, deleting a job (with the
//! dedup key and the flow dependencies it holds, and the note its parent hears of it by). The
//! transitions themselves are `lifecycle`'s, run on `SqlStore`.

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::lifecycle::{self, Gate};
use crate::jobs::model::{self, Job, JobState, Millis};

use super::env::Env;
use super::rows::{self, count, count_delta, load, meta, meta_number, sql};
use super::{dedup_keys, flow_deps};

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
    Ok(read_gate(conn)?.limited_until(now))
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
        super::group_rows::claimable_waiting(conn)?,
        window_end,
        maxed,
        earliest(
            next_delayed.map(|d| d as Millis),
            super::group_rows::next_rate_release(conn)?,
        ),
    ))
}

/// The earlier of two times, either may be absent (a delayed job's due time, the end of a
/// group's rate window).
fn earliest(a: Option<Millis>, b: Option<Millis>) -> Option<Millis> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The queue's gate, from the `meta` table.
pub fn read_gate(conn: &Connection) -> CoreResult<Gate> {
    let rate_limit = rate_limit(conn)?;
    let window = match rate_limit {
        Some(_) => (
            meta_number(conn, "rate_start")?.unwrap_or(0),
            meta_number(conn, "rate_count")?.unwrap_or(0),
        ),
        None => (0, 0),
    };
    Ok(Gate {
        paused: is_paused(conn)?,
        max_active: max_active(conn)?,
        rate_limit,
        window,
        until: meta_number(conn, "rate_until")?.unwrap_or(0),
    })
}

/// Before `job` is removed (remove, clean, drain): a child still pending for its parent
/// (`lifecycle::flows::removal_tells`) is noted, to leave its parent's dependencies when the
/// removal settles.
fn on_removal(env: &mut Env, job: &Job) {
    if let Some(parent) = lifecycle::flows::removal_tells(job) {
        env.flow_removed.push((parent.clone(), job.id.to_string()));
    }
}

/// Deletes a job (as `delete`) and the dedup key it holds, if any, and notes an unfinished
/// child for its parent (the caller then runs `job_storage::settle_removals`): what removals
/// other than retention do.
pub fn delete_releasing(
    conn: &Connection,
    env: &mut Env,
    id: &str,
) -> CoreResult<Option<JobState>> {
    dedup_keys::release(conn, id)?;
    if let Some(job) = load(conn, id)? {
        on_removal(env, &job);
    }
    delete(conn, id)
}

/// Deletes a job and its logs; returns its state if it existed. Its dedup key stays (retention
/// removes finished jobs, whose keys their finish already settled).
pub fn delete(conn: &Connection, id: &str) -> CoreResult<Option<JobState>> {
    let row: Option<(i64, Option<String>)> = conn
        .prepare_cached("DELETE FROM jobs WHERE id = ?1 RETURNING state, grp")
        .and_then(|mut stmt| {
            use rusqlite::OptionalExtension;
            stmt.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
        .map_err(sql)?;
    let Some((state, group)) = row else {
        return Ok(None);
    };
    let state = rows::state_of(state).map_err(sql)?;
    if let Some(group) = group {
        super::group_rows::moved(conn, &group, Some(state), None)?;
    }
    flow_deps::on_delete(conn, id)?;
    count_delta(conn, state, -1)?;
    conn.prepare_cached("DELETE FROM logs WHERE job_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map_err(sql)?;
    Ok(Some(state))
}
