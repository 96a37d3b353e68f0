//! Leases: renewing a held lock, giving a job back (to delayed or to the front of waiting)
//! without using an attempt, and recovering the jobs whose lease ran out. A job whose
//! cancellation was requested (`cancel`) hears it from its renewal, and fails for good with
//! the reason when it is released or recovered instead of going back to waiting.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::constants::{STALLED_REASON, STARTED_LIMIT_REASON};
use crate::jobs::model::{Job, Millis};

use super::cancel_table::StoredCancel;
use super::effects::Effects;
use super::finish::{fail_cancelled, fail_for_good, started_enough, to_delayed};
use super::not_found;
use super::storage::JobStorage;

/// Extends a held lock to `now + lease`. When the job's cancellation was requested, the lock
/// is extended all the same (its worker fails the job with it) and the answer is
/// `CancelRequested`: the road by which a worker that missed the push hears of it.
pub fn renew<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    lease: Millis,
    now: Millis,
) -> CoreResult<()> {
    storage
        .update(id, |job| {
            job.check_lock(token, now)?;
            if let Some(lock) = job.lock.as_mut() {
                lock.expires_at = now + lease;
            }
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    match request_for(storage, id, token)? {
        Some(request) => Err(CoreError::CancelRequested {
            id: id.to_owned(),
            reason: request.reason,
        }),
        None => Ok(()),
    }
}

/// The cancel request stored for job `id` against the lock `token`.
fn request_for<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
) -> CoreResult<Option<StoredCancel>> {
    Ok(storage
        .cancel_request(id)?
        .filter(|request| request.token == token))
}

/// The cancel request that applies to the active job `id`: the one made against its lock.
fn request_of_active<S: JobStorage>(storage: &mut S, id: &str) -> CoreResult<Option<StoredCancel>> {
    let Some(request) = storage.cancel_request(id)? else {
        return Ok(None); // (the common case: one lookup, no load)
    };
    let token = storage
        .load(id)?
        .and_then(|job| job.lock)
        .map(|lock| lock.token);
    Ok((token.as_deref() == Some(request.token.as_str())).then_some(request))
}

/// Whether `token` holds the live lock of job `id`.
pub fn holds_lock<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<bool> {
    Ok(storage
        .load(id)?
        .and_then(|job| job.lock)
        .is_some_and(|lock| lock.token == token && lock.expires_at > now))
}

/// Gives an active job back to the delayed set, due at `until`, without using an attempt.
pub fn move_to_delayed<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    until: Millis,
    now: Millis,
) -> CoreResult<()> {
    storage
        .update(id, |job| {
            job.check_lock(token, now)?;
            job.attempts_made = job.attempts_made.saturating_sub(1);
            to_delayed(job, until.max(now));
            job.lock = None;
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    storage.drop_cancel(id)?;
    let mut effects = Effects::new();
    effects.event(
        "delayed",
        Some(&Arc::from(id)),
        Some(("delay", until.to_string().into())),
    );
    effects.apply(storage, now)
}

/// Gives an active job back to the front of its priority without using an attempt, without the
/// start time and progress of the run that gives it back (`Job::forget_run`); one whose
/// cancellation was requested fails for good with the reason instead (`release_with_reason`).
pub fn release<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<()> {
    release_with_reason(storage, id, token, now).map(drop)
}

/// `release`, returning the reason the job failed for good with when its cancellation was
/// requested (for a store whose waiters are told by the caller).
pub fn release_with_reason<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<Option<String>> {
    let seq = storage.reserve_seq(1)?;
    let request = request_for(storage, id, token)?;
    let mut effects = Effects::new();
    storage
        .update(id, |job| {
            job.check_holder(token)?; // (a lease that ran out still gives back: see there)
            if let Some(request) = &request {
                fail_cancelled(job, &request.reason, &mut effects, now);
                return Ok(());
            }
            job.attempts_made = job.attempts_made.saturating_sub(1);
            job.forget_run();
            super::to_waiting(job, seq, true);
            effects.event("waiting", Some(&job.id), Some(("prev", "active".into())));
            Ok(())
        })?
        .ok_or_else(|| not_found(id))?;
    storage.drop_cancel(id)?;
    effects.apply(storage, now)?;
    Ok(request.map(|request| request.reason))
}

/// Active jobs whose lease ran out go back to the front of waiting (stalled count + 1, the
/// attempt given back), or fail for good once they stalled more than `max_stalled_count`
/// times or started `max_started_attempts` times. Returns (recovered, failed) ids.
pub fn recover_stalled<S: JobStorage>(
    storage: &mut S,
    now: Millis,
) -> CoreResult<(Vec<String>, Vec<String>)> {
    let (recovered, failed) = recover_stalled_with_reasons(storage, now)?;
    Ok((recovered, failed.into_iter().map(|(id, _)| id).collect()))
}

/// A job that stall recovery failed for good: (id, failed reason).
pub type FailedStall = (String, String);

/// `recover_stalled`, each failed job with its failed reason. One whose cancellation was
/// requested fails for good with the request's reason (no `stalled` event: it is not started
/// again either way).
pub fn recover_stalled_with_reasons<S: JobStorage>(
    storage: &mut S,
    now: Millis,
) -> CoreResult<(Vec<String>, Vec<FailedStall>)> {
    let expired = storage.expired_active(now)?;
    let (mut recovered, mut failed) = (Vec::new(), Vec::new());
    for id in expired {
        let seq = storage.reserve_seq(1)?;
        let request = request_of_active(storage, &id)?;
        let mut effects = Effects::new();
        let gave_up = storage.update(&id, |job: &mut Job| {
            if let Some(request) = request {
                fail_cancelled(job, &request.reason, &mut effects, now);
                return Ok(Some(request.reason));
            }
            job.stalled_count += 1;
            job.attempts_made = job.attempts_made.saturating_sub(1);
            effects.event(
                "stalled",
                Some(&job.id),
                Some(("stalledCount", job.stalled_count.to_string().into())),
            );
            if job.stalled_count > job.options.max_stalled_count {
                fail_for_good(job, STALLED_REASON, &mut effects, now);
                return Ok(Some(STALLED_REASON.to_owned()));
            }
            if started_enough(job) {
                fail_for_good(job, STARTED_LIMIT_REASON, &mut effects, now);
                return Ok(Some(STARTED_LIMIT_REASON.to_owned()));
            }
            super::to_waiting(job, seq, true);
            effects.event("waiting", Some(&job.id), Some(("prev", "stalled".into())));
            Ok(None)
        })?;
        storage.drop_cancel(&id)?;
        effects.apply(storage, now)?;
        match gave_up {
            Some(Some(reason)) => failed.push((id.to_string(), reason)),
            Some(None) => recovered.push(id.to_string()),
            None => {}
        }
    }
    Ok((recovered, failed))
}
