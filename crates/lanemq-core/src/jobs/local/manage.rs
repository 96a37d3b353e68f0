//! Reading and managing a local queue (the SQL side of `jobs::manage`).

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::events::{event_name, field_name, StreamEvent, Text};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::check_payload;
use crate::jobs::paging::index_range;

use super::flows;
use super::ops::{is_paused, Env};
use super::rows::{self, code, count, load, require, set_meta, sql, COLUMNS};
use super::storage::SqlStore;
use crate::jobs::lifecycle;

pub fn order_of(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "priority, ord",
        JobState::Delayed => "delay_until, seq",
        JobState::Active => "lock_expires, seq",
        JobState::WaitingChildren => "seq",
        JobState::Completed | JobState::Failed => "finished_on, seq",
    }
}

fn descending(order: &str) -> String {
    order
        .split(", ")
        .map(|c| format!("{c} DESC"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn jobs(conn: &Connection, query: &str, params: impl rusqlite::Params) -> CoreResult<Vec<Job>> {
    let mut stmt = conn.prepare_cached(query).map_err(sql)?;
    let rows = stmt.query_map(params, rows::job).map_err(sql)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
}

pub fn get_job_counts(
    conn: &Connection,
    states: &[JobState],
) -> CoreResult<Vec<(JobState, usize)>> {
    let states: Vec<JobState> = if states.is_empty() {
        JobState::ALL.to_vec()
    } else {
        states.to_vec()
    };
    let mut seen: Vec<(JobState, usize)> = Vec::new();
    for state in states {
        if !seen.iter().any(|(s, _)| *s == state) {
            seen.push((state, count(conn, state)?));
        }
    }
    Ok(seen)
}

pub fn count_pending(conn: &Connection) -> CoreResult<usize> {
    Ok(count(conn, JobState::Waiting)?
        + count(conn, JobState::Delayed)?
        + count(conn, JobState::WaitingChildren)?)
}

pub fn counts_per_priority(conn: &Connection, priorities: &[u32]) -> CoreResult<Vec<(u32, usize)>> {
    let mut stmt = conn
        .prepare_cached("SELECT count(*) FROM jobs WHERE state = 0 AND priority = ?1")
        .map_err(sql)?;
    priorities
        .iter()
        .map(|&p| {
            stmt.query_row([p as i64], |r| r.get::<_, i64>(0))
                .map(|n| (p, n as usize))
                .map_err(sql)
        })
        .collect()
}

pub fn list_jobs(
    conn: &Connection,
    states: &[JobState],
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<Vec<Job>> {
    Ok(list_jobs_with_total(conn, states, start, end, ascending)?.0)
}

/// `list_jobs`, and how many jobs the page was cut from (in the writer's transaction, as
/// every operation: the counts and the page agree).
pub fn list_jobs_with_total(
    conn: &Connection,
    states: &[JobState],
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<(Vec<Job>, usize)> {
    let states: Vec<JobState> = if states.is_empty() {
        JobState::ALL.to_vec()
    } else {
        states.to_vec()
    };
    let mut total = 0usize;
    for state in &states {
        total += count(conn, *state)?;
    }
    let range = index_range(total, start, end);
    let (mut skip, mut take) = (range.start, range.len());
    let mut out = Vec::new();
    for state in states {
        if take == 0 {
            break;
        }
        let n = count(conn, state)?;
        if skip >= n {
            skip -= n;
            continue;
        }
        let order = if ascending {
            order_of(state).to_owned()
        } else {
            descending(order_of(state))
        };
        let page = jobs(
            conn,
            &format!(
                "SELECT {COLUMNS} FROM jobs WHERE state = ?1 ORDER BY {order} LIMIT ?2 OFFSET ?3"
            ),
            rusqlite::params![code(state), take as i64, skip as i64],
        )?;
        take -= page.len().min(take);
        skip = 0;
        out.extend(page);
    }
    Ok((out, total))
}

pub fn finished_result(conn: &Connection, id: &str) -> CoreResult<FinishedResult> {
    Ok(match load(conn, id)? {
        None => FinishedResult::Missing,
        Some(job) => match job.state {
            JobState::Completed => FinishedResult::Completed(job.return_value),
            JobState::Failed => FinishedResult::Failed(job.failed_reason.unwrap_or_default()),
            state => FinishedResult::NotFinished(state),
        },
    })
}

/// The outcome recorded in the event stream for a job that no longer exists (removed on
/// completion by another process), if the stream still holds it.
pub fn outcome_from_events(conn: &Connection, id: &str) -> CoreResult<FinishedResult> {
    let row: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT event, field_value FROM events WHERE job_id = ?1 AND event IN ('completed', 'failed') \
             ORDER BY id DESC LIMIT 1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    Ok(match row {
        Some((event, value)) if event == "completed" => {
            FinishedResult::Completed(value.map(Arc::from))
        }
        Some((_, value)) => FinishedResult::Failed(value.unwrap_or_default()),
        None => FinishedResult::Missing,
    })
}

pub fn promote(conn: &Connection, env: &mut Env, id: &str, now: Millis) -> CoreResult<()> {
    lifecycle::promote(&mut SqlStore::new(conn, env), id, now)
}

pub fn reschedule(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    until: Millis,
    now: Millis,
) -> CoreResult<()> {
    lifecycle::reschedule(&mut SqlStore::new(conn, env), id, until, now)
}

pub fn retry_job(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    reset_attempts: bool,
    now: Millis,
) -> CoreResult<()> {
    lifecycle::retry_job(&mut SqlStore::new(conn, env), id, reset_attempts, now)
}

pub fn update_priority(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    priority: u32,
    lifo: bool,
) -> CoreResult<()> {
    lifecycle::update_priority(&mut SqlStore::new(conn, env), id, priority, lifo)
}

pub fn update_data(conn: &Connection, env: &Env, id: &str, data: &str) -> CoreResult<()> {
    check_payload(data, env.max_payload_bytes)?;
    require(conn, id)?;
    conn.execute("UPDATE jobs SET data = ?1 WHERE id = ?2", (data, id))
        .map(|_| ())
        .map_err(sql)
}

pub fn update_progress(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    progress: &str,
    now: Millis,
) -> CoreResult<()> {
    require(conn, id)?;
    conn.execute(
        "UPDATE jobs SET progress = ?1 WHERE id = ?2",
        (progress, id),
    )
    .map_err(sql)?;
    env.event(conn, now, "progress", Some(id), Some(("data", progress)))
}

/// Appends a line as number `max(n) + 1` of the job's log and returns that number.
const APPEND_LOG: &str = "INSERT INTO logs (job_id, n, line) VALUES \
     (?1, (SELECT COALESCE(max(n), 0) + 1 FROM logs WHERE job_id = ?1), ?2) RETURNING n";
/// The oldest line kept.
const FIRST_LOG: &str = "SELECT min(n) FROM logs WHERE job_id = ?1";
/// Drops the lines older than the newest `?2` (`?3` is the newest's number).
const TRIM_LOGS: &str = "DELETE FROM logs WHERE job_id = ?1 AND n <= ?3 - ?2";

/// Appends `line` to job `id`'s log (keeping the newest `keep` lines when `keep` > 0) and
/// returns how many lines it holds. In O(log n) of the log's length: a job's lines are always
/// numbered without gaps (appends take the next number, trims and clears drop the oldest), so
/// the count is the newest number minus the oldest, each one seek of the primary key.
pub fn add_log(conn: &Connection, id: &str, line: &str, keep: usize) -> CoreResult<usize> {
    require(conn, id)?;
    let newest: i64 = conn
        .prepare_cached(APPEND_LOG)
        .and_then(|mut stmt| stmt.query_row((id, line), |r| r.get(0)))
        .map_err(sql)?;
    if keep > 0 {
        trim_logs_below(conn, id, keep, newest)?;
    }
    let oldest: i64 = conn
        .prepare_cached(FIRST_LOG)
        .and_then(|mut stmt| stmt.query_row([id], |r| r.get(0)))
        .map_err(sql)?;
    Ok((newest - oldest + 1).max(0) as usize)
}

fn trim_logs_below(conn: &Connection, id: &str, keep: usize, newest: i64) -> CoreResult<()> {
    conn.prepare_cached(TRIM_LOGS)
        .and_then(|mut stmt| stmt.execute(rusqlite::params![id, keep as i64, newest]))
        .map(|_| ())
        .map_err(sql)
}

fn trim_logs(conn: &Connection, id: &str, keep: usize) -> CoreResult<()> {
    let newest: Option<i64> = conn
        .query_row("SELECT max(n) FROM logs WHERE job_id = ?1", [id], |r| {
            r.get(0)
        })
        .map_err(sql)?;
    match newest {
        Some(newest) => trim_logs_below(conn, id, keep, newest),
        None => Ok(()),
    }
}

pub fn get_logs(
    conn: &Connection,
    id: &str,
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<(Vec<String>, usize)> {
    require(conn, id)?;
    let mut stmt = conn
        .prepare_cached("SELECT line FROM logs WHERE job_id = ?1 ORDER BY n")
        .map_err(sql)?;
    let mut lines = stmt
        .query_map([id], |r| r.get::<_, String>(0))
        .map_err(sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql)?;
    if !ascending {
        lines.reverse();
    }
    let page = lines[index_range(lines.len(), start, end)].to_vec();
    Ok((page, lines.len()))
}

pub fn clear_logs(conn: &Connection, id: &str, keep: usize) -> CoreResult<()> {
    require(conn, id)?;
    if keep == 0 {
        conn.execute("DELETE FROM logs WHERE job_id = ?1", [id])
            .map(|_| ())
            .map_err(sql)
    } else {
        trim_logs(conn, id, keep)
    }
}

pub fn save_stacktrace(
    conn: &Connection,
    id: &str,
    lines: Vec<String>,
    reason: Option<&str>,
) -> CoreResult<()> {
    let mut job = require(conn, id)?;
    job.stacktrace = lines;
    if let Some(reason) = reason {
        job.failed_reason = Some(reason.to_owned());
    }
    rows::save(conn, &job)
}

pub fn remove(conn: &Connection, env: &mut Env, id: &str, now: Millis) -> CoreResult<()> {
    lifecycle::remove(&mut SqlStore::new(conn, env), id, now)
}

pub fn set_paused(conn: &Connection, env: &mut Env, paused: bool, now: Millis) -> CoreResult<()> {
    if is_paused(conn)? != paused {
        set_meta(conn, "paused", paused.then_some("1"))?;
        env.event(
            conn,
            now,
            if paused { "paused" } else { "resumed" },
            None,
            None,
        )?;
    }
    Ok(())
}

pub fn drain(conn: &Connection, env: &mut Env, delayed: bool, now: Millis) -> CoreResult<usize> {
    lifecycle::drain(&mut SqlStore::new(conn, env), delayed, now)
}

pub fn clean(
    conn: &Connection,
    env: &mut Env,
    grace: Millis,
    limit: usize,
    state: JobState,
    now: Millis,
) -> CoreResult<Vec<String>> {
    lifecycle::clean(&mut SqlStore::new(conn, env), grace, limit, state, now)
}

/// Pauses, then deletes everything unless jobs are active and not `force`: then the refusal is
/// returned as `Ok(Err(...))`, so the pause is committed while the caller gets the error.
pub fn obliterate(
    conn: &Connection,
    env: &mut Env,
    force: bool,
    now: Millis,
) -> CoreResult<Result<(), String>> {
    set_paused(conn, env, true, now)?;
    let active = count(conn, JobState::Active)?;
    if !force && active > 0 {
        return Ok(Err(format!(
            "cannot obliterate a queue with {active} active jobs (use force=True)"
        )));
    }
    flows::on_obliterate(conn, env, now)?;
    let ids: Vec<String> = conn
        .prepare_cached("SELECT id FROM jobs")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<_>>()
        })
        .map_err(sql)?;
    for id in ids {
        env.finished.push((id, FinishedResult::Missing));
    }
    flows::clear(conn)?;
    conn.execute_batch(
        "DELETE FROM jobs; DELETE FROM logs; DELETE FROM events; DELETE FROM dedup; \
         DELETE FROM schedulers; \
         DELETE FROM metric_series; DELETE FROM metric_minutes; DELETE FROM workers; \
         UPDATE counts SET n = 0; \
         DELETE FROM meta WHERE key IN ('paused', 'rate_max', 'rate_duration', 'rate_start', \
         'rate_count', 'rate_until', 'max_active', 'drained', 'next_auto_id'); \
         DELETE FROM sqlite_sequence WHERE name = 'events';",
    )
    .map_err(sql)?;
    Ok(Ok(()))
}

pub fn read_events(
    conn: &Connection,
    start: u64,
    end: u64,
    limit: usize,
) -> CoreResult<Vec<StreamEvent>> {
    let limit = if limit == 0 { i64::MAX } else { limit as i64 };
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, ts, event, job_id, field_key, field_value, extra_key, extra_value \
             FROM events WHERE id >= ?1 AND id <= ?2 ORDER BY id LIMIT ?3",
        )
        .map_err(sql)?;
    let rows = stmt
        .query_map(
            rusqlite::params![
                start.min(i64::MAX as u64) as i64,
                end.min(i64::MAX as u64) as i64,
                limit
            ],
            |r| {
                let key: Option<String> = r.get(4)?;
                let value: Option<String> = r.get(5)?;
                let extra_key: Option<String> = r.get(6)?;
                let extra_value: Option<String> = r.get(7)?;
                Ok(StreamEvent {
                    id: r.get::<_, i64>(0)? as u64,
                    timestamp: r.get::<_, i64>(1)? as u64,
                    event: event_name(&r.get::<_, String>(2)?),
                    job_id: r.get::<_, Option<String>>(3)?.map(Arc::from),
                    field: key.map(|k| (field_name(&k), Text::Owned(value.unwrap_or_default()))),
                    extra: extra_key.map(|k| {
                        Box::new((field_name(&k), Text::Owned(extra_value.unwrap_or_default())))
                    }),
                })
            },
        )
        .map_err(sql)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
}

pub fn last_event_id(conn: &Connection) -> CoreResult<u64> {
    let last: Option<i64> = conn
        .query_row(
            "SELECT seq FROM sqlite_sequence WHERE name = 'events'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?;
    Ok(last.unwrap_or(0).max(0) as u64)
}

pub fn trim_events(conn: &Connection, max_len: usize) -> CoreResult<usize> {
    let last = last_event_id(conn)? as i64;
    conn.execute("DELETE FROM events WHERE id <= ?1", [last - max_len as i64])
        .map_err(sql)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::jobs::contract::NewJob;
    use crate::jobs::options::JobOptions;

    /// SQLite VM instructions `f` runs on `conn`: a measure of its work that no load on the
    /// machine moves.
    fn vm_steps<T>(conn: &mut Connection, f: impl FnOnce(&Connection) -> T) -> (T, u64) {
        let steps = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&steps);
        conn.progress_handler(
            1,
            Some(move || {
                counter.fetch_add(1, Ordering::Relaxed);
                false
            }),
        )
        .unwrap();
        let out = f(conn);
        conn.progress_handler(1, None::<fn() -> bool>).unwrap();
        (out, steps.load(Ordering::Relaxed))
    }

    #[test]
    fn a_log_append_costs_the_same_whatever_the_length_of_the_log() {
        let path = std::env::temp_dir().join(format!(
            "lanemq-logs-{}-{:?}.sqlite3",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let mut conn = super::super::schema::open(&path, "q").unwrap();
        let mut env = Env::new("q", 1 << 20, 100);
        let new = NewJob {
            name: "n".into(),
            data: "null".into(),
            options: JobOptions::default(),
        };
        let (job, _) = super::super::ops::add(&conn, &mut env, new, 1).unwrap();
        let append = |conn: &mut Connection, keep: usize| {
            vm_steps(conn, |conn| add_log(conn, &job.id, "a line", keep).unwrap())
        };
        conn.execute_batch("BEGIN").unwrap();
        for _ in 1..1_000 {
            add_log(&conn, &job.id, "a line", 0).unwrap();
        }
        let (count, early) = append(&mut conn, 0);
        assert_eq!(count, 1_000);
        for _ in 1_001..40_000 {
            add_log(&conn, &job.id, "a line", 0).unwrap();
        }
        let (count, late) = append(&mut conn, 0);
        assert_eq!(count, 40_000);
        assert_eq!(
            late, early,
            "the 40,000th append took {late} VM steps, the 1,000th {early}"
        );
        // Trimmed to the newest lines, the count still follows them.
        let ((count, _), (again, _)) = (append(&mut conn, 10), append(&mut conn, 10));
        assert_eq!((count, again), (10, 10));
        clear_logs(&conn, &job.id, 0).unwrap();
        assert_eq!(append(&mut conn, 0).0, 1, "a cleared log starts again");
        conn.execute_batch("COMMIT").unwrap();
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
