//! Leases: renewing a held lock, giving a job back (to delayed or to the front of waiting)
//! without using an attempt, and recovering the jobs whose lease ran out.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::constants::STALLED_REASON;
use crate::jobs::model::{Job, Millis};

use super::effects::Effects;
use super::finish::{fail_for_good, to_delayed};
use super::not_found;
use super::storage::JobStorage;

/// Extends a held lock to `now + lease`.
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
        .ok_or_else(|| not_found(id))
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
    let mut effects = Effects::new();
    effects.event(
        "delayed",
        Some(&Arc::from(id)),
        Some(("delay", until.to_string().into())),
    );
    effects.apply(storage, now)
}

/// Gives an active job back to the front of its priority without using an attempt.
pub fn release<S: JobStorage>(
    storage: &mut S,
    id: &str,
    token: &str,
    now: Millis,
) -> CoreResult<()> {
    let seq = storage.reserve_seq(1)?;
    let key = storage
        .update(id, |job| {
            job.check_holder(token)?; // (a lease that ran out still gives back: see there)
            job.attempts_made = job.attempts_made.saturating_sub(1);
            super::to_waiting(job, seq, true);
            Ok(Arc::clone(&job.id))
        })?
        .ok_or_else(|| not_found(id))?;
    let mut effects = Effects::new();
    effects.event("waiting", Some(&key), Some(("prev", "active".into())));
    effects.apply(storage, now)
}

/// Active jobs whose lease ran out go back to the front of waiting (stalled count + 1, the
/// attempt given back), or fail for good once they stalled more than `max_stalled_count`
/// times. Returns (recovered, failed) ids.
pub fn recover_stalled<S: JobStorage>(
    storage: &mut S,
    now: Millis,
) -> CoreResult<(Vec<String>, Vec<String>)> {
    let expired = storage.expired_active(now)?;
    let (mut recovered, mut failed) = (Vec::new(), Vec::new());
    for id in expired {
        let seq = storage.reserve_seq(1)?;
        let mut effects = Effects::new();
        let gave_up = storage.update(&id, |job: &mut Job| {
            job.stalled_count += 1;
            job.attempts_made = job.attempts_made.saturating_sub(1);
            effects.event(
                "stalled",
                Some(&job.id),
                Some(("stalledCount", job.stalled_count.to_string().into())),
            );
            if job.stalled_count > job.options.max_stalled_count {
                fail_for_good(job, STALLED_REASON, &mut effects, now);
                return Ok(true);
            }
            super::to_waiting(job, seq, true);
            effects.event("waiting", Some(&job.id), Some(("prev", "stalled".into())));
            Ok(false)
        })?;
        effects.apply(storage, now)?;
        match gave_up {
            Some(true) => failed.push(id.to_string()),
            Some(false) => recovered.push(id.to_string()),
            None => {}
        }
    }
    Ok((recovered, failed))
}
