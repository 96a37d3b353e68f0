//! The SQLite file as the `ManageStorage` the shared management (`lifecycle::manage`) runs
//! over: pages of a state read in the database (`ORDER BY` its index, `LIMIT`/`OFFSET`), a
//! job's fields and log by row, the settings in `meta`, and the wipe of an obliterate; and
//! `remove` on the file, for flows and their relay.

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::lifecycle::{self, ManageStorage};
use crate::jobs::model::{FinishedResult, Job, JobState, LogLine, Millis};

use super::env::Env;
use super::rows::{self, code, load, order_of, set_meta, sql, COLUMNS};
use super::storage::SqlStore;

fn descending(order: &str) -> String {
    order
        .split(", ")
        .map(|c| format!("{c} DESC"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A count or position as SQLite's signed integer.
fn int(n: usize) -> i64 {
    n.min(i64::MAX as usize) as i64
}

/// Appends a line (`?2`, written at `?3`) as number `max(n) + 1` of the job's log and returns
/// that number. A job's lines are always numbered without gaps (appends take the next number,
/// trims and clears drop the oldest), so a log's length is its newest number minus its oldest,
/// plus one: two seeks of the primary key, whatever the log's length.
const APPEND_LOG: &str = "INSERT INTO logs (job_id, n, line, at) VALUES \
     (?1, (SELECT COALESCE(max(n), 0) + 1 FROM logs WHERE job_id = ?1), ?2, ?3) RETURNING n";
/// The oldest and the newest line numbers of a log (NULL when it is empty): two statements,
/// as SQLite seeks the index for a lone `min` or `max` but scans for both together.
const FIRST_LOG: &str = "SELECT min(n) FROM logs WHERE job_id = ?1";
const LAST_LOG: &str = "SELECT max(n) FROM logs WHERE job_id = ?1";
/// Drops the lines older than the newest `?2` (`?3` is the newest's number).
const TRIM_LOGS: &str = "DELETE FROM logs WHERE job_id = ?1 AND n <= ?3 - ?2";

impl SqlStore<'_> {
    fn log_number(&self, query: &str, id: &str) -> CoreResult<Option<i64>> {
        self.conn
            .prepare_cached(query)
            .and_then(|mut stmt| stmt.query_row([id], |r| r.get(0)))
            .map_err(sql)
    }

    fn log_ends(&self, id: &str) -> CoreResult<Option<(i64, i64)>> {
        let oldest = self.log_number(FIRST_LOG, id)?;
        Ok(oldest.zip(self.log_number(LAST_LOG, id)?))
    }

    /// Runs `update` (`?1` the value, `?2` the id); whether the job exists.
    fn set_job_column(&self, update: &str, id: &str, value: &str) -> CoreResult<bool> {
        let changed = self
            .conn
            .prepare_cached(update)
            .and_then(|mut stmt| stmt.execute((value, id)))
            .map_err(sql)?;
        Ok(changed > 0)
    }
}

impl ManageStorage for SqlStore<'_> {
    fn max_payload_bytes(&self) -> usize {
        self.env.max_payload_bytes
    }

    fn exists(&mut self, id: &str) -> CoreResult<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM jobs WHERE id = ?1")
            .and_then(|mut stmt| stmt.exists([id]))
            .map_err(sql)
    }

    fn with_job<R>(&mut self, id: &str, read: impl FnOnce(&Job) -> R) -> CoreResult<Option<R>> {
        Ok(load(self.conn, id)?.as_ref().map(read))
    }

    fn page(
        &mut self,
        state: JobState,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<Job>> {
        let order = if ascending {
            order_of(state).to_owned()
        } else {
            descending(order_of(state))
        };
        let query = format!(
            "SELECT {COLUMNS} FROM jobs WHERE state = ?1 ORDER BY {order} LIMIT ?2 OFFSET ?3"
        );
        let mut stmt = self.conn.prepare_cached(&query).map_err(sql)?;
        let rows = stmt
            .query_map(
                rusqlite::params![code(state), int(take), int(skip)],
                rows::job,
            )
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
    }

    fn count_waiting_at(&mut self, priority: u32) -> CoreResult<usize> {
        self.conn
            .prepare_cached("SELECT count(*) FROM jobs WHERE state = 0 AND priority = ?1")
            .and_then(|mut stmt| stmt.query_row([priority as i64], |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as usize)
            .map_err(sql)
    }

    fn set_data(&mut self, id: &str, data: &str) -> CoreResult<bool> {
        self.set_job_column("UPDATE jobs SET data = ?1 WHERE id = ?2", id, data)
    }

    fn set_progress(&mut self, id: &str, progress: &Arc<str>) -> CoreResult<Option<Arc<str>>> {
        Ok(self
            .set_job_column("UPDATE jobs SET progress = ?1 WHERE id = ?2", id, progress)?
            .then(|| Arc::from(id)))
    }

    fn append_log(&mut self, id: &str, line: &str, time: Millis) -> CoreResult<usize> {
        let at = time.min(i64::MAX as u64) as i64;
        let newest: i64 = self
            .conn
            .prepare_cached(APPEND_LOG)
            .and_then(|mut stmt| stmt.query_row((id, line, at), |r| r.get(0)))
            .map_err(sql)?;
        let oldest = self.log_number(FIRST_LOG, id)?.unwrap_or(newest);
        Ok((newest - oldest + 1).max(0) as usize)
    }

    fn keep_newest_logs(&mut self, id: &str, keep: usize) -> CoreResult<()> {
        if keep == 0 {
            return self
                .conn
                .prepare_cached("DELETE FROM logs WHERE job_id = ?1")
                .and_then(|mut stmt| stmt.execute([id]))
                .map(|_| ())
                .map_err(sql);
        }
        let Some(newest) = self.log_number(LAST_LOG, id)? else {
            return Ok(());
        };
        self.conn
            .prepare_cached(TRIM_LOGS)
            .and_then(|mut stmt| stmt.execute(rusqlite::params![id, int(keep), newest]))
            .map(|_| ())
            .map_err(sql)
    }

    fn log_count(&mut self, id: &str) -> CoreResult<usize> {
        Ok(self
            .log_ends(id)?
            .map_or(0, |(oldest, newest)| (newest - oldest + 1).max(0) as usize))
    }

    fn log_page(
        &mut self,
        id: &str,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<LogLine>> {
        let query = if ascending {
            "SELECT line, at FROM logs WHERE job_id = ?1 ORDER BY n LIMIT ?2 OFFSET ?3"
        } else {
            "SELECT line, at FROM logs WHERE job_id = ?1 ORDER BY n DESC LIMIT ?2 OFFSET ?3"
        };
        let mut stmt = self.conn.prepare_cached(query).map_err(sql)?;
        // `at` is NULL for a line written before the column was added (no time known).
        let lines = stmt
            .query_map(rusqlite::params![id, int(take), int(skip)], |r| {
                Ok(LogLine {
                    text: r.get(0)?,
                    time: r.get::<_, Option<i64>>(1)?.map(|at| at.max(0) as Millis),
                })
            })
            .map_err(sql)?;
        lines.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
    }

    fn set_paused(&mut self, paused: bool) -> CoreResult<()> {
        set_meta(self.conn, "paused", paused.then_some("1"))
    }

    fn set_rate_limit(&mut self, limit: Option<(u32, Millis)>) -> CoreResult<()> {
        let (max, duration) = match limit {
            Some((max, duration)) => (Some(max.to_string()), Some(duration.to_string())),
            None => (None, None),
        };
        set_meta(self.conn, "rate_max", max.as_deref())?;
        set_meta(self.conn, "rate_duration", duration.as_deref())
    }

    fn set_rate_until(&mut self, until: Millis) -> CoreResult<()> {
        let until = (until > 0).then(|| until.to_string());
        set_meta(self.conn, "rate_until", until.as_deref())
    }

    fn set_max_active(&mut self, max: Option<u32>) -> CoreResult<()> {
        set_meta(
            self.conn,
            "max_active",
            max.map(|m| m.to_string()).as_deref(),
        )
    }

    fn wipe(&mut self) -> CoreResult<()> {
        let ids: Vec<String> = self
            .conn
            .prepare_cached("SELECT id FROM jobs")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<_>>()
            })
            .map_err(sql)?;
        for id in ids {
            self.env.finished.push((id, FinishedResult::Missing));
        }
        self.conn
            .execute_batch(
                "DELETE FROM jobs; DELETE FROM logs; DELETE FROM events; DELETE FROM dedup; \
                 DELETE FROM schedulers; DELETE FROM group_settings; DELETE FROM group_runs; \
                 DELETE FROM metric_series; DELETE FROM metric_minutes; DELETE FROM workers; \
                 UPDATE counts SET n = 0; \
                 DELETE FROM meta WHERE key IN ('paused', 'rate_max', 'rate_duration', \
                 'rate_start', 'rate_count', 'rate_until', 'max_active', 'drained', \
                 'next_auto_id', 'group_defaults', 'group_turn'); \
                 DELETE FROM sqlite_sequence WHERE name = 'events';",
            )
            .map_err(sql)
    }
}

/// `lifecycle::remove` on this file, for flows and their relay, which remove a child of a
/// parent in another queue.
pub fn remove(conn: &Connection, env: &mut Env, id: &str, now: Millis) -> CoreResult<()> {
    lifecycle::remove(&mut SqlStore::new(conn, env), id, now)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::jobs::contract::NewJob;
    use crate::jobs::lifecycle::manage::{add_log, clear_logs};
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
        let max = env.max_payload_bytes;
        let (job, _) = lifecycle::add(&mut SqlStore::new(&conn, &mut env), new, max, 1).unwrap();
        let log = |conn: &Connection, env: &mut Env, keep: usize| {
            add_log(&mut SqlStore::new(conn, env), &job.id, "a line", keep, 1).unwrap()
        };
        let append = |conn: &mut Connection, env: &mut Env, keep: usize| {
            vm_steps(conn, |conn| log(conn, env, keep))
        };
        conn.execute_batch("BEGIN").unwrap();
        for _ in 1..1_000 {
            log(&conn, &mut env, 0);
        }
        let (count, early) = append(&mut conn, &mut env, 0);
        assert_eq!(count, 1_000);
        for _ in 1_001..40_000 {
            log(&conn, &mut env, 0);
        }
        let (count, late) = append(&mut conn, &mut env, 0);
        assert_eq!(count, 40_000);
        assert_eq!(
            late, early,
            "the 40,000th append took {late} VM steps, the 1,000th {early}"
        );
        // Trimmed to the newest lines, the count still follows them.
        let (count, _) = append(&mut conn, &mut env, 10);
        let (again, _) = append(&mut conn, &mut env, 10);
        assert_eq!((count, again), (10, 10));
        clear_logs(&mut SqlStore::new(&conn, &mut env), &job.id, 0).unwrap();
        assert_eq!(
            append(&mut conn, &mut env, 0).0,
            1,
            "a cleared log starts again"
        );
        conn.execute_batch("COMMIT").unwrap();
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
