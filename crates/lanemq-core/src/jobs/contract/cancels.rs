//! Cancelling a job: one that has not started never runs, a running one is stopped on
//! whichever worker, process or host runs it.
//!
//! Until every backend implements this trait, its methods default to `Refused`.

use crate::error::CoreError;
use crate::jobs::model::Millis;

use super::{ready, BoxFuture};

/// What `cancel` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was waiting, prioritized, delayed or waiting for children: it failed for good
    /// now, with the reason as its failed reason (a `failed` event, its parent and dedup key
    /// told, its retention applied, as any failure for good).
    Failed,
    /// The job is active: the request is stored with it and pushed to the workers
    /// (`wait_cancels`); its worker stops the processor and fails it for good with the reason.
    Requested,
    /// The job had already completed or failed: nothing changed.
    Finished,
}

/// A cancel request as the workers hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelRequest {
    /// Ascending per queue; `wait_cancels(after)` returns those past `after`.
    pub seq: u64,
    pub job_id: String,
    pub reason: String,
}

fn not_yet<T: Send + 'static>(operation: &str) -> BoxFuture<T> {
    ready(Err(CoreError::Refused(format!(
        "{operation}: cancellation is not implemented by this backend yet"
    ))))
}

pub trait JobCancels: Send + Sync + 'static {
    /// Cancels the job `id` with `reason` (`JobNotFound` if there is none). A `cancelled`
    /// event with the reason follows either way it acts.
    fn cancel(&self, id: String, reason: String, now: Millis) -> BoxFuture<CancelOutcome> {
        let _ = (id, reason, now);
        not_yet("cancel")
    }
    /// The newest request's `seq` (0: none yet): where a worker starts listening.
    fn last_cancel_seq(&self) -> BoxFuture<u64> {
        not_yet("last_cancel_seq")
    }
    /// The requests past `after`, oldest first; waits at most `timeout` ms for one when there
    /// is none yet (`None`: no wait), then resolves with what there is (maybe nothing). Pushed,
    /// never polled per job: memory wakes in process, SQLite through the cross-process
    /// wake-up, Redis through a blocking read of its own key. Requests older than a minute
    /// may be forgotten; the lease renewal answers for those (`CoreError::CancelRequested`).
    fn wait_cancels(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<Vec<CancelRequest>> {
        let _ = (after, timeout);
        not_yet("wait_cancels")
    }
}
