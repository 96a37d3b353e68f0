//! Finishing an attempt: completed, retried (at once or after the backoff), or failed for good.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::constants::{CANCELLED_TRACE_PREFIX, STARTED_LIMIT_REASON};
use crate::jobs::contract::{FailOutcome, Failure};
use crate::jobs::events::Text;
use crate::jobs::jitter;
use crate::jobs::model::{Job, JobState, Millis};

use super::effects::Effects;
use super::flows::{Bucket, DependencySets};
use super::not_found;
use super::storage::JobStorage;

/// Completes the active job `id` held by `token`. A parent with a child still unprocessed
/// (released early by `continue_parent_on_failure`) is refused with
/// `CoreError::PendingDependencies`, after the lock check, writing nothing (BullMQ's rule).
pub fn complete<S: JobStorage + DependencySets>(
    storage: &mut S,
    id: &str,
    token: &str,
    result: &str,
    now: Millis,
) -> CoreResult<()> {
    let result: Arc<str> = Arc::from(result);
    let mut effects = Effects::new();
    let pending = storage.count_bucket(id, Bucket::Unprocessed)? > 0;
    storage
        .update(id, |job| {
            if job.state == JobState::Completed
                && job.reported_by(token)
                && job.return_value.as_deref() == Some(&*result)
            {
                return Ok(()); // this very completion, sent again: done, nothing to repeat
            }
            job.check_lock(token, now)?;
            if pending {
                return Err(CoreError::PendingDependencies(id.to_owned()));
            }
            job.state = JobState::Completed;
            job.finished_on = Some(now);
            job.return_value = Some(Arc::clone(&result));
            job.lock = None;
            job.reported_by = Some(token.to_owned());
            effects.event(
                "completed",
                Some(&job.id),
                Some(("returnvalue", Text::Shared(Arc::clone(&result)))),
            );
            effects.finished(job);
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    storage.drop_cancel(id)?; // the completion wins over a request not yet acted on
    effects.apply(storage, now)
}

/// Records a failed attempt: retried (after the backoff, or the failure's own delay) while it
/// asks for a retry, attempts remain, the job's cancellation was not requested and it has not
/// started `max_started_attempts` times; otherwise failed for good.
pub fn fail<S: JobStorage>(
    storage: &mut S,
    failure: &Failure,
    now: Millis,
) -> CoreResult<FailOutcome> {
    let mut effects = Effects::new();
    // A position in waiting, in case the decision is to retry at once (reserved first: the
    // decision runs inside the store's update).
    let seq = storage.reserve_seq(1)?;
    // A requested cancellation turns any failure of that attempt into one for good.
    let cancelled = storage
        .cancel_request(&failure.id)?
        .is_some_and(|request| request.token == failure.token);
    let mut repeated = false;
    let outcome = storage
        .update(&failure.id, |job| {
            if let Some(outcome) = reported_failure(job, failure) {
                repeated = true; // this very failure, sent again: its outcome, nothing redone
                return Ok(outcome);
            }
            job.check_lock(&failure.token, now)?;
            job.reported_by = Some(failure.token.clone());
            job.failed_reason = Some(failure.error.clone());
            if let Some(trace) = &failure.stacktrace {
                job.stacktrace.push(trace.clone());
                // A cancellation's entry stays whatever the limit: `wait` reads it.
                let least = usize::from(trace.starts_with(CANCELLED_TRACE_PREFIX));
                let excess = job
                    .stacktrace
                    .len()
                    .saturating_sub(job.options.kept_traces().max(least));
                job.stacktrace.drain(..excess);
            }
            if !(failure.retry && !cancelled && job.attempts_made < job.options.attempts) {
                fail_for_good(job, &failure.error, &mut effects, now);
                job.reported_by = Some(failure.token.clone());
                return Ok(FailOutcome::Failed);
            }
            if started_enough(job) {
                fail_for_good(job, STARTED_LIMIT_REASON, &mut effects, now);
                job.reported_by = Some(failure.token.clone());
                return Ok(FailOutcome::Failed);
            }
            let wait = failure
                .delay
                .or_else(|| {
                    let backoff = job.options.backoff.as_ref()?;
                    Some(backoff.delay_for(job.attempts_made, jitter::random_unit()))
                })
                .unwrap_or(0);
            if wait > 0 {
                to_delayed(job, now + wait);
                job.lock = None;
                effects.event(
                    "delayed",
                    Some(&job.id),
                    Some(("delay", (now + wait).to_string().into())),
                );
                return Ok(FailOutcome::Retry {
                    delay_until: Some(now + wait),
                });
            }
            super::to_waiting(job, seq, false);
            // BullMQ's retryJob: the job goes from active straight back to waiting.
            effects.event("waiting", Some(&job.id), Some(("prev", "active".into())));
            Ok(FailOutcome::Retry { delay_until: None })
        })?
        .ok_or_else(|| not_found(&failure.id))?;
    if !repeated {
        storage.drop_cancel(&failure.id)?;
    }
    if !repeated && outcome == (FailOutcome::Retry { delay_until: None }) {
        behind_due_delayed(storage, &failure.id, now)?;
    }
    effects.apply(storage, now)?;
    Ok(outcome)
}

/// The outcome `failure` had, if it is the report that last moved `job` (the same token and
/// reason) and the job is still where that left it: failed, delayed or waiting.
fn reported_failure(job: &Job, failure: &Failure) -> Option<FailOutcome> {
    if !(job.reported_by(&failure.token)
        && job.failed_reason.as_deref() == Some(failure.error.as_str()))
    {
        return None;
    }
    match job.state {
        JobState::Failed => Some(FailOutcome::Failed),
        JobState::Delayed => Some(FailOutcome::Retry {
            delay_until: Some(job.delay_until),
        }),
        JobState::Waiting => Some(FailOutcome::Retry { delay_until: None }),
        _ => None,
    }
}

/// A job retried at once goes behind the delayed jobs already due, as in BullMQ (whose
/// retryJob promotes them first): they are promoted now, and the job moves to the back again.
fn behind_due_delayed<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    if super::claim::promote_due(storage, now)? == 0 {
        return Ok(());
    }
    let seq = storage.reserve_seq(1)?;
    storage.update(id, |job| {
        super::to_waiting(job, seq, false);
        Ok(())
    })?;
    Ok(())
}

/// Fails job `id` for good with `reason`, whatever state it is in (a flow's parent that a
/// child's failure fails). `false` if there is no such job.
pub fn fail_now<S: JobStorage>(
    storage: &mut S,
    id: &str,
    reason: &str,
    now: Millis,
) -> CoreResult<bool> {
    let mut effects = Effects::new();
    let found = storage
        .update(id, |job| {
            fail_for_good(job, reason, &mut effects, now);
            Ok(())
        })?
        .is_some();
    effects.apply(storage, now)?;
    Ok(found)
}

/// Moves `job` to failed for good with `reason`, and notes what follows (`failed`, and
/// `retries-exhausted` when no attempt is left; the reactions of a finished job).
pub(super) fn fail_for_good(job: &mut Job, reason: &str, effects: &mut Effects, now: Millis) {
    job.state = JobState::Failed;
    job.finished_on = Some(now);
    job.failed_reason = Some(reason.to_owned());
    job.lock = None;
    // No attempt's report failed it (`fail` names its own after this).
    job.reported_by = None;
    effects.event(
        "failed",
        Some(&job.id),
        Some(("failedReason", reason.to_owned().into())),
    );
    if job.attempts_made >= job.options.attempts {
        effects.event(
            "retries-exhausted",
            Some(&job.id),
            Some(("attemptsMade", job.attempts_made.to_string().into())),
        );
    }
    effects.finished(job);
}

/// Whether `job` started as often as its `max_started_attempts` allows: its starts are the
/// attempts that ended by a report or are running (`attempts_made`; releases and delays gave
/// theirs back) plus the stalls (each gave its attempt back, but it did start).
pub(super) fn started_enough(job: &Job) -> bool {
    job.options
        .max_started_attempts
        .is_some_and(|max| job.attempts_made.saturating_add(job.stalled_count) >= max)
}

/// Fails `job` for good because it was cancelled with `reason`: a stack trace entry
/// `JobCancelledError: <reason>`, then as any failure for good. That entry is kept even with a
/// `stack_trace_limit` of 0: it is how `Job.wait()` tells a cancellation from a failure.
pub(super) fn fail_cancelled(job: &mut Job, reason: &str, effects: &mut Effects, now: Millis) {
    job.stacktrace
        .push(format!("{CANCELLED_TRACE_PREFIX}{reason}"));
    let excess = job
        .stacktrace
        .len()
        .saturating_sub(job.options.kept_traces().max(1));
    job.stacktrace.drain(..excess);
    fail_for_good(job, reason, effects, now);
}

pub(super) fn to_delayed(job: &mut Job, until: Millis) {
    job.state = JobState::Delayed;
    job.delay_until = until;
}
