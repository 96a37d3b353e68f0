//! Jobs as rows, and the small pieces of SQL every operation shares: state codes and the order
//! of each state's index, counters, per-state counts, the event stream.

use std::sync::{Arc, LazyLock};

use rusqlite::{Connection, OptionalExtension, Row};

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::{Job, JobState, Lock, Millis};
use crate::jobs::options::JobOptions;

pub const COLUMNS: &str = "id, seq, name, data, options, state, priority, ord, created_at, \
    delay_until, processed_on, finished_on, attempts_made, stalled_count, progress, return_value, \
    failed_reason, stacktrace, lock_token, lock_worker, lock_expires, grp";

pub fn code(state: JobState) -> i64 {
    match state {
        JobState::Waiting => 0,
        JobState::Delayed => 1,
        JobState::Active => 2,
        JobState::WaitingChildren => 3,
        JobState::Completed => 4,
        JobState::Failed => 5,
    }
}

/// The order of a state's jobs, as its index sorts them (`ManageStorage::page`,
/// `JobStorage::cleanable`).
pub fn order_of(state: JobState) -> &'static str {
    match state {
        JobState::Waiting => "(grp IS NOT NULL), priority, ord",
        JobState::Delayed => "delay_until, seq",
        JobState::Active => "lock_expires, seq",
        JobState::WaitingChildren => "seq",
        JobState::Completed | JobState::Failed => "finished_on, seq",
    }
}

pub fn state_of(code: i64) -> rusqlite::Result<JobState> {
    JobState::ALL
        .get(code as usize)
        .copied()
        .ok_or_else(|| rusqlite::Error::IntegralValueOutOfRange(5, code))
}

pub fn sql(error: rusqlite::Error) -> CoreError {
    CoreError::Storage(format!("sqlite: {error}"))
}

fn json_error(error: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(error))
}

/// Reads a job from a row selected with `COLUMNS`.
pub fn job(row: &Row<'_>) -> rusqlite::Result<Job> {
    let options: String = row.get(4)?;
    let options: JobOptions = serde_json::from_str(&options).map_err(json_error)?;
    let stacktrace: String = row.get(17)?;
    let stacktrace: Vec<String> = serde_json::from_str(&stacktrace).map_err(json_error)?;
    let token: Option<String> = row.get(18)?;
    let worker: Option<String> = row.get(19)?;
    // A token without a worker is no lock: the last report's (`Job::reported_by`).
    let (lock, reported_by) = match (token, worker) {
        (Some(token), Some(worker)) => (
            Some(Lock {
                token,
                worker_id: Arc::from(worker),
                expires_at: row.get::<_, Option<i64>>(20)?.unwrap_or(0) as Millis,
            }),
            None,
        ),
        (token, _) => (None, token),
    };
    let text = |i: usize| -> rusqlite::Result<Arc<str>> { Ok(Arc::from(row.get::<_, String>(i)?)) };
    Ok(Job {
        id: text(0)?,
        seq: row.get::<_, i64>(1)? as u64,
        name: text(2)?,
        data: text(3)?,
        options,
        state: state_of(row.get(5)?)?,
        priority: row.get::<_, i64>(6)? as u32,
        order: row.get(7)?,
        created_at: row.get::<_, i64>(8)? as Millis,
        delay_until: row.get::<_, i64>(9)? as Millis,
        processed_on: row.get::<_, Option<i64>>(10)?.map(|v| v as Millis),
        finished_on: row.get::<_, Option<i64>>(11)?.map(|v| v as Millis),
        attempts_made: row.get::<_, i64>(12)? as u32,
        stalled_count: row.get::<_, i64>(13)? as u32,
        progress: text(14)?,
        return_value: row.get::<_, Option<String>>(15)?.map(Arc::from),
        failed_reason: row.get(16)?,
        stacktrace,
        logs: Vec::new(),
        lock,
        reported_by,
    })
}

/// `SELECT <COLUMNS> FROM jobs WHERE id = ?1`, built once.
static LOAD: LazyLock<String> =
    LazyLock::new(|| format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"));
static SAVE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT OR REPLACE INTO jobs ({COLUMNS}) VALUES \
         (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)"
    )
});

