//! The `flow_deps` table's plain SQL, below `SqlStore`: rows of parent id, child key
//! `<queue>:<id>`, child id, bucket, value or reason (a pending child's value is NULL).
//! `flow_sets.rs` serves them as the `DependencySets` of `lifecycle::flows`.

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::flows::Bucket;

use super::rows::sql;

pub fn bucket_of(conn: &Connection, parent: &str, child_key: &str) -> CoreResult<Option<Bucket>> {
    let code: Option<i64> = conn
        .prepare_cached("SELECT bucket FROM flow_deps WHERE parent_id = ?1 AND child_key = ?2")
        .and_then(|mut stmt| stmt.query_row([parent, child_key], |r| r.get(0)).optional())
        .map_err(sql)?;
    Ok(code.and_then(Bucket::from_code))
}

/// Puts the child in `bucket` (with `value`), replacing where it was.
pub fn put(
    conn: &Connection,
    parent: &str,
    child: &ParentRef,
    child_key: &str,
    bucket: Bucket,
    value: Option<&str>,
) -> CoreResult<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO flow_deps (parent_id, child_key, child_id, bucket, value) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            parent,
            child_key,
            child.id,
            bucket.code(),
            value
        ])
    })
    .map(|_| ())
    .map_err(sql)
}

/// `parent_id` here waits for `child` (a flow just created them).
pub fn depend(conn: &Connection, parent_id: &str, child: &ParentRef) -> CoreResult<()> {
    put(
        conn,
        parent_id,
        child,
        &child.key(),
        Bucket::Unprocessed,
        None,
    )
}

/// When job `id` (about to be) deleted: its own dependencies go with it (its pending children
/// then run on their own).
pub fn on_delete(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM flow_deps WHERE parent_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// The children of `parent_id` (`bucket`'s, or all), as `ParentRef`s sorted by key.
pub fn children_in(
    conn: &Connection,
    parent_id: &str,
    bucket: Option<Bucket>,
) -> CoreResult<Vec<ParentRef>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT child_key, child_id FROM flow_deps WHERE parent_id = ?1 \
             AND (?2 IS NULL OR bucket = ?2) ORDER BY child_key",
        )
        .map_err(sql)?;
    let rows = stmt
        .query_map(
            rusqlite::params![parent_id, bucket.map(Bucket::code)],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        )
        .map_err(sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql)?;
    Ok(rows
        .into_iter()
        .map(|(key, id)| ParentRef {
            queue: key[..key.len().saturating_sub(id.len() + 1)].to_owned(),
            id,
        })
        .collect())
}

/// Every child of `id` (in any bucket), as `ParentRef`s sorted by key.
pub fn children(conn: &Connection, id: &str) -> CoreResult<Vec<ParentRef>> {
    children_in(conn, id, None)
}
