//! Retention: what a finished job's `remove_on_complete` / `remove_on_fail` removes.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::model::Millis;
use crate::jobs::options::Retention;

use super::finished::Finished;
use super::storage::JobStorage;

/// Applies the policy of the job that just finished to its state's finished set: the job
/// itself (`RemoveAll`), or the oldest beyond `count`, and those that finished at or before
/// `now - age` (as BullMQ: a job exactly `age` old goes), at most `limit` of them.
pub fn retain<S: JobStorage>(storage: &mut S, finished: &Finished, now: Millis) -> CoreResult<()> {
    let state = finished.state;
    let doomed: Vec<Arc<str>> = match &finished.retention {
        Retention::KeepAll => return Ok(()),
        Retention::RemoveAll => vec![Arc::clone(&finished.id)],
        Retention::Keep { count, age, limit } => {
            let over = match count {
                Some(keep) => storage.count(state)?.saturating_sub(*keep as usize),
                None => 0,
            };
            let older = match age {
                Some(age) => storage.count_finished_by(state, now.saturating_sub(*age))?,
                None => 0,
            };
            let n = over
                .max(older)
                .min(limit.map_or(usize::MAX, |l| l as usize));
            if n == 0 {
                return Ok(());
            }
            storage.oldest_finished(state, n)?
        }
    };
    for id in doomed {
        storage.delete(&id)?;
    }
    Ok(())
}