pub fn load(conn: &Connection, id: &str) -> CoreResult<Option<Job>> {
    conn.prepare_cached(&LOAD)
        .and_then(|mut stmt| stmt.query_row([id], job).optional())
        .map_err(sql)
}

pub fn require(conn: &Connection, id: &str) -> CoreResult<Job> {
    load(conn, id)?.ok_or_else(|| CoreError::JobNotFound(id.to_owned()))
}

/// Writes every column of `job` (insert or replace).
pub fn save(conn: &Connection, job: &Job) -> CoreResult<()> {
    let options =
        serde_json::to_string(&job.options).map_err(|e| CoreError::Storage(e.to_string()))?;
    let stacktrace =
        serde_json::to_string(&job.stacktrace).map_err(|e| CoreError::Storage(e.to_string()))?;
    let lock = job.lock.as_ref();
    conn.prepare_cached(&SAVE)
        .and_then(|mut stmt| {
            stmt.execute(rusqlite::params![
                &*job.id,
                job.seq as i64,
                &*job.name,
                &*job.data,
                options,
                code(job.state),
                job.priority as i64,
                job.order,
                job.created_at as i64,
                job.delay_until as i64,
                job.processed_on.map(|v| v as i64),
                job.finished_on.map(|v| v as i64),
                job.attempts_made as i64,
                job.stalled_count as i64,
                &*job.progress,
                job.return_value.as_deref(),
                job.failed_reason.as_deref(),
                stacktrace,
                lock.map_or(job.reported_by.as_deref(), |l| Some(l.token.as_str())),
                lock.map(|l| &*l.worker_id),
                lock.map(|l| l.expires_at as i64),
                job.options.group.as_deref(),
            ])
        })
        .map(|_| ())
        .map_err(sql)
}

/// Writes what a transition changes of an existing job: every column but its id, sequence,
/// name, data, options and creation time (`save` writes those too).
pub fn save_lifecycle(conn: &Connection, job: &Job) -> CoreResult<()> {
    let stacktrace = if job.stacktrace.is_empty() {
        "[]".to_owned()
    } else {
        serde_json::to_string(&job.stacktrace).map_err(|e| CoreError::Storage(e.to_string()))?
    };
    let lock = job.lock.as_ref();
    conn.prepare_cached(
        "UPDATE jobs SET state = ?2, priority = ?3, ord = ?4, delay_until = ?5, \
         processed_on = ?6, finished_on = ?7, attempts_made = ?8, stalled_count = ?9, \
         progress = ?10, return_value = ?11, failed_reason = ?12, stacktrace = ?13, \
         lock_token = ?14, lock_worker = ?15, lock_expires = ?16 WHERE id = ?1",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            &*job.id,
            code(job.state),
            job.priority as i64,
            job.order,
            job.delay_until as i64,
            job.processed_on.map(|v| v as i64),
            job.finished_on.map(|v| v as i64),
            job.attempts_made as i64,
            job.stalled_count as i64,
            &*job.progress,
            job.return_value.as_deref(),
            job.failed_reason.as_deref(),
            stacktrace,
            lock.map_or(job.reported_by.as_deref(), |l| Some(l.token.as_str())),
            lock.map(|l| &*l.worker_id),
            lock.map(|l| l.expires_at as i64),
        ])
    })
    .map(|_| ())
    .map_err(sql)
}

/// Adds `delta` to the count of jobs in `state`.
pub fn count_delta(conn: &Connection, state: JobState, delta: i64) -> CoreResult<()> {
    conn.prepare_cached("UPDATE counts SET n = n + ?1 WHERE state = ?2")
        .and_then(|mut stmt| stmt.execute((delta, code(state))))
        .map(|_| ())
        .map_err(sql)
}

pub fn count(conn: &Connection, state: JobState) -> CoreResult<usize> {
    conn.prepare_cached("SELECT n FROM counts WHERE state = ?1")
        .and_then(|mut stmt| stmt.query_row([code(state)], |r| r.get::<_, i64>(0)))
        .map(|n| n.max(0) as usize)
        .map_err(sql)
}

