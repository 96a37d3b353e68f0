//! The SQLite file's dependency sets (`lifecycle::flows::DependencySets`): the rows of
//! `flow_deps` (`flow_deps.rs`) as one operation's `SqlStore` reads and writes them.

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::flows::{Bucket, DependencySets};
use crate::jobs::model::JobState;

use super::flow_deps::{bucket_of, children_in, on_delete, put};
use super::rows::{self, sql};
use super::storage::SqlStore;

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
