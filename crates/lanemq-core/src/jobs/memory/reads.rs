//! `JobReads` for the memory backend: the shared reads (`lifecycle::manage`) on the queue's
//! store under the group's lock; `wait_finished` registers a waiter that a finish tells.

use std::time::Duration;

use tokio::sync::oneshot;

use crate::jobs::contract::{ready, BoxFuture, JobReads, QueueStats};
use crate::jobs::lifecycle::manage;
use crate::jobs::model::{FinishedResult, Job, JobState, LogLine, Millis};
use crate::jobs::search::JobFilter;

use super::MemoryBackend;

impl JobReads for MemoryBackend {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        self.read(|store| Ok(store.get_job(&id)))
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        self.read(|store| manage::get_state(store, &id))
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        self.read(|store| manage::get_job_counts(store, &states))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        self.read(manage::count_pending)
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        self.read(|store| manage::get_counts_per_priority(store, &priorities))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        self.read(|store| Ok(manage::list_jobs(store, &states, start, end, ascending)?.0))
    }

    fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<Job>, usize)> {
        self.read(|store| manage::list_jobs(store, &states, start, end, ascending))
    }

    fn search_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        page: (usize, usize),
        ascending: bool,
        now: Millis,
    ) -> BoxFuture<(Vec<Job>, Option<usize>)> {
        self.read(|store| manage::search_jobs(store, &states, &filter, page, ascending, now))
    }

    fn get_stats(&self, now: Millis) -> BoxFuture<QueueStats> {
        self.read(|store| manage::get_stats(store, now))
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        self.read(|store| manage::finished_result(store, &id))
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        let receiver = {
            let mut state = self.lock();
            let result = match manage::finished_result(&mut state.store, &id) {
                Ok(result) => result,
                Err(e) => return ready(Err(e)),
            };
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
                _ => manage::finished_result(&mut backend.lock().store, &id),
            }
        })
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<LogLine>, usize)> {
        self.read(|store| manage::get_logs(store, &id, start, end, ascending))
    }

    fn queue_names(&self) -> BoxFuture<Vec<String>> {
        let mut names = self.group_queue_names();
        names.sort();
        ready(Ok(names))
    }
}
