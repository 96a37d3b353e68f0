//! `JobBackend`: the job contract every backend implements (memory, local file, Redis). Methods
//! return boxed `'static` futures so the bindings can await any backend the same way; an
//! in-process backend returns futures that are ready at once, and the bindings then skip the
//! async runtime entirely.

use std::future::Future;
use std::pin::Pin;

use crate::error::CoreResult;

use super::events::StreamEvent;
use super::flow::{unsupported, AddedNode, Dependencies, DependencyCounts, FlowNode};
use super::model::{FinishedResult, Job, JobState, Millis};
use super::options::JobOptions;
use super::scheduler::{JobScheduler, Template};
use super::store::FailOutcome;
use crate::schedule::ScheduleSpec;

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = CoreResult<T>> + Send + 'static>>;

/// A future that is already resolved.
pub fn ready<T: Send + 'static>(value: CoreResult<T>) -> BoxFuture<T> {
    Box::pin(std::future::ready(value))
}

#[derive(Debug, Clone)]
pub struct NewJob {
    pub name: String,
    pub data: String,
    pub options: JobOptions,
}

#[derive(Debug, Clone)]
pub struct Completion {
    pub id: String,
    pub token: String,
    pub result: String,
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub id: String,
    pub token: String,
    pub error: String,
    pub stacktrace: Option<String>,
    pub retry: bool,
    /// Overrides the backoff when set (milliseconds).
    pub delay: Option<Millis>,
}

/// The job contract. `now` is milliseconds since the Unix epoch, chosen by the caller; the
/// waits use the wall clock. Batch methods report per item, in input order.
pub trait JobBackend: Send + Sync + 'static {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)>;
    /// All or nothing: every job is validated before any is written.
    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>>;

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>>;
    /// Resolves `true` once a claim may return a job, `false` after `timeout` ms.
    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool>;

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>>;
    /// `complete_many`, then `claim`: what a worker does when jobs finish and slots free up,
    /// in one step (Redis: one script call). Backends that apply calls in the order they are
    /// made get it by composition.
    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<(Vec<CoreResult<()>>, Vec<Job>)> {
        let completed = self.complete_many(items, now);
        let claimed = self.claim(worker_id, lease, max_jobs, now);
        Box::pin(async move { Ok((completed.await?, claimed.await?)) })
    }
    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>>;
    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>>;
    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()>;
    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()>;
    /// Returns (recovered ids, failed ids).
    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)>;
    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool>;

    fn get_job(&self, id: String) -> BoxFuture<Option<Job>>;
    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>>;
    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>>;
    fn count_pending(&self) -> BoxFuture<usize>;
    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>>;
    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>>;
    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult>;
    /// Resolves when the job completes, fails for good or disappears; after `timeout` ms it
    /// resolves with `NotFinished`.
    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult>;

    fn promote(&self, id: String, now: Millis) -> BoxFuture<()>;
    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()>;
    fn retry_job(&self, id: String, now: Millis) -> BoxFuture<()>;
    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()>;
    fn update_data(&self, id: String, data: String) -> BoxFuture<()>;
    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()>;
    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize>;
    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<String>, usize)>;
    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()>;
    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()>;
    fn remove(&self, id: String, now: Millis) -> BoxFuture<()>;

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

    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>>;
    fn trim_events(&self, max_len: usize) -> BoxFuture<usize>;
    fn last_event_id(&self) -> BoxFuture<u64>;
    /// Resolves `true` once an event with an id above `after` exists, `false` after `timeout`.
    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool>;

    /// The id of the job holding the dedup key `dedup_id`, or `None` when the key is not held
    /// at `now` (absent, expired, or, without a ttl, its job finished).
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>>;
    /// Deletes the dedup key `dedup_id` (and a keep_last job stored on it), so the next add with
    /// that id is added; `true` when a key that was held (or stored a job) was deleted.
    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool>;

    /// Creates or updates the job scheduler `key` (see `jobs::scheduler` for what an upsert
    /// decides), in one atomic step; resolves to its pending occurrence. Invalid input is
    /// `InvalidConfig` and writes nothing.
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job>;
    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>>;
    /// Schedulers by next run time (then key), from index `start` to `end` inclusive (`end < 0`
    /// counts from the end); `ascending = false` reverses the order.
    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>>;
    fn count_schedulers(&self) -> BoxFuture<usize>;
    /// Removes the scheduler `key` and its pending occurrence if that has not started; `true`
    /// if the scheduler existed.
    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool>;

    /// Adds a flow (see `jobs::flow`): every node checked first (its options, its queue, a free
    /// custom id), then all written in one step; a node with children waits for them in
    /// waiting_children. Backends without flows refuse (`Refused`).
    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let _ = (flow, now);
        ready(Err(unsupported()))
    }
    /// Adds children to the active job `parent_id` held by `token` and parks it in
    /// waiting_children (lock released, no attempt used) until they are done.
    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let _ = (parent_id, token, children, now);
        ready(Err(unsupported()))
    }
    /// A page of the dependencies of `parent_id`: each set (processed, unprocessed, failed,
    /// ignored) from its cursor, at most `count` of each (`None`: all).
    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        let _ = (parent_id, cursors, count);
        ready(Err(unsupported()))
    }
    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        let _ = parent_id;
        ready(Err(unsupported()))
    }
    /// Detaches `child_id` from its parent; `true` if it was a pending dependency (the parent
    /// is released if it was the last).
    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        let _ = (child_id, now);
        ready(Err(unsupported()))
    }
    /// Removes the unprocessed children of `parent_id` that no worker holds; returns how many.
    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        let _ = (parent_id, now);
        ready(Err(unsupported()))
    }

    /// Releases what the backend holds (files, connections) once pending operations are done;
    /// later calls fail. Backends holding nothing need not override it.
    fn close(&self) -> BoxFuture<()> {
        ready(Ok(()))
    }
}
