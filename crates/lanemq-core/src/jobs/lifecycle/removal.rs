//! Removing jobs by hand: one job (refused while a worker holds it), a drain of what waits, a
//! clean of old jobs of one state. A removed job gives up its dedup key, and an unfinished
//! child leaves its parent's dependencies once the removal's events are written.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::{JobState, Millis};
use crate::jobs::scheduler::pending_removal_refused;

use super::storage::JobStorage;

/// Removes job `id`, unless a live lock holds it or it is a job scheduler's pending occurrence.
pub fn remove<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let job = storage
        .load(id)?
        .ok_or_else(|| CoreError::JobNotFound(id.to_owned()))?;
    if let Some(key) = &job.options.scheduler {
        if storage.is_pending_occurrence(&job)? {
            return Err(pending_removal_refused(id, key));
        }
    }
    if job.lock.as_ref().is_some_and(|l| l.expires_at > now) {
        return Err(CoreError::Refused(format!(
            "job {id:?} is locked by a worker and cannot be removed"
        )));
    }
    storage.remove_job(&job.id, now)?;
    let prev = job.state.as_str();
    storage.event(now, "removed", Some(&job.id), Some(("prev", prev.into())))?;
    storage.settle_removals(now)
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
    storage.settle_removals(now)
}
