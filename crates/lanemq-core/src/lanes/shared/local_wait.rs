//! `wait` on the local store: returns once the process's wake counter moved past the one its
//! previous `wait` returned at, or at its timeout. Between checks it sleeps on the file's
//! doorbell (`jobs::local::doorbell`: a directory watch that hears every process's commit),
//! with a slow poll as a safety net; where no watch could be set it polls every few ms.
//!
//! A wait does not use up the wake it found: its caller records it (`saw`) once the wake is
//! delivered, so a wait whose caller went away (a cancelled asyncio future, whose runtime task
//! still runs to its end) leaves the wake to the next wait.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::local_store::{wake_count, LocalLaneStore};
use crate::error::{CoreError, CoreResult};

/// How often a waiter checks its counter with a doorbell (only a missed event needs it).
const WATCHED_POLL: Duration = Duration::from_millis(100);
/// How often it checks without one.
const UNWATCHED_POLL: Duration = Duration::from_millis(3);

impl LocalLaneStore {
    /// `pid`'s wake counter if it moved since the wake `saw` recorded last.
    fn new_wake(&self, pid: &str) -> CoreResult<Option<i64>> {
        let count = self.read(|tx| wake_count(tx, pid))?;
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        Ok((seen.get(pid) != Some(&count)).then_some(count))
    }

    /// Records that `pid`'s wait returned at wake counter `count` (what `wait` gave).
    pub fn saw(&self, pid: &str, count: i64) {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid.to_owned(), count);
    }

    /// Returns `pid`'s wake counter when it was woken since its previous wait returned (the
    /// caller passes it to `saw`), or None after `timeout_ms`.
    pub async fn wait(self: Arc<Self>, pid: String, timeout_ms: i64) -> CoreResult<Option<i64>> {
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
            let woken = tokio::task::spawn_blocking(move || store.new_wake(&who))
                .await
                .map_err(|e| CoreError::Storage(format!("lanes store wait failed: {e}")))??;
            let now = Instant::now();
            if woken.is_some() || now >= deadline {
                return Ok(woken);
            }
            let nap = poll.min(deadline - now);
            tokio::select! {
                () = &mut rung => {}
                () = tokio::time::sleep(nap) => {}
            }
        }
    }
}
