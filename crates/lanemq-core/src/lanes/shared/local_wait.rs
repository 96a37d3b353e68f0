//! `wait` on the local store: returns once the process's wake counter moved past the one its
//! previous `wait` returned at, or at its timeout. Between checks it sleeps on the file's
//! doorbell (`jobs::local::doorbell`: a directory watch that hears every process's commit),
//! with a slow poll as a safety net; where no watch could be set it polls every few ms.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::local_store::{wake_count, LocalLaneStore};
use crate::error::{CoreError, CoreResult};

/// How often a waiter checks its counter with a doorbell (only a missed event needs it).
const WATCHED_POLL: Duration = Duration::from_millis(100);
/// How often it checks without one.
const UNWATCHED_POLL: Duration = Duration::from_millis(3);

impl LocalLaneStore {
    /// Whether `pid` was woken since its previous `wait` returned; if so, that wake is seen.
    fn take_wake(&self, pid: &str) -> CoreResult<bool> {
        let count = self.read(|tx| wake_count(tx, pid))?;
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let previous = seen.insert(pid.to_owned(), count);
        Ok(previous != Some(count))
    }

    /// Returns when `pid` was woken since its previous `wait` returned, or after `timeout_ms`.
    pub async fn wait(self: Arc<Self>, pid: String, timeout_ms: i64) -> CoreResult<()> {
        let timeout = u64::try_from(timeout_ms).map_err(|_| {
            CoreError::InvalidConfig(format!(
                "invalid timeout_ms: {timeout_ms} (must be at least 0)"
            ))
        })?;
        let deadline = Instant::now() + Duration::from_millis(timeout);
        let poll = if self.ring.is_some() {
            WATCHED_POLL
        } else {
            UNWATCHED_POLL
        };
        loop {
            // Listening before the check: a commit between the check and the sleep still wakes.
            let rung = self.doorbell.notified();
            tokio::pin!(rung);
            rung.as_mut().enable();
            let store = Arc::clone(&self);
            let who = pid.clone();
            let woken = tokio::task::spawn_blocking(move || store.take_wake(&who))
                .await
                .map_err(|e| CoreError::Storage(format!("lanes store wait failed: {e}")))??;
            let now = Instant::now();
            if woken || now >= deadline {
                return Ok(());
            }
            let nap = poll.min(deadline - now);
            tokio::select! {
                () = &mut rung => {}
                () = tokio::time::sleep(nap) => {}
            }
        }
    }
}
