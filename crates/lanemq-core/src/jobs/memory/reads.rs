//! Reads of the queue's store; `wait_finished` registers a waiter that a finish tells.

use std::time::Duration;

use tokio::sync::oneshot;

use crate::jobs::contract::{ready, BoxFuture, JobReads, QueueStats};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};

use super::MemoryBackend;

impl JobReads for MemoryBackend {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        self.read(|store| Ok(store.get_job(&id)))
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        self.read(|store| Ok(store.get_state(&id)))
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        self.read(|store| Ok(store.get_job_counts(&states)))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        self.read(|store| Ok(store.count_pending()))
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        self.read(|store| Ok(store.get_counts_per_priority(&priorities)))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        self.read(|store| Ok(store.list_jobs(&states, start, end, ascending)))
    }

    fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<Job>, usize)> {
        self.read(|store| Ok(store.list_jobs_with_total(&states, start, end, ascending)))
    }

    fn get_stats(&self, now: Millis) -> BoxFuture<QueueStats> {
        self.read(|store| {
            Ok(QueueStats {
                counts: store.get_job_counts(&JobState::ALL),
                paused: store.is_paused(),
                max_active: store.get_max_active(),
                rate_limit: store.get_rate_limit(),
                rate_limit_ttl: store.get_rate_limit_ttl(now),
            })
        })
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        self.read(|store| Ok(store.finished_result(&id)))
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        let receiver = {
            let mut state = self.lock();
            let result = state.store.finished_result(&id);
            if !matches!(result, FinishedResult::NotFinished(_)) {
                return ready(Ok(result));
            }
            let (sender, receiver) = oneshot::channel();
            let list = state.waiters.entry(id.clone()).or_default();
            list.retain(|w| !w.is_closed()); // callers that timed out
            list.push(sender);
            receiver
        };
        let backend = self.clone();
        Box::pin(async move {
            let outcome = match timeout {
                Some(ms) => tokio::time::timeout(Duration::from_millis(ms), receiver)
                    .await
                    .ok(),
                None => Some(receiver.await),
            };
            match outcome {
                Some(Ok(result)) => Ok(result),
                // Timed out (or the backend was dropped): report where the job is now.
                _ => Ok(backend.lock().store.finished_result(&id)),
            }
        })
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<String>, usize)> {
        self.read(|store| store.get_logs(&id, start, end, ascending))
    }

    fn queue_names(&self) -> BoxFuture<Vec<String>> {
        let mut names = self.group_queue_names();
        names.sort();
        ready(Ok(names))
    }
}
