//! What a child's change tells its parent: its finish (`on_finish`), its removal
//! (`removal_tells`, told when the removal settles), its retry by hand (`on_retry`, `rejoin`),
//! an obliterate of its queue (`on_obliterate`), and the step that applies the news to a parent
//! of this store (`apply_child`). `flow::on_child` and `flow::on_retry` decide; these steps
//! keep the sets and move the parent.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::flow::{self, ChildOutcome, ParentRef, Record, Retried, Then};
use crate::jobs::model::{Job, JobState, Millis};

use super::super::{fail_now, release_parent, reopen_parent};
use super::storage::{Bucket, Change, FlowStorage};

/// The job `child_id` of this store as its parent knows it.
fn child_here<S: FlowStorage>(storage: &S, child_id: &str) -> ParentRef {
    ParentRef {
        queue: storage.queue_name().to_owned(),
        id: child_id.to_owned(),
    }
}

/// After the job `child_id`, a child of `parent`, completed or failed for good: a parent in
/// this store hears at once (the child's retention, which comes after, then counts what the
/// news did to its parent, as in Lua); one in another queue by `ChildNews::send`.
pub fn on_finish<S: FlowStorage>(
    storage: &mut S,
    parent: &ParentRef,
    child_id: &str,
    outcome: ChildOutcome,
    now: Millis,
) -> CoreResult<()> {
    if parent.queue == storage.queue_name() {
        let child = child_here(storage, child_id);
        return apply_child(storage, &parent.id, &child, outcome, now, false).map(drop);
    }
    storage.send(parent, child_id, Change::Done(outcome), now)
}

/// The parent that removing `job` (remove, clean, drain, obliterate) must tell: one for which
/// the job is still pending (unfinished, or failed under `keep_parent_waiting`); a completed
/// child stays in its parent's processed set.
pub fn removal_tells(job: &Job) -> Option<&ParentRef> {
    job.options
        .parent
        .as_ref()
        .filter(|_| job.state != JobState::Completed)
}

/// Before `job` is retried by hand (or, for a parent, reopened): its parent hears of it.
pub fn on_retry<S: FlowStorage>(storage: &mut S, job: &Job, now: Millis) -> CoreResult<()> {
    match &job.options.parent {
        Some(parent) => storage.send(parent, &job.id, Change::Retried, now),
        None => Ok(()),
    }
}

/// Before an obliterate: the children still pending for parents in other queues leave them
/// (the parents here go with the queue), and every set here is forgotten.
pub fn on_obliterate<S: FlowStorage>(storage: &mut S, now: Millis) -> CoreResult<()> {
    for (parent, child) in storage.pending_children()? {
        if parent.queue != storage.queue_name() {
            storage.send(&parent, &child, Change::Done(ChildOutcome::Removed), now)?;
        }
    }
    storage.forget_all()
}

/// Applies `outcome` of `child` (of any queue) to its parent `parent_id` of this store;
/// `true` if the child was one of the parent's pending dependencies. With `hard` (a drain's or
/// clean's removal of a child of this queue), a parent left with no pending child is deleted
/// rather than released, as BullMQ does; its own parent hears of it as of a drained child.
pub fn apply_child<S: FlowStorage>(
    storage: &mut S,
    parent_id: &str,
    child: &ParentRef,
    outcome: ChildOutcome,
    now: Millis,
    hard: bool,
) -> CoreResult<bool> {
    let Some(state) = storage.job_state(parent_id)? else {
        return Ok(false);
    };
    let child_key = child.key();
    if storage.bucket_of(parent_id, &child_key)? != Some(Bucket::Unprocessed) {
        return Ok(false);
    }
    let pending_after = storage
        .count_bucket(parent_id, Bucket::Unprocessed)?
        .saturating_sub(1);
    let (record, then) = flow::on_child(&child.id, outcome, pending_after, state);
    match record {
        Record::Processed(value) => {
            storage.put_child(parent_id, child, child_key, Bucket::Processed, value)?
        }
        Record::Failed(reason) => {
            storage.put_child(parent_id, child, child_key, Bucket::Failed, reason)?
        }
        Record::Ignored(reason) => {
            storage.put_child(parent_id, child, child_key, Bucket::Ignored, reason)?
        }
        Record::Dropped => storage.drop_child(parent_id, &child_key)?,
        Record::Kept => {}
    }
    match then {
        Then::Stay => {}
        Then::Release if hard && child.queue == storage.queue_name() => {
            delete_emptied_parent(storage, parent_id, state, now)?;
        }
        Then::Release => release_parent(storage, parent_id, now)?,
        Then::Fail(reason) => {
            fail_now(storage, parent_id, &reason, now)?;
            storage.failed_by_child(parent_id, reason)?;
        }
    }
    Ok(true)
}

/// A parent that a drain or clean left without pending children in its own queue: deleted
/// (BullMQ's rule), after its `removed` event.
fn delete_emptied_parent<S: FlowStorage>(
    storage: &mut S,
    parent_id: &str,
    prev: JobState,
    now: Millis,
) -> CoreResult<()> {
    let id: Arc<str> = Arc::from(parent_id);
    let prev = ("prev", prev.as_str().into());
    storage.event(now, "removed", Some(&id), Some(prev))?;
    storage.remove_emptied(&id, now)
}

/// `child` (of any queue) was retried by hand: its parent `parent_id` here waits for it again
/// if it still waits for children, or if it failed because of it (then its failure is undone,
/// and its own parent hears of it as of a retried child); see `flow::on_retry`.
pub fn rejoin<S: FlowStorage>(
    storage: &mut S,
    parent_id: &str,
    child: &ParentRef,
    now: Millis,
) -> CoreResult<()> {
    let Some(parent) = storage.load(parent_id)? else {
        return Ok(());
    };
    let child_key = child.key();
    let recorded = matches!(
        storage.bucket_of(parent_id, &child_key)?,
        Some(Bucket::Failed | Bucket::Ignored)
    );
    let reason = parent.failed_reason.as_deref();
    match flow::on_retry(&child.id, Some((parent.state, reason)), recorded) {
        Retried::Detached => return Ok(()),
        Retried::Rejoin => {}
        Retried::Reopen => {
            reopen_parent(storage, parent_id, now)?;
            on_retry(storage, &parent, now)?;
        }
    }
    storage.put_child(
        parent_id,
        child,
        child_key,
        Bucket::Unprocessed,
        String::new(),
    )
}
