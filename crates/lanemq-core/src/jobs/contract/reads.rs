//! Reading jobs and counts; nothing here changes the queue.

use crate::jobs::model::{FinishedResult, Job, JobState, LogLine, Millis};
use crate::jobs::search::JobFilter;

use super::BoxFuture;

pub trait JobReads: Send + Sync + 'static {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>>;
    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>>;
    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>>;
    /// How many jobs are in `states` together (each state once; all states when empty), as
    /// BullMQ's `getJobCountByTypes`.
    fn get_job_count(&self, states: Vec<JobState>) -> BoxFuture<usize> {
        let counts = self.get_job_counts(states);
        Box::pin(async move { Ok(counts.await?.into_iter().map(|(_, n)| n).sum()) })
    }
    fn count_pending(&self) -> BoxFuture<usize>;
    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>>;
    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>>;
    /// `list_jobs`'s page and the number of jobs it was cut from (those in `states`, all when
    /// empty), from one read of the counts, so the two agree.
    fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<Job>, usize)>;
    /// Up to `count` jobs of `states` (all when empty; each state once) meeting `filter` at
    /// `now`, in `list_jobs`'s order, from position `cursor` of that order (`page` is
    /// `(cursor, count)`), and the position where the next page starts (`None`: the end was
    /// reached). A page reads at most `SEARCH_SCAN_LIMIT` jobs, matching or not.
    fn search_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        page: (usize, usize),
        ascending: bool,
        now: Millis,
    ) -> BoxFuture<(Vec<Job>, Option<usize>)>;
    /// The queue at a glance at `now`, read at one moment (one round trip on Redis).
    fn get_stats(&self, now: Millis) -> BoxFuture<QueueStats>;
    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult>;
    /// Resolves when the job completes, fails for good or disappears; after `timeout` ms it
    /// resolves with `NotFinished`.
    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult>;
    /// Log lines `start..=end` with their times, and how many the log holds.
    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<LogLine>, usize)>;
    /// The names of the queues this queue's backend holds, sorted, this one included: the
    /// queues of its memory group, the queue files beside its file, the queues under its Redis
    /// prefix (what a dashboard lists).
    fn queue_names(&self) -> BoxFuture<Vec<String>>;
}

/// What `get_stats` reads, at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueStats {
    /// Jobs per state: every state, in `JobState::ALL`'s order.
    pub counts: Vec<(JobState, usize)>,
    pub paused: bool,
    /// The cap on active jobs across workers (`set_max_active`).
    pub max_active: Option<u32>,
    /// The windowed rate limit (`set_rate_limit`): at most `.0` claims per `.1` ms.
    pub rate_limit: Option<(u32, Millis)>,
    /// How long the rate limits still hold claims back (as `get_rate_limit_ttl`), in ms.
    pub rate_limit_ttl: Millis,
}
