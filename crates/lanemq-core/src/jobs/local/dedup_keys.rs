//! The `dedup` table's plain SQL, below `SqlStore`: a key with its owner's state, its deletion,
//! the release of a removed job's key, and a flow's check of a node's key.

use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::lifecycle::DedupKey;
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::Dedup;

use super::rows::{self, sql};

/// The key `id` with its owner's state (its next job, if any, stays in the table until taken).
pub fn read_key(conn: &Connection, id: &str) -> CoreResult<Option<DedupKey>> {
    let row = conn
        .prepare_cached("SELECT job_id, expires_at, next_name IS NOT NULL FROM dedup WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<i64>>(1)?.map(|v| v as Millis),
                    r.get::<_, bool>(2)?,
                ))
            })
            .optional()
        })
        .map_err(sql)?;
    let Some((owner, expires_at, has_next)) = row else {
        return Ok(None);
    };
    Ok(Some(DedupKey {
        owner_state: rows::state(conn, &owner)?,
        owner: Arc::from(owner),
        expires_at,
        has_next,
    }))
}

pub fn delete_key(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM dedup WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// Before job `id` is removed (remove, clean, drain): deletes the key it holds, if any (a key
/// only ever points at a job added under it, so this is "its key, if still its").
pub fn release(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM dedup WHERE job_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// The job an add with `dedup` would return instead of adding one (a flow's check of its
/// nodes, which has no `SqlStore`: it reads the key as `lifecycle::dedup::owner` does).
pub fn flow_owner(conn: &Connection, dedup: &Dedup, now: Millis) -> CoreResult<Option<Job>> {
    let key = read_key(conn, &dedup.id)?;
    let view = key.as_ref().map(DedupKey::view);
    match crate::jobs::flow::dedup_owner(dedup, view.as_ref(), now) {
        Some(owner) => rows::require(conn, owner).map(Some),
        None => Ok(None),
    }
}
