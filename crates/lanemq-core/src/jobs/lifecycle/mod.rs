//! The job lifecycle, once for every backend that runs in this process (memory and SQLite):
//! the decisions of each transition, written against `JobStorage`, the small interface both
//! stores implement. A transition changes its job in place, then hands what follows (events,
//! dedup, flow and retention reactions, next occurrences) to `Effects::apply`, which does it
//! in one documented order (`effects`). The Redis backend's Lua scripts follow the same order.
//! Dedup keys (`dedup`) and job schedulers (`schedulers`) are written once here too, over two
//! small tables each store keeps (`DedupTable`, `SchedulerTable`); so is the management of a
//! queue (reads, settings, logs, obliterate: `manage`, over `ManageStorage`). Flows (parents'
//! dependency sets, a child's news to its parent, adding flows) are `flows`.
//!
//! The files are layered, each using only those below it (`scripts/jobs-imports` checks it):
//! `tables`, `cancel_table` and `finished`; `storage`; `groups`; `create`; `dedup`,
//! `schedulers`, `retention`; `effects`; the transitions (`add`, `claim`, `finish`, `leases`,
//! `cancel`, `edits`, `parents`, `removal`); then `flows` and `manage`.

mod add;
mod cancel;
mod cancel_table;
mod claim;
mod create;
pub mod dedup;
mod edits;
mod effects;
mod finish;
mod finished;
pub mod flows;
pub mod group_admin;
pub mod groups;
mod leases;
pub mod manage;
mod parents;
mod removal;
mod retention;
pub mod schedulers;
mod storage;
mod tables;

pub use add::{add, add_bulk};
pub use cancel::cancel;
pub use cancel_table::{CancelTable, StoredCancel};
pub use claim::{claim, promote_due};
pub use create::create_as;
pub use edits::{promote, promote_jobs, reschedule, retry_job, update_priority};
pub use finish::{complete, fail, fail_now};
pub use finished::Finished;
pub use groups::{GroupSettings, GroupState, GroupStorage, UNGROUPED};
pub use leases::{
    holds_lock, move_to_delayed, recover_stalled, recover_stalled_with_reasons, release,
    release_with_reason, renew,
};
pub use manage::ManageStorage;
pub use parents::{hold_for_children, park_for_children, release_parent, reopen_parent};
pub use removal::{clean, drain, remove};
pub use storage::{EventField, Gate, JobStorage};
pub use tables::{DedupKey, DedupTable, SchedulerTable, StoredScheduler};

use super::model::{Job, JobState};
use crate::error::CoreError;

fn not_found(id: &str) -> CoreError {
    CoreError::JobNotFound(id.to_owned())
}

/// Puts `job` in waiting at position `seq`: the back of its priority, or the front with
/// `front` (or for a LIFO job); its lock goes.
fn to_waiting(job: &mut Job, seq: u64, front: bool) {
    let seq = seq as i64;
    job.order = if front || job.options.lifo { -seq } else { seq };
    job.state = JobState::Waiting;
    job.lock = None;
}
