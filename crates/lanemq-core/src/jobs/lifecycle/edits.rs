//! Edits of one job by hand: promote, reschedule, retry, a new priority.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::validate_priority;

use super::effects::Effects;
use super::finish::to_delayed;
use super::not_found;
use super::storage::JobStorage;

fn expect_state(job: &Job, allowed: &[JobState], expected: &'static str) -> CoreResult<()> {
    if allowed.contains(&job.state) {
        Ok(())
    } else {
        Err(CoreError::JobState {
            id: job.id.to_string(),
            state: job.state.as_str(),
            expected,
        })
    }
}

/// Makes a delayed job waiting now.
pub fn promote<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let seq = storage.reserve_seq(1)?;
    let key = storage
        .update(id, |job| {
            expect_state(job, &[JobState::Delayed], "delayed")?;
            super::to_waiting(job, seq, false);
            Ok(Arc::clone(&job.id))
        })?
        .ok_or_else(|| not_found(id))?;
    let mut effects = Effects::new();
    effects.event("waiting", Some(&key), Some(("prev", "delayed".into())));
    effects.apply(storage, now)
}

/// Promotes delayed jobs to waiting, due or not, earliest first: at most `count` (`None`: all),
/// as BullMQ's `promoteJobs`. Returns how many.
pub fn promote_jobs<S: JobStorage>(
    storage: &mut S,
    count: Option<usize>,
    now: Millis,
) -> CoreResult<usize> {
    // Every delayed job is "due" by the end of time: the store's own ordered read.
    let mut delayed = storage.due_delayed(Millis::MAX)?;
    if let Some(count) = count {
        delayed.truncate(count);
    }
    for id in &delayed {
        promote(storage, id, now)?;
    }
    Ok(delayed.len())
}

/// Moves a delayed job's due time to `until` (BullMQ's `changeDelay`); with `waiting_too`, a
/// waiting job is delayed until then as well (`delay_job`). Any other state: `JobState`.
pub fn reschedule<S: JobStorage>(
    storage: &mut S,
    id: &str,
    until: Millis,
    now: Millis,
    waiting_too: bool,
) -> CoreResult<()> {
    let (states, expected): (&[JobState], _) = if waiting_too {
        (
            &[JobState::Delayed, JobState::Waiting],
            "waiting or delayed",
        )
    } else {
        (&[JobState::Delayed], "delayed")
    };
    let key = storage
        .update(id, |job| {
            expect_state(job, states, expected)?;
            to_delayed(job, until);
            Ok(Arc::clone(&job.id))
        })?
        .ok_or_else(|| not_found(id))?;
    let mut effects = Effects::new();
    effects.event(
        "delayed",
        Some(&key),
        Some(("delay", until.to_string().into())),
    );
    effects.apply(storage, now)
}

/// Runs a finished job again: back to waiting with its outcome cleared. As BullMQ's
/// `job.retry()`, it keeps the attempts made (a job that used them all gets one more run, whose
/// failure is final) unless `reset_attempts`, and always keeps its stalled count.
pub fn retry_job<S: JobStorage>(
    storage: &mut S,
    id: &str,
    reset_attempts: bool,
    now: Millis,
) -> CoreResult<()> {
    let job = storage.load(id)?.ok_or_else(|| not_found(id))?;
    expect_state(
        &job,
        &[JobState::Failed, JobState::Completed],
        "failed or completed",
    )?;
    super::dedup::on_retry(storage, &job, now)?;
    storage.before_retry(&job, now)?;
    let seq = storage.reserve_seq(1)?;
    storage.update(id, |job| {
        if reset_attempts {
            job.attempts_made = 0;
        }
        job.finished_on = None;
        job.failed_reason = None;
        job.return_value = None;
        job.processed_on = None;
        super::to_waiting(job, seq, false);
        Ok(())
    })?;
    let mut effects = Effects::new();
    let prev = job.state.as_str();
    effects.event("waiting", Some(&job.id), Some(("prev", prev.into())));
    effects.apply(storage, now)
}

/// A new priority (and LIFO flag); a waiting job moves to the back of its new priority (the
/// front for LIFO).
pub fn update_priority<S: JobStorage>(
    storage: &mut S,
    id: &str,
    priority: u32,
    lifo: bool,
) -> CoreResult<()> {
    validate_priority(priority)?;
    let seq = storage.reserve_seq(1)?;
    storage
        .update_options(id, |job| {
            job.priority = priority;
            job.options.priority = priority;
            job.options.lifo = lifo;
            if job.state == JobState::Waiting {
                super::to_waiting(job, seq, false);
            }
            Ok(())
        })?
        .ok_or_else(|| not_found(id))
}
