//! Obliterate: the whole queue goes, as BullMQ's `obliterate`. It pauses first; while jobs are
//! active it stops there unless forced (the pause stays, so no new claim starts); otherwise
//! flows in other queues hear of it and everything is wiped, the pause included.

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::{JobState, Millis};

use super::super::flows;
use super::settings::set_paused;
use super::storage::ManageStorage;

/// Obliterates the queue. The refusal (jobs active, no `force`) is the inner error: what was
/// done before it, the pause and its event, stays written, as a store with a transaction must
/// commit it while reporting the refusal.
pub fn obliterate<S: ManageStorage>(
    storage: &mut S,
    force: bool,
    now: Millis,
) -> CoreResult<Result<(), CoreError>> {
    set_paused(storage, true, now)?;
    let active = storage.count(JobState::Active)?;
    if !force && active > 0 {
        return Ok(Err(CoreError::Refused(format!(
            "cannot obliterate a queue with {active} active jobs (use force=True)"
        ))));
    }
    flows::on_obliterate(storage, now)?;
    storage.wipe()?;
    Ok(Ok(()))
}
