//! Metrics and the worker registry in the queue file (tables `metric_series`,
//! `metric_minutes` and `workers`, see `schema.rs`): the decisions are `jobs::metrics`' and
//! `jobs::workers`', as in memory; this file loads and stores.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, JobObserve};
use crate::jobs::metrics::{self, Metrics, MetricsKind, SeriesHead};
use crate::jobs::model::Millis;
use crate::jobs::workers::{heartbeat_expiry, WorkerEntry};

use super::rows::sql;
use super::LocalBackend;

/// Times and counts as SQLite integers (every value is checked to be at most 2^53 - 1).
fn int(value: u64) -> i64 {
    value.min(i64::MAX as u64) as i64
}

fn head(conn: &Connection, kind: MetricsKind) -> CoreResult<SeriesHead> {
    let row = conn
        .prepare_cached("SELECT count, newest, len FROM metric_series WHERE kind = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([kind.index() as i64], |r| {
                Ok(SeriesHead {
                    count: r.get::<_, i64>(0)? as u64,
                    newest: r.get::<_, Option<i64>>(1)?.map(|n| n as u64),
                    len: r.get::<_, i64>(2)? as usize,
                })
            })
            .optional()
        })
        .map_err(sql)?;
    Ok(row.unwrap_or_default())
}

fn record(
    conn: &Connection,
    kind: MetricsKind,
    counts: &[(Millis, u64)],
    max_data_points: usize,
) -> CoreResult<()> {
    let counts = metrics::check_record(counts, max_data_points)?;
    let change = metrics::update(head(conn, kind)?, &counts, max_data_points);
    let kind = kind.index() as i64;
    let mut add = conn
        .prepare_cached(
            "INSERT INTO metric_minutes (kind, minute, n) VALUES (?1, ?2, ?3) \
             ON CONFLICT (kind, minute) DO UPDATE SET n = n + excluded.n",
        )
        .map_err(sql)?;
    for (minute, n) in change.adds {
        add.execute(params![kind, int(minute), int(n)])
            .map_err(sql)?;
    }
    if let Some(from) = change.keep_from {
        conn.prepare_cached("DELETE FROM metric_minutes WHERE kind = ?1 AND minute < ?2")
            .and_then(|mut stmt| stmt.execute(params![kind, int(from)]))
            .map_err(sql)?;
    }
    let head = change.head;
    conn.prepare_cached(
        "INSERT OR REPLACE INTO metric_series (kind, count, newest, len) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut stmt| {
        stmt.execute(params![
            kind,
            int(head.count),
            head.newest.map(int),
            head.len as i64
        ])
    })
    .map_err(sql)?;
    Ok(())
}

fn read(conn: &Connection, kind: MetricsKind, start: i64, end: i64) -> CoreResult<Metrics> {
    metrics::read(head(conn, kind)?, start, end, |from, to| {
        let mut stmt = conn
            .prepare_cached(
                "SELECT minute, n FROM metric_minutes \
                 WHERE kind = ?1 AND minute >= ?2 AND minute <= ?3",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(params![kind.index() as i64, int(from), int(to)], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64))
            })
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
    })
}

fn workers(conn: &Connection, now: Millis) -> CoreResult<Vec<WorkerEntry>> {
    // The expired go first (`workers::expired`: kept while now < expires).
    conn.prepare_cached("DELETE FROM workers WHERE expires <= ?1")
        .and_then(|mut stmt| stmt.execute([int(now)]))
        .map_err(sql)?;
    let mut stmt = conn
        .prepare_cached("SELECT id, info, last_heartbeat FROM workers ORDER BY id")
        .map_err(sql)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(WorkerEntry {
                id: r.get(0)?,
                info: r.get(1)?,
                last_heartbeat: r.get::<_, i64>(2)? as u64,
            })
        })
        .map_err(sql)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
}

impl JobObserve for LocalBackend {
    fn record_metrics(
        &self,
        kind: MetricsKind,
        counts: Vec<(Millis, u64)>,
        max_data_points: usize,
    ) -> BoxFuture<()> {
        self.call(move |conn, _| record(conn, kind, &counts, max_data_points))
    }

    fn get_metrics(&self, kind: MetricsKind, start: i64, end: i64) -> BoxFuture<Metrics> {
        self.direct(move |conn, _| read(conn, kind, start, end))
    }

    fn heartbeat_worker(
        &self,
        id: String,
        info: String,
        ttl: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        self.call(move |conn, _| {
            let expires = heartbeat_expiry(&id, ttl, now)?;
            conn.prepare_cached(
                "INSERT OR REPLACE INTO workers (id, info, last_heartbeat, expires) \
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut stmt| stmt.execute(params![id, info, int(now), int(expires)]))
            .map_err(sql)?;
            Ok(())
        })
    }

    fn remove_worker(&self, id: String) -> BoxFuture<bool> {
        self.call(move |conn, _| {
            let removed = conn
                .prepare_cached("DELETE FROM workers WHERE id = ?1")
                .and_then(|mut stmt| stmt.execute([id]))
                .map_err(sql)?;
            Ok(removed > 0)
        })
    }

    fn get_workers(&self, now: Millis) -> BoxFuture<Vec<WorkerEntry>> {
        self.call(move |conn, _| workers(conn, now))
    }
}
