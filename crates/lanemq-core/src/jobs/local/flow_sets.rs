//! The SQLite file's dependency sets (`lifecycle::flows::DependencySets`): rows of
//! `flow_deps` (parent id, child key `<queue>:<id>`, child id, bucket, value or reason; a
//! pending child's value is NULL).

use rusqlite::{Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::flows::{Bucket, DependencySets};
use crate::jobs::model::JobState;

use super::rows::{self, sql};
use super::storage::SqlStore;

pub fn bucket_of(conn: &Connection, parent: &str, child_key: &str) -> CoreResult<Option<Bucket>> {
    let code: Option<i64> = conn
        .prepare_cached("SELECT bucket FROM flow_deps WHERE parent_id = ?1 AND child_key = ?2")
        .and_then(|mut stmt| stmt.query_row([parent, child_key], |r| r.get(0)).optional())
        .map_err(sql)?;
    Ok(code.and_then(Bucket::from_code))
}

/// Puts the child in `bucket` (with `value`), replacing where it was.
fn put(
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
fn children_in(
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

impl DependencySets for SqlStore<'_> {
    fn job_state(&mut self, id: &str) -> CoreResult<Option<JobState>> {
        rows::state(self.conn, id)
    }

    fn bucket_of(&mut self, parent_id: &str, child_key: &str) -> CoreResult<Option<Bucket>> {
        bucket_of(self.conn, parent_id, child_key)
    }

    /// A pending child's value is NULL.
    fn put_child(
        &mut self,
        parent_id: &str,
        child: &ParentRef,
        child_key: String,
        bucket: Bucket,
        value: String,
    ) -> CoreResult<()> {
        let value = (bucket != Bucket::Unprocessed).then_some(value.as_str());
        put(self.conn, parent_id, child, &child_key, bucket, value)
    }

    fn drop_child(&mut self, parent_id: &str, child_key: &str) -> CoreResult<()> {
        self.conn
            .prepare_cached("DELETE FROM flow_deps WHERE parent_id = ?1 AND child_key = ?2")
            .and_then(|mut stmt| stmt.execute([parent_id, child_key]))
            .map(|_| ())
            .map_err(sql)
    }

    fn count_bucket(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<usize> {
        self.conn
            .prepare_cached("SELECT count(*) FROM flow_deps WHERE parent_id = ?1 AND bucket = ?2")
            .and_then(|mut stmt| {
                stmt.query_row(rusqlite::params![parent_id, bucket.code()], |r| {
                    r.get::<_, i64>(0)
                })
            })
            .map(|n| n as usize)
            .map_err(sql)
    }

    fn bucket_entries(
        &mut self,
        parent_id: &str,
        bucket: Bucket,
    ) -> CoreResult<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT child_key, COALESCE(value, '') FROM flow_deps \
                 WHERE parent_id = ?1 AND bucket = ?2 ORDER BY child_key",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map(rusqlite::params![parent_id, bucket.code()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
    }

    fn bucket_children(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<Vec<ParentRef>> {
        children_in(self.conn, parent_id, Some(bucket))
    }

    fn forget_parent(&mut self, parent_id: &str) -> CoreResult<()> {
        on_delete(self.conn, parent_id)
    }

    fn forget_all(&mut self) -> CoreResult<()> {
        self.conn
            .execute("DELETE FROM flow_deps", [])
            .map(|_| ())
            .map_err(sql)
    }
}
