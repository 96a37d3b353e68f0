//! The event stream in the file (table `events`): `JobEvents` read straight from it, and the
//! outcome it recorded, after a wait began, for a job gone from the file.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, JobEvents};
use crate::jobs::events::{
    check_custom_event, event_name, field_name, StreamEvent, Text, CUSTOM_EVENT,
};
use crate::jobs::model::{FinishedResult, Millis};

use super::rows::sql;
use super::LocalBackend;

impl JobEvents for LocalBackend {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        self.direct(move |conn, _| read_events(conn, start, end, limit))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        self.call(move |conn, _| trim_events(conn, max_len))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        self.direct(|conn, _| last_event_id(conn))
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, move |backend| {
            let last = backend.direct(|conn, _| last_event_id(conn));
            Box::pin(async move { Ok((last.await? > after, None)) })
        })
    }

    fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> BoxFuture<u64> {
        self.call(move |conn, env| {
            check_custom_event(&name, &data, env.max_payload_bytes)?;
            let fields = [Some(("name", name.as_str())), Some(("data", data.as_str()))];
            env.event_fields(conn, now, CUSTOM_EVENT, job_id.as_deref(), fields)?;
            last_event_id(conn)
        })
    }
}

/// How a job that no longer exists ended, as the first event after id `after` that ends it
/// says (completed, failed, or removed: then `Missing`); `Missing` where none does.
pub fn outcome_after(conn: &Connection, id: &str, after: u64) -> CoreResult<FinishedResult> {
    let row: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT event, field_value FROM events WHERE id > ?1 AND job_id = ?2 \
             AND event IN ('completed', 'failed', 'removed') ORDER BY id LIMIT 1",
            rusqlite::params![after.min(i64::MAX as u64) as i64, id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(sql)?;
    Ok(match row {
        Some((event, value)) if event == "completed" => {
            FinishedResult::Completed(value.map(Arc::from))
        }
        Some((event, value)) if event == "failed" => {
            FinishedResult::Failed(value.unwrap_or_default())
        }
        _ => FinishedResult::Missing,
    })
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
