//! Removing jobs by hand: one job with its tree of children (refused while a worker holds one),
//! a drain of what waits, a clean of old jobs of one state. A removed job gives up its dedup
//! key, and a child still pending leaves its parent's dependencies once the removal's events
//! are written: the parent is released if that was its last pending child, or, after a drain
//! or clean and in the same queue, deleted (BullMQ's rule).

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::flow::ParentRef;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::scheduler::pending_removal_refused;

use super::storage::JobStorage;

/// Removes job `id` and its whole tree of children (whatever their state, in whatever queue),
/// as BullMQ does; refused, changing nothing, while a live lock holds a job of the tree, or
/// when `id` is a job scheduler's pending occurrence.
pub fn remove<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let job = storage
        .load(id)?
        .ok_or_else(|| CoreError::JobNotFound(id.to_owned()))?;
    if let Some(key) = &job.options.scheduler {
        if super::schedulers::is_pending_occurrence(storage, &job)? {
            return Err(pending_removal_refused(id, key));
        }
    }
    let (here, elsewhere) = tree(storage, job)?;
    for (i, job) in here.iter().enumerate() {
        if job.lock.as_ref().is_some_and(|l| l.expires_at > now) {
            return Err(locked(id, (i > 0).then_some(&*job.id)));
        }
    }
    for child in &elsewhere {
        if let Some(held) = storage.remote_locked(child, now)? {
            return Err(locked(id, Some(&held)));
        }
    }
    // The root first: its descendants' parents are then gone, so only the root's own parent
    // hears of the removal.
    for job in &here {
        storage.remove_job(&job.id, now)?;
        let prev = job.state.as_str();
        storage.event(now, "removed", Some(&job.id), Some(("prev", prev.into())))?;
    }
    for child in &elsewhere {
        storage.remove_remote(child, now)?;
    }
    storage.settle_removals(now, false)
}

/// The refusal of removing `id`: it is locked, or its descendant `held` is.
fn locked(id: &str, held: Option<&str>) -> CoreError {
    match held {
        None => CoreError::Refused(format!(
            "job {id:?} is locked by a worker and cannot be removed"
        )),
        Some(held) => CoreError::Refused(format!(
            "job {id:?} cannot be removed: its descendant {held:?} is locked by a worker"
        )),
    }
}

/// The tree under `root` in this queue, in preorder (children by key, as `children` gives
/// them), and the children it has in other queues (whose own trees their queues remove).
fn tree<S: JobStorage>(storage: &mut S, root: Job) -> CoreResult<(Vec<Job>, Vec<ParentRef>)> {
    let queue = storage.queue_name().to_owned();
    let (mut here, mut elsewhere) = (Vec::new(), Vec::new());
    let mut stack = vec![root];
    while let Some(job) = stack.pop() {
        let mut children = Vec::new();
        for child in storage.children(&job.id)? {
            if child.queue != queue {
                elsewhere.push(child);
            } else if let Some(found) = storage.load(&child.id)? {
                children.push(found);
            }
        }
        here.push(job);
        stack.extend(children.into_iter().rev());
    }
    Ok((here, elsewhere))
}

/// Removes every waiting job (and delayed ones with `delayed`), except the pending occurrences
/// of job schedulers, as BullMQ does; returns how many.
pub fn drain<S: JobStorage>(storage: &mut S, delayed: bool, now: Millis) -> CoreResult<usize> {
    let doomed = storage.drainable(delayed)?;
    remove_all(storage, &doomed, now)?;
    Ok(doomed.len())
}

/// Removes up to `limit` (0: all) jobs in `state` older than `grace` ms (by finish time for
/// finished jobs, by creation time otherwise), in the state's order; active jobs under a live
/// lock stay. Returns their ids.
pub fn clean<S: JobStorage>(
    storage: &mut S,
    grace: Millis,
    limit: usize,
    state: JobState,
    now: Millis,
) -> CoreResult<Vec<String>> {
    let limit = if limit == 0 { usize::MAX } else { limit };
    let doomed = storage.cleanable(state, now.saturating_sub(grace), limit, now)?;
    remove_all(storage, &doomed, now)?;
    Ok(doomed.iter().map(|id| id.to_string()).collect())
}

fn remove_all<S: JobStorage>(storage: &mut S, doomed: &[Arc<str>], now: Millis) -> CoreResult<()> {
    for id in doomed {
        storage.remove_job(id, now)?;
    }
    if !doomed.is_empty() {
        let count = doomed.len().to_string();
        storage.event(now, "cleaned", None, Some(("count", count.into())))?;
    }
    // As in BullMQ, a parent in this queue left with no pending child by a drain or clean is
    // deleted rather than run without its children.
    storage.settle_removals(now, true)
}
