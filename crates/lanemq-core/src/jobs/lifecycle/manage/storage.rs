//! `ManageStorage`: what the management of a queue needs of a store beyond `JobStorage`: pages
//! of a state's index, the job fields no transition touches (data, progress, logs), the
//! queue's settings, and wiping the queue. Each is a plain read or write: what to check, what
//! to change and which events follow are the callers' in `lifecycle::manage`.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::model::{Job, JobState, LogLine, Millis};

use super::super::flows::FlowStorage;

pub trait ManageStorage: FlowStorage {
    /// The largest payload (data, log line) the queue accepts, in bytes.
    fn max_payload_bytes(&self) -> usize;
    fn exists(&mut self, id: &str) -> CoreResult<bool>;
    /// `read` of the job `id` where it is (no copy where the store can avoid one).
    fn with_job<R>(&mut self, id: &str, read: impl FnOnce(&Job) -> R) -> CoreResult<Option<R>>;
    /// Up to `take` jobs of `state` from position `skip` of its order (claim order for waiting,
    /// due time for delayed, lock expiry for active, finish time for finished; each then by
    /// sequence), that order reversed unless `ascending`. Paged where the jobs are.
    fn page(
        &mut self,
        state: JobState,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<Job>>;
    /// How many waiting jobs have `priority`.
    fn count_waiting_at(&mut self, priority: u32) -> CoreResult<usize>;

    /// Replaces the data of job `id`; `false` if there is no such job.
    fn set_data(&mut self, id: &str, data: &str) -> CoreResult<bool>;
    /// Replaces the progress of job `id`; its id as the store keeps it, `None` if there is no
    /// such job.
    fn set_progress(&mut self, id: &str, progress: &Arc<str>) -> CoreResult<Option<Arc<str>>>;

    /// Appends `line`, written at `time`, to the log of job `id` (which exists); returns how
    /// many lines it holds.
    fn append_log(&mut self, id: &str, line: &str, time: Millis) -> CoreResult<usize>;
    /// Drops all but the newest `keep` lines of the log of job `id` (0: every line).
    fn keep_newest_logs(&mut self, id: &str, keep: usize) -> CoreResult<()>;
    /// How many lines the log of job `id` holds (0 for no such job).
    fn log_count(&mut self, id: &str) -> CoreResult<usize>;
    /// Up to `take` lines of the log of job `id` from position `skip`, oldest first, or newest
    /// first unless `ascending`.
    fn log_page(
        &mut self,
        id: &str,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<LogLine>>;

    fn set_paused(&mut self, paused: bool) -> CoreResult<()>;
    /// The windowed rate limit: at most `.0` claims per `.1` ms (`None`: no limit).
    fn set_rate_limit(&mut self, limit: Option<(u32, Millis)>) -> CoreResult<()>;
    /// When the manual rate-limit wait ends (0: none).
    fn set_rate_until(&mut self, until: Millis) -> CoreResult<()>;
    fn set_max_active(&mut self, max: Option<u32>) -> CoreResult<()>;

    /// Deletes everything of the queue: jobs, logs, events, dedup keys, job schedulers,
    /// dependencies, metrics, workers, settings and counters (the next automatic id is "1",
    /// the next event id 1, as after BullMQ deletes every key). Whoever waits for a job hears
    /// it is gone.
    fn wipe(&mut self) -> CoreResult<()>;
}
