//! The table of cancel requests a store keeps beside its jobs (`CancelTable`): one request per
//! active job whose cancellation was asked for, and the queue's request log that workers listen
//! to (`contract::JobCancels::wait_cancels`). `JobStorage` requires it, so it sits below it.

use crate::error::CoreResult;
use crate::jobs::model::Millis;

/// A job's stored cancel request: the lock it was made against (a request outlives nothing:
/// once the job is claimed again under another token it no longer applies) and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCancel {
    pub token: String,
    pub reason: String,
}

pub trait CancelTable {
    /// The request stored for job `id`, if any.
    fn cancel_request(&mut self, id: &str) -> CoreResult<Option<StoredCancel>>;
    /// Stores (or replaces) job `id`'s request and appends it to the queue's request log,
    /// which wakes the listeners (`wait_cancels`); log entries older than `CANCEL_LOG_TTL`
    /// may go. Returns the request's seq.
    fn store_cancel(&mut self, id: &str, request: StoredCancel, now: Millis) -> CoreResult<u64>;
    /// Drops job `id`'s request (the job left active); nothing if there is none.
    fn drop_cancel(&mut self, id: &str) -> CoreResult<()>;
}
