//! Cancellation on this backend (`contract::JobCancels`): the shared step
//! (`lifecycle::cancel`) on the file, whose `cancel_requests` and `cancel_log` tables
//! (`schema.rs`) keep the requests. A listening worker (`wait_cancels`) wakes on the
//! cross-process doorbell (`doorbell.rs`): a cancel committed by any process rings it, and the
//! listener then reads the log's newest seq, one read per commit heard, never one per job.

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::constants::CANCEL_LOG_TTL;
use crate::jobs::contract::{BoxFuture, CancelOutcome, CancelRequest, JobCancels};
use crate::jobs::lifecycle::{self, CancelTable, StoredCancel};
use crate::jobs::model::Millis;

use super::rows::sql;
use super::storage::SqlStore;
use super::LocalBackend;

impl CancelTable for SqlStore<'_> {
    fn cancel_request(&mut self, id: &str) -> CoreResult<Option<StoredCancel>> {
        self.conn
            .prepare_cached("SELECT token, reason FROM cancel_requests WHERE job_id = ?1")
            .and_then(|mut stmt| {
                stmt.query_row([id], |r| {
                    Ok(StoredCancel {
                        token: r.get(0)?,
                        reason: r.get(1)?,
                    })
                })
                .optional()
            })
            .map_err(sql)
    }

    fn store_cancel(&mut self, id: &str, request: StoredCancel, now: Millis) -> CoreResult<u64> {
        self.cancels_stored = Some(true);
        let conn = self.conn;
        let at = now.min(i64::MAX as Millis) as i64;
        conn.prepare_cached(
            "INSERT OR REPLACE INTO cancel_requests (job_id, token, reason) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut stmt| stmt.execute((id, &request.token, &request.reason)))
        .map_err(sql)?;
        conn.prepare_cached("DELETE FROM cancel_log WHERE at < ?1")
            .and_then(|mut stmt| stmt.execute([at.saturating_sub(CANCEL_LOG_TTL as i64)]))
            .map_err(sql)?;
        conn.prepare_cached("INSERT INTO cancel_log (at, job_id, reason) VALUES (?1, ?2, ?3)")
            .and_then(|mut stmt| stmt.execute((at, id, &request.reason)))
            .map_err(sql)?;
        Ok(conn.last_insert_rowid() as u64)
    }

    fn drop_cancel(&mut self, id: &str) -> CoreResult<()> {
        let stored = match self.cancels_stored {
            Some(stored) => stored,
            None => {
                let stored = self
                    .conn
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM cancel_requests)")
                    .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, bool>(0)))
                    .map_err(sql)?;
                *self.cancels_stored.insert(stored)
            }
        };
        if !stored {
            return Ok(());
        }
        self.conn
            .prepare_cached("DELETE FROM cancel_requests WHERE job_id = ?1")
            .and_then(|mut stmt| stmt.execute([id]))
            .map(|_| ())
            .map_err(sql)
    }
}

/// The newest request's seq, even once the log pruned it (0: none ever).
fn last_seq(conn: &Connection) -> CoreResult<u64> {
    conn.prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'cancel_log'")
        .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, i64>(0)).optional())
        .map(|seq| seq.unwrap_or(0).max(0) as u64)
        .map_err(sql)
}

fn requests_after(conn: &Connection, after: u64) -> CoreResult<Vec<CancelRequest>> {
    let after = after.min(i64::MAX as u64) as i64;
    conn.prepare_cached("SELECT seq, job_id, reason FROM cancel_log WHERE seq > ?1 ORDER BY seq")
        .and_then(|mut stmt| {
            stmt.query_map([after], |r| {
                Ok(CancelRequest {
                    seq: r.get::<_, i64>(0)? as u64,
                    job_id: r.get(1)?,
                    reason: r.get(2)?,
                })
            })?
            .collect()
        })
        .map_err(sql)
}

impl JobCancels for LocalBackend {
    fn cancel(&self, id: String, reason: String, now: Millis) -> BoxFuture<CancelOutcome> {
        self.call_store(move |s| lifecycle::cancel(s, &id, &reason, now))
    }

    fn last_cancel_seq(&self) -> BoxFuture<u64> {
        self.direct(|conn, _| last_seq(conn))
    }

    fn wait_cancels(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<Vec<CancelRequest>> {
        let backend = self.clone();
        Box::pin(async move {
            if timeout.is_some() {
                let newer = move |b: &LocalBackend| -> BoxFuture<(bool, Option<Millis>)> {
                    let seq = b.direct(|conn, _| last_seq(conn));
                    Box::pin(async move { Ok((seq.await? > after, None)) })
                };
                backend.wait_until(timeout, newer).await?;
            }
            backend
                .direct(move |conn, _| requests_after(conn, after))
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema;

    #[test]
    fn a_file_from_before_cancellation_gets_the_cancel_tables() {
        let path = std::env::temp_dir().join(format!(
            "lanemq-cancels-{}-{:?}.sqlite3",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let conn = schema::open(&path, "q").unwrap();
        conn.execute_batch("DROP TABLE cancel_requests; DROP TABLE cancel_log;")
            .unwrap();
        conn.execute("INSERT INTO meta (key, value) VALUES ('kept', 'yes')", [])
            .unwrap();
        drop(conn);
        let conn = schema::open(&path, "q").expect("an older file opens");
        conn.execute(
            "INSERT INTO cancel_requests (job_id, token, reason) VALUES ('1', 't', 'r')",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO cancel_log (at, job_id, reason) VALUES (1, '1', 'r')",
            [],
        )
        .unwrap();
        assert_eq!(super::last_seq(&conn).unwrap(), 1);
        let kept: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'kept'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(kept, "yes");
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
