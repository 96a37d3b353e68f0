//! Cancellation on this backend (`contract::JobCancels`): the shared step
//! (`lifecycle::cancel`) on the queue's store, whose `CancelLog` keeps the requests; a worker
//! listening (`wait_cancels`) sleeps on the log's own `Notify`, woken by a push only.

use std::time::Duration;

use crate::error::CoreResult;
use crate::jobs::contract::{ready, BoxFuture, CancelOutcome, CancelRequest, JobCancels};
use crate::jobs::lifecycle::{self, CancelTable, StoredCancel};
use crate::jobs::model::{FinishedResult, Millis};

use super::store::MemoryStore;
use super::{finish, MemoryBackend};

impl CancelTable for MemoryStore {
    fn cancel_request(&mut self, id: &str) -> CoreResult<Option<StoredCancel>> {
        if self.cancels.requests.is_empty() {
            return Ok(None); // (the common case: no hashing of the id per renewal)
        }
        Ok(self.cancels.requests.get(id).cloned())
    }

    fn store_cancel(&mut self, id: &str, request: StoredCancel, now: Millis) -> CoreResult<u64> {
        Ok(self.cancels.push(id, request, now))
    }

    fn drop_cancel(&mut self, id: &str) -> CoreResult<()> {
        self.cancels.drop_request(id);
        Ok(())
    }
}

impl JobCancels for MemoryBackend {
    fn cancel(&self, id: String, reason: String, now: Millis) -> BoxFuture<CancelOutcome> {
        self.write(|s| {
            let outcome = lifecycle::cancel(&mut s.store, &id, &reason, now)?;
            if outcome == CancelOutcome::Failed {
                // Told directly: retention may already have removed the job.
                finish(&mut s.waiters, &id, || FinishedResult::Failed(reason));
            }
            Ok(outcome)
        })
    }

    fn last_cancel_seq(&self) -> BoxFuture<u64> {
        ready(Ok(self.lock().store.cancels.last_seq()))
    }

    fn wait_cancels(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<Vec<CancelRequest>> {
        let (found, pushed) = {
            let state = self.lock();
            (
                state.store.cancels.after(after),
                state.store.cancels.pushed.clone(),
            )
        };
        let Some(timeout) = timeout.filter(|_| found.is_empty()) else {
            return ready(Ok(found));
        };
        let backend = self.clone();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout);
            loop {
                let notified = pushed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let found = backend.lock().store.cancels.after(after);
                if !found.is_empty() || tokio::time::Instant::now() >= deadline {
                    return Ok(found);
                }
                let _ = tokio::time::timeout_at(deadline, notified).await;
            }
        })
    }
}

#[cfg(test)]
#[path = "cancel_tests.rs"]
mod tests;
