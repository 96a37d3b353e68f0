//! Edits of one job by hand, and of the queue as a whole (pause, drain, clean, limits).

use crate::jobs::model::{JobState, Millis};
use crate::jobs::search::JobFilter;

use super::{ready, BoxFuture};

pub trait JobAdmin: Send + Sync + 'static {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()>;
    /// Promotes delayed jobs to waiting, due or not, earliest first: at most `count` (`None`:
    /// all), as BullMQ's `promoteJobs`; returns how many. Each is `promote`'s transition (a
    /// `waiting` event); the in-process backends promote them all in one step.
    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize>;
    /// Promotes only the delayed jobs due at `now` (their delay or backoff over), earliest
    /// first, as every claim does first; returns how many. For a queue no worker claims from
    /// for a while (a paused queue, a dashboard's counts): its due jobs show as waiting.
    fn promote_due(&self, now: Millis) -> BoxFuture<usize>;
    /// Moves a delayed job's due time to `until` (BullMQ's `changeDelay`); any other state is
    /// refused with `JobState`, changing nothing.
    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()>;
    /// Delays a waiting or delayed job until `until` (its place in its priority kept).
    fn delay_job(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()>;
    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()>;
    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()>;
    fn update_data(&self, id: String, data: String) -> BoxFuture<()>;
    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()>;
    /// Appends a log line written at `now`; with `keep > 0` only the newest `keep` stay.
    /// Resolves to how many lines the log holds.
    fn add_log(&self, id: String, line: String, keep: usize, now: Millis) -> BoxFuture<usize>;
    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()>;
    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()>;
    fn remove(&self, id: String, now: Millis) -> BoxFuture<()>;
    /// Removes up to `limit` (`None`: all) jobs of `states` meeting `filter`, each as `remove`
    /// removes it (one held by a worker stays); returns how many. Every backend runs
    /// `jobs::remove_jobs` over its own `search_jobs` and `remove`.
    fn remove_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        limit: Option<usize>,
        now: Millis,
    ) -> BoxFuture<usize>;

    fn pause(&self, now: Millis) -> BoxFuture<()>;
    fn resume(&self, now: Millis) -> BoxFuture<()>;
    fn is_paused(&self) -> BoxFuture<bool>;
    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize>;
    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>>;
    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()>;
    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()>;
    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>>;
    fn clear_rate_limit(&self) -> BoxFuture<()>;
    /// Holds every claim back for `duration` ms from `now` (BullMQ's `rateLimit`): claims
    /// return nothing until then, on every worker. A later call replaces the wait; the
    /// windowed limit still applies (the later end wins). `InvalidConfig` for 0 (or an end
    /// past `MAX_RATE_LIMIT_END`), changing nothing.
    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()>;
    /// How long the rate limits still hold claims back at `now`, in ms: the manual wait, or
    /// the rest of the window when its claims are used up; 0 when claims may go on.
    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis>;
    /// Ends the manual wait and the current window (the next claim opens a new one), waking
    /// idle workers.
    fn remove_rate_limit_key(&self) -> BoxFuture<()>;
    /// Removes the data of jobs that no state references (left by a crash or a bug) and
    /// returns how many. Only a store that is not one transaction can hold such jobs.
    fn remove_orphaned_jobs(&self) -> BoxFuture<usize>;
    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()>;
    fn get_max_active(&self) -> BoxFuture<Option<u32>>;
    fn is_maxed(&self) -> BoxFuture<bool>;

    /// Releases what the backend holds (files, connections) once pending operations are done;
    /// later calls fail. Backends holding nothing need not override it.
    fn close(&self) -> BoxFuture<()> {
        ready(Ok(()))
    }
}
