//! What the shared flow steps need of a store: `DependencySets`, a parent's four sets of
//! children as the store keeps them (a map per parent in memory, rows of `flow_deps` in SQLite),
//! and `ChildNews`, the transport of a child's news to a parent in another queue.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::flow::{ChildOutcome, ParentRef};
use crate::jobs::model::{JobState, Millis};

use super::super::storage::JobStorage;

/// A parent's sets of children, in the order `flow::Dependencies` pages them (SQLite stores
/// the number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bucket {
    /// Completed, with its return value.
    Processed = 0,
    /// Still pending: the parent waits for it.
    Unprocessed = 1,
    /// Failed for good, with its reason (the parent failed, or still waits for a retry).
    Failed = 2,
    /// Failed under a policy that counts the failure as done, with its reason.
    Ignored = 3,
}

impl Bucket {
    pub const ALL: [Bucket; 4] = [
        Bucket::Processed,
        Bucket::Unprocessed,
        Bucket::Failed,
        Bucket::Ignored,
    ];

    pub fn code(self) -> i64 {
        self as i64
    }

    pub fn from_code(code: i64) -> Option<Bucket> {
        Self::ALL.into_iter().find(|b| b.code() == code)
    }
}

/// What a child tells its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Finished for good, or removed while pending.
    Done(ChildOutcome),
    /// Retried by hand: counted again if its parent still waits for children (`rejoin`).
    Retried,
}

/// A store's dependency sets: each parent's children, by key `<queue>:<id>`, in one bucket
/// each.
pub trait DependencySets {
    /// The state of the job `id` of this store, if it exists (a parent's, without reading the
    /// whole job).
    fn job_state(&mut self, id: &str) -> CoreResult<Option<JobState>>;
    /// The bucket of `parent_id` that holds `child_key`, if any.
    fn bucket_of(&mut self, parent_id: &str, child_key: &str) -> CoreResult<Option<Bucket>>;
    /// Puts `child` (whose key is `child_key`) in `bucket` of `parent_id` with `value` (its
    /// return value or reason; empty in `Unprocessed`), out of the bucket it was in.
    fn put_child(
        &mut self,
        parent_id: &str,
        child: &ParentRef,
        child_key: String,
        bucket: Bucket,
        value: String,
    ) -> CoreResult<()>;
    /// Takes `child_key` out of every bucket of `parent_id`.
    fn drop_child(&mut self, parent_id: &str, child_key: &str) -> CoreResult<()>;
    fn count_bucket(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<usize>;
    /// The whole bucket, sorted by child key, with each child's value.
    fn bucket_entries(
        &mut self,
        parent_id: &str,
        bucket: Bucket,
    ) -> CoreResult<Vec<(String, String)>>;
    /// The children in the bucket, sorted by key.
    fn bucket_children(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<Vec<ParentRef>>;
    /// Forgets the sets of `parent_id` (it left the store; its pending children then run on
    /// their own).
    fn forget_parent(&mut self, parent_id: &str) -> CoreResult<()>;
    /// Forgets every set (an obliterate).
    fn forget_all(&mut self) -> CoreResult<()>;
}

/// How a child's news travels, which is where the backends differ.
pub trait ChildNews {
    /// Carries `change` of the child `child_id` of this store to `parent`: in another queue
    /// (memory: the group's outbox; SQLite: a message relayed after the commit), or here, as
    /// the store delivers news in its own queue (memory: when the group settles; SQLite: at
    /// once, in the transaction).
    fn send(
        &mut self,
        parent: &ParentRef,
        child_id: &str,
        change: Change,
        now: Millis,
    ) -> CoreResult<()>;
    /// Removes a parent that a drain or clean left without pending children, as
    /// `JobStorage::remove_job` does; its own parent hears of it as of a drained child.
    fn remove_emptied(&mut self, id: &Arc<str>, now: Millis) -> CoreResult<()>;
    /// A parent just failed because of a child: whoever waits for it in this process hears of
    /// it (SQLite's `fail_now` tells them already; memory tells them when the group settles).
    fn failed_by_child(&mut self, id: &str, reason: String) -> CoreResult<()>;
    /// This store's jobs that a removal would take from a parent's pending children
    /// (`removal_tells`), with their parents.
    fn pending_children(&mut self) -> CoreResult<Vec<(ParentRef, String)>>;
}

/// A store the shared flow steps run over.
pub trait FlowStorage: JobStorage + DependencySets + ChildNews {}

impl<S: JobStorage + DependencySets + ChildNews> FlowStorage for S {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_codes_round_trip_in_paging_order() {
        for (i, bucket) in Bucket::ALL.into_iter().enumerate() {
            assert_eq!(bucket.code(), i as i64);
            assert_eq!(Bucket::from_code(bucket.code()), Some(bucket));
        }
        assert_eq!(Bucket::from_code(4), None);
    }
}
