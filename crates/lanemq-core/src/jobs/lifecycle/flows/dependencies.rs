//! A parent's children as the contract reads and detaches them: a page of each set
//! (`get_dependencies`), their counts, the child that leaves its parent
//! (`remove_child_dependency`) and the pending children that `remove_unprocessed_children`
//! removes (`unprocessed_children`; removing them across queues is the backend's business).

use crate::error::CoreResult;
use crate::jobs::flow::{ChildOutcome, Dependencies, DependencyCounts, ParentRef};
use crate::jobs::model::{JobState, Millis};

use super::super::{not_found, release_parent};
use super::news::apply_child;
use super::storage::{Bucket, FlowStorage};

fn require<S: FlowStorage>(storage: &mut S, id: &str) -> CoreResult<JobState> {
    storage.job_state(id)?.ok_or_else(|| not_found(id))
}

/// A page of the dependencies of `id`: each set from its cursor (processed, unprocessed,
/// failed, ignored), at most `count` of each (`None`: all).
pub fn get_dependencies<S: FlowStorage>(
    storage: &mut S,
    id: &str,
    cursors: [usize; 4],
    count: Option<usize>,
) -> CoreResult<Dependencies> {
    require(storage, id)?;
    let unprocessed: Vec<String> = storage
        .bucket_entries(id, Bucket::Unprocessed)?
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    Ok(Dependencies::page(
        &storage.bucket_entries(id, Bucket::Processed)?,
        &unprocessed,
        &storage.bucket_entries(id, Bucket::Failed)?,
        &storage.bucket_entries(id, Bucket::Ignored)?,
        cursors,
        count,
    ))
}

pub fn get_dependencies_count<S: FlowStorage>(
    storage: &mut S,
    id: &str,
) -> CoreResult<DependencyCounts> {
    require(storage, id)?;
    Ok(DependencyCounts {
        processed: storage.count_bucket(id, Bucket::Processed)?,
        unprocessed: storage.count_bucket(id, Bucket::Unprocessed)?,
        failed: storage.count_bucket(id, Bucket::Failed)?,
        ignored: storage.count_bucket(id, Bucket::Ignored)?,
    })
}

/// What detaching a child from its parent did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detached {
    /// The child had no parent.
    NoParent,
    /// Its parent is in this store: `true` if the child was one of its pending dependencies
    /// (the parent is released if it was the last).
    Here(bool),
    /// Its parent is in another queue, which the backend tells (`ChildOutcome::Removed`).
    Elsewhere { parent: ParentRef, child: ParentRef },
}

/// Detaches the child `child_id` from its parent: it forgets its parent, and a parent in this
/// store stops waiting for it.
pub fn remove_child_dependency<S: FlowStorage>(
    storage: &mut S,
    child_id: &str,
    now: Millis,
) -> CoreResult<Detached> {
    let parent = storage
        .update_options(child_id, |job| Ok(job.options.parent.take()))?
        .ok_or_else(|| not_found(child_id))?;
    let Some(parent) = parent else {
        return Ok(Detached::NoParent);
    };
    let child = ParentRef {
        queue: storage.queue_name().to_owned(),
        id: child_id.to_owned(),
    };
    if parent.queue != storage.queue_name() {
        return Ok(Detached::Elsewhere { parent, child });
    }
    let removed = ChildOutcome::Removed;
    apply_child(storage, &parent.id, &child, removed, now, false).map(Detached::Here)
}

/// Releases `parent_id`, waiting for children, when none is pending (a job parked by
/// `add_children` whose children were all its own already).
pub fn release_if_done<S: FlowStorage>(
    storage: &mut S,
    parent_id: &str,
    now: Millis,
) -> CoreResult<()> {
    if storage.job_state(parent_id)? == Some(JobState::WaitingChildren)
        && storage.count_bucket(parent_id, Bucket::Unprocessed)? == 0
    {
        release_parent(storage, parent_id, now)?;
    }
    Ok(())
}

/// The pending children of `parent_id` (of any queue), sorted by key.
pub fn unprocessed_children<S: FlowStorage>(
    storage: &mut S,
    parent_id: &str,
) -> CoreResult<Vec<ParentRef>> {
    require(storage, parent_id)?;
    storage.bucket_children(parent_id, Bucket::Unprocessed)
}
