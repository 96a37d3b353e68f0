//! `Flows`: what the memory store keeps for flows, with no behaviour of its own: the queue's
//! name, each parent's dependency sets (`Deps`), and what waits for the group to settle (the
//! outbox of news for parents, removals in other queues, parents failed by a child).
//! `flow_sets.rs` makes the sets the store's `DependencySets`; `flows.rs` fills and empties the
//! rest.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::job_id::JobId;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::flows::{Bucket, Change};
use crate::jobs::model::{FinishedResult, Millis};

/// A change of `child` that its parent's store must hear of.
#[derive(Debug)]
pub(super) struct ChildEvent {
    pub(super) parent: ParentRef,
    pub(super) child: ParentRef,
    pub(super) change: Change,
    pub(super) at: Millis,
    /// A removal by a drain or clean: a parent of the child's queue left with no pending
    /// child is deleted rather than released.
    pub(super) hard: bool,
}

/// A store's flow state (see the module header).
#[derive(Debug)]
pub(super) struct Flows {
    pub(super) queue: Arc<str>,
    pub(super) deps: HashMap<JobId, Deps, foldhash::fast::RandomState>,
    pub(super) outbox: Vec<ChildEvent>,
    /// Children in other queues to remove with their trees (a removed parent's).
    pub(super) removals: Vec<(ParentRef, Millis)>,
    /// Parents failed by a child since the last settle (their waiters are told).
    pub(super) settled: Vec<(JobId, FinishedResult)>,
}

impl Default for Flows {
    fn default() -> Self {
        Self {
            queue: Arc::from("default"),
            deps: HashMap::default(),
            outbox: Vec::new(),
            removals: Vec::new(),
            settled: Vec::new(),
        }
    }
}

/// One parent's children, by key.
#[derive(Debug, Default)]
pub(super) struct Deps {
    /// Every child with its bucket (a removal takes the whole tree, whatever the bucket).
    pub(super) refs: HashMap<String, (ParentRef, Bucket)>,
    /// Each bucket's children with their values, in `Bucket` order.
    pub(super) buckets: [BTreeMap<String, String>; 4],
}
