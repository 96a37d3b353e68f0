//! Cancelling a job (`contract::JobCancels::cancel`): one that has not started fails for good
//! now and never runs; for an active one the request is stored against its lock and pushed to
//! the workers, whose worker stops the processor and fails it (`finish::fail`), or, when no
//! worker acts, its renewal, release or stall recovery does (`leases`).

use crate::error::CoreResult;
use crate::jobs::contract::CancelOutcome;
use crate::jobs::model::{JobState, Millis};

use super::cancel_table::StoredCancel;
use super::effects::Effects;
use super::finish::fail_cancelled;
use super::not_found;
use super::storage::JobStorage;

/// Cancels job `id` with `reason` (see `CancelOutcome`); a `cancelled` event with the reason
/// comes first whenever it acts (then, for a job that had not started, its `failed` event
/// and the reactions of any failure for good).
pub fn cancel<S: JobStorage>(
    storage: &mut S,
    id: &str,
    reason: &str,
    now: Millis,
) -> CoreResult<CancelOutcome> {
    let job = storage.load(id)?.ok_or_else(|| not_found(id))?;
    let mut effects = Effects::new();
    let cancelled = Some(("reason", reason.to_owned().into()));
    match job.state {
        JobState::Completed | JobState::Failed => return Ok(CancelOutcome::Finished),
        JobState::Active => {
            // Asked again, the request is stored and pushed again: a worker that missed the
            // first push hears the second one.
            let token = job.lock.map(|lock| lock.token).unwrap_or_default();
            let request = StoredCancel {
                token,
                reason: reason.to_owned(),
            };
            storage.store_cancel(id, request, now)?;
            effects.event("cancelled", Some(&job.id), cancelled);
            effects.apply(storage, now)?;
            return Ok(CancelOutcome::Requested);
        }
        JobState::Waiting | JobState::Delayed | JobState::WaitingChildren => {}
    }
    effects.event("cancelled", Some(&job.id), cancelled);
    storage.update(id, |job| {
        fail_cancelled(job, reason, &mut effects, now);
        Ok(())
    })?;
    effects.apply(storage, now)?;
    Ok(CancelOutcome::Failed)
}
