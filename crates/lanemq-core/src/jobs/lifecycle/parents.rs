//! A flow's parent in and out of waiting_children: parked when it adds children, released when
//! they are done (`jobs::flow::release_to` decides where to), reopened when a failed child is
//! retried. Which dependency changed and what it means is `jobs::flow`'s decision; these are
//! the moves that follow.

use crate::error::{CoreError, CoreResult};
use crate::jobs::flow;
use crate::jobs::model::{JobState, Millis};

use super::effects::Effects;
use super::finish::to_delayed;
use super::not_found;
use super::storage::JobStorage;

/// Parks the active job `id`, held by `token`, in waiting_children: its lock goes and the
/// attempt is given back (it runs again once its children are done).
pub fn park_for_children<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<()> {
    storage
        .update(id, |job| {
            job.check_lock(token, now)?;
            job.attempts_made = job.attempts_made.saturating_sub(1);
            job.lock = None;
            job.state = JobState::WaitingChildren;
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    waiting_children(storage, id, "active", now)
}

/// The job `id`, given children by `parent=`, waits for them: waiting or delayed, it moves
/// to waiting_children (released once they are done, delayed again by its own delay); one
/// there already stays. Any other state is refused (`flow::takes_children`), changing nothing.
pub fn hold_for_children<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let prev = storage
        .update(id, |job| {
            if !flow::takes_children(job.state) {
                return Err(CoreError::JobState {
                    id: id.to_owned(),
                    state: job.state.as_str(),
                    expected: flow::TAKES_CHILDREN,
                });
            }
            let prev = job.state;
            job.state = JobState::WaitingChildren;
            Ok(prev)
        })?
        .ok_or_else(|| not_found(id))?;
    match prev {
        JobState::WaitingChildren => Ok(()),
        prev => waiting_children(storage, id, prev.as_str(), now),
    }
}

/// A parent whose children are done: waiting, or delayed by its own delay from now.
pub fn release_parent<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let seq = storage.reserve_seq(1)?;
    let mut effects = Effects::new();
    storage
        .update(id, |job| {
            match flow::release_to(job.options.delay, now) {
                (JobState::Delayed, until) => {
                    to_delayed(job, until);
                    let until = until.to_string();
                    effects.event("delayed", Some(&job.id), Some(("delay", until.into())));
                }
                _ => {
                    super::to_waiting(job, seq, false);
                    let prev = ("prev", "waiting-children".into());
                    effects.event("waiting", Some(&job.id), Some(prev));
                }
            }
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    effects.apply(storage, now)
}

/// A parent that a child's failure failed, back in waiting_children because that child is
/// retried: its failure is forgotten.
pub fn reopen_parent<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    storage
        .update(id, |job| {
            job.finished_on = None;
            job.failed_reason = None;
            job.state = JobState::WaitingChildren;
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    waiting_children(storage, id, "failed", now)
}

/// The event of a parent now in waiting_children, coming from `prev`.
fn waiting_children<S: JobStorage>(
    storage: &mut S,
    id: &str,
    prev: &'static str,
    now: Millis,
) -> CoreResult<()> {
    let mut effects = Effects::new();
    effects.event(
        "waiting-children",
        Some(&id.into()),
        Some(("prev", prev.into())),
    );
    effects.apply(storage, now)
}