pub fn meta(conn: &Connection, key: &str) -> CoreResult<Option<String>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")
        .and_then(|mut stmt| stmt.query_row([key], |r| r.get(0)).optional())
        .map_err(sql)
}

pub fn set_meta(conn: &Connection, key: &str, value: Option<&str>) -> CoreResult<()> {
    let result = match value {
        Some(value) => conn
            .prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")
            .and_then(|mut stmt| stmt.execute((key, value))),
        None => conn
            .prepare_cached("DELETE FROM meta WHERE key = ?1")
            .and_then(|mut stmt| stmt.execute([key])),
    };
    result.map(|_| ()).map_err(sql)
}

pub fn meta_number(conn: &Connection, key: &str) -> CoreResult<Option<u64>> {
    Ok(meta(conn, key)?.and_then(|v| v.parse().ok()))
}

/// Reserves `n` consecutive values of the counter `key`; returns the first.
pub fn reserve(conn: &Connection, key: &str, n: u64) -> CoreResult<u64> {
    let current = meta_number(conn, key)?.unwrap_or(0);
    set_meta(conn, key, Some(&(current + n).to_string()))?;
    Ok(current + 1)
}

/// Appends an event with up to two fields (the writer trims the stream to `max_events` once
/// per transaction).
pub fn event(
    conn: &Connection,
    max_events: usize,
    now: Millis,
    event: &str,
    job_id: Option<&str>,
    fields: [Option<(&str, &str)>; 2],
) -> CoreResult<()> {
    if max_events == 0 {
        return Ok(());
    }
    let [field, extra] = fields;
    conn.prepare_cached(
        "INSERT INTO events (ts, event, job_id, field_key, field_value, extra_key, extra_value) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            now as i64,
            event,
            job_id,
            field.map(|f| f.0),
            field.map(|f| f.1),
            extra.map(|f| f.0),
            extra.map(|f| f.1)
        ])
    })
    .map(|_| ())
    .map_err(sql)
}

/// The state of job `id`, if it exists (without reading the rest of the row).
pub fn state(conn: &Connection, id: &str) -> CoreResult<Option<JobState>> {
    let code: Option<i64> = conn
        .prepare_cached("SELECT state FROM jobs WHERE id = ?1")
        .and_then(|mut stmt| stmt.query_row([id], |r| r.get(0)).optional())
        .map_err(sql)?;
    code.map(state_of).transpose().map_err(sql)
}

/// The automatic job ids handed out by one operation: read once, taken one by one as jobs are
/// created (an add that creates nothing takes none), written back once.
pub struct AutoIds {
    last: u64,
    taken: bool,
}

impl AutoIds {
    pub fn read(conn: &Connection) -> CoreResult<Self> {
        Ok(Self {
            last: meta_number(conn, "next_auto_id")?.unwrap_or(0),
            taken: false,
        })
    }

    pub fn take(&mut self) -> u64 {
        self.last += 1;
        self.taken = true;
        self.last
    }

    pub fn write(self, conn: &Connection) -> CoreResult<()> {
        if self.taken {
            set_meta(conn, "next_auto_id", Some(&self.last.to_string()))?;
        }
        Ok(())
    }
}

/// Reserves `n` automatic ids in their own transaction (a flow's jobs in this queue, added from
/// another queue's file); returns the last id taken before them.
pub fn reserve_auto_ids(conn: &Connection, n: u64) -> CoreResult<u64> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
    let reserved = meta_number(conn, "next_auto_id").and_then(|last| {
        let last = last.unwrap_or(0);
        set_meta(conn, "next_auto_id", Some(&(last + n).to_string()))?;
        Ok(last)
    });
    match reserved {
        Ok(last) => conn.execute_batch("COMMIT").map_err(sql).map(|()| last),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Drops the oldest events past `max_events`.
pub fn trim_events(conn: &Connection, max_events: usize) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM events WHERE id <= (SELECT max(id) FROM events) - ?1")
        .and_then(|mut stmt| stmt.execute([max_events as i64]))
        .map(|_| ())
        .map_err(sql)
}
