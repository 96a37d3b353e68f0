//! `LocalBackend`: the job contract in a local SQLite file (WAL mode, full sync), shared safely
//! by several processes. Each process runs its operations on one writer thread that commits them
//! in batches (group commit); answers come after the commit, so an acknowledged change survives
//! the process being killed. Waits wake at once for changes made in this process, and through
//! the doorbell (`doorbell`, a watch on the file's directory) for commits of other processes.

mod dedup;
mod doorbell;
mod flow;
mod manage;
mod ops;
mod relay;
mod rows;
mod scheduler;
mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{CoreError, CoreResult};

use super::backend::{BoxFuture, Completion, Failure, JobBackend, NewJob};
use super::events::StreamEvent;
use super::flow::{AddedNode, Dependencies, DependencyCounts, FlowNode};
use super::memory_backend::wall_clock_ms;
use super::model::{FinishedResult, Job, JobState, Millis};
use super::scheduler::{JobScheduler, Template};
use super::store::{FailOutcome, StoreConfig};
use crate::schedule::ScheduleSpec;
use ops::Env;
use writer::{Call, Op, Shared};

/// How often a waiter re-reads the file for changes made by other processes when the doorbell
/// could not be set up.
const CROSS_PROCESS_POLL: Duration = Duration::from_millis(50);
/// How often it re-reads the file anyway with the doorbell: a backstop for a watch that misses
/// a commit (say, one made over a network filesystem), cheap enough to cost nothing idle.
const DOORBELL_BACKSTOP: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct LocalBackend {
    ops: Sender<Box<dyn Op>>,
    shared: Arc<Shared>,
    path: Arc<PathBuf>,
    queue: Arc<str>,
    /// The directory of this queue's file when it is `<dir>/<queue>.sqlite3` (flows may then
    /// span the queues whose files are beside it).
    dir: Option<Arc<PathBuf>>,
    max_payload_bytes: usize,
}

impl LocalBackend {
    /// Opens the queue file `path` for queue `queue` (see `schema::open` for what is refused).
    pub fn open(path: &Path, queue: &str, config: StoreConfig) -> CoreResult<Self> {
        let conn = schema::open(path, queue)?;
        let (ops, receiver) = channel();
        let changed = Arc::new(tokio::sync::Notify::new());
        let shared = Arc::new(Shared {
            ring: doorbell::Ring::start(path, Arc::clone(&changed)),
            changed,
            waiters: Mutex::new(Default::default()),
        });
        let mut env = Env::new(queue, config.max_payload_bytes, config.max_events);
        let dir = path
            .file_name()
            .filter(|name| name.to_string_lossy() == format!("{queue}.sqlite3"))
            .map(|_| path.parent().unwrap_or(Path::new("")).to_path_buf());
        env.dir = dir.clone();
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("lanemq-local-{queue}"))
            .spawn(move || writer::run(conn, env, receiver, thread_shared))
            .map_err(|e| CoreError::Storage(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            ops,
            shared,
            path: Arc::new(path.to_path_buf()),
            queue: Arc::from(queue),
            dir: dir.map(Arc::new),
            max_payload_bytes: config.max_payload_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long a waiter may go without re-reading the file.
    fn poll_period(&self) -> Duration {
        if self.shared.ring.is_some() {
            DOORBELL_BACKSTOP
        } else {
            CROSS_PROCESS_POLL
        }
    }

    /// Queues `f` for the writer thread, in a savepoint so a failure undoes what it wrote;
    /// resolves after the batch it ran in is committed.
    fn call<T, F>(&self, f: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        self.send(f, true)
    }

    /// Like `call`, for reads and for operations that check everything before they write.
    fn direct<T, F>(&self, f: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        self.send(f, false)
    }

    fn send<T, F>(&self, f: F, guarded: bool) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let sent = self.ops.send(Box::new(Call::new(f, reply, guarded)));
        Box::pin(async move {
            sent.map_err(|_| CoreError::Storage("the local queue is closed".into()))?;
            answer
                .await
                .map_err(|_| CoreError::Storage("the local queue is closed".into()))?
        })
    }

    /// Reserves, in their files, the ids of a flow's jobs in other queues (`flow::reserve_remote`),
    /// on a thread of its own: before this queue's transaction, which must not hold its lock
    /// while waiting for another file's.
    fn reserve_remote(&self, nodes: &[&FlowNode], path: &'static str) -> BoxFuture<flow::Reserved> {
        if !flow::spans_queues(nodes, &self.queue) {
            return Box::pin(async { Ok(flow::Reserved::new()) });
        }
        let owned: Vec<FlowNode> = nodes.iter().map(|n| (*n).clone()).collect();
        let (dir, home, max) = (self.dir.clone(), self.queue.clone(), self.max_payload_bytes);
        let (reply, answer) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("lanemq-local-flow".into())
            .spawn(move || {
                let refs: Vec<&FlowNode> = owned.iter().collect();
                let dir = dir.as_deref();
                let _ = reply.send(flow::reserve_remote(dir, &home, &refs, path, max));
            });
        Box::pin(async move {
            spawned.map_err(|e| CoreError::Storage(format!("cannot start a thread: {e}")))?;
            answer
                .await
                .map_err(|_| CoreError::Storage("the flow reservation stopped".into()))?
        })
    }

    /// Resolves `true` once `check` says so, `false` after `timeout` ms. `check` returns
    /// (done, when to check again at the latest, in ms since the epoch).
    fn wait_until<C>(&self, timeout: Option<Millis>, check: C) -> BoxFuture<bool>
    where
        C: Fn(&LocalBackend) -> BoxFuture<(bool, Option<Millis>)> + Send + Sync + 'static,
    {
        let backend = self.clone();
        Box::pin(async move {
            let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
            loop {
                let notified = backend.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let (done, recheck_at) = check(&backend).await?;
                if done {
                    return Ok(true);
                }
                let now = tokio::time::Instant::now();
                let mut until = now + backend.poll_period();
                if let Some(at) = recheck_at {
                    let wait = Duration::from_millis(at.saturating_sub(wall_clock_ms()));
                    until = until.min(now + wait);
                }
                if let Some(deadline) = deadline {
                    if now >= deadline {
                        return Ok(false);
                    }
                    until = until.min(deadline);
                }
                let _ = tokio::time::timeout_at(until, notified).await;
            }
        })
    }
}

fn refused(outcome: Result<(), String>) -> CoreResult<()> {
    outcome.map_err(CoreError::Refused)
}

impl JobBackend for LocalBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        self.call(move |conn, env| ops::add(conn, env, &job, now))
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        self.call(move |conn, env| ops::add_bulk(conn, env, &jobs, now))
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        self.call(move |conn, env| ops::claim(conn, env, &worker_id, lease, max_jobs, now))
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, |backend| {
            let ready = backend.direct(|conn, _| ops::next_ready_at(conn, wall_clock_ms()));
            Box::pin(async move {
                let now = wall_clock_ms();
                Ok(match ready.await? {
                    Some(at) if at <= now => (true, None),
                    other => (false, other),
                })
            })
        })
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        // Each item checks its lock before it writes, so a refused item writes nothing and
        // needs no savepoint of its own.
        self.direct(move |conn, env| {
            Ok(items
                .iter()
                .map(|c| ops::complete(conn, env, &c.id, &c.token, &c.result, now))
                .collect())
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        self.direct(move |conn, env| {
            Ok(items.iter().map(|f| ops::fail(conn, env, f, now)).collect())
        })
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        self.direct(move |conn, _| {
            Ok(items
                .iter()
                .map(|(id, token)| ops::renew(conn, id, token, lease, now))
                .collect())
        })
    }

    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        self.call(move |conn, env| ops::move_to_delayed(conn, env, &id, &token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| ops::release(conn, env, &id, &token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        self.call(move |conn, env| {
            // Also the pass that delivers flow messages a crash or a locked file held back.
            env.outbox_pending = true;
            ops::recover_stalled(conn, env, now)
        })
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        self.direct(move |conn, _| ops::holds_lock(conn, &id, &token, now))
    }

    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        self.direct(move |conn, _| rows::load(conn, &id))
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        self.direct(move |conn, _| Ok(rows::load(conn, &id)?.map(|j| j.state)))
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        self.direct(move |conn, _| manage::get_job_counts(conn, &states))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        self.direct(|conn, _| manage::count_pending(conn))
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        self.direct(move |conn, _| manage::counts_per_priority(conn, &priorities))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        self.direct(move |conn, _| manage::list_jobs(conn, &states, start, end, ascending))
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        self.direct(move |conn, _| manage::finished_result(conn, &id))
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        let backend = self.clone();
        Box::pin(async move {
            // Registered before the first look, so an outcome in this process cannot slip by.
            let (sender, mut receiver) = oneshot::channel();
            backend
                .shared
                .waiters
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(sender);
            let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
            loop {
                // Armed before the look: a commit of another process after it still wakes us.
                let notified = backend.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let look = id.clone();
                let result = backend
                    .direct(move |conn, _| match manage::finished_result(conn, &look)? {
                        FinishedResult::Missing => manage::outcome_from_events(conn, &look),
                        other => Ok(other),
                    })
                    .await?;
                if !matches!(result, FinishedResult::NotFinished(_)) {
                    return Ok(result);
                }
                let mut until = tokio::time::Instant::now() + backend.poll_period();
                if let Some(deadline) = deadline {
                    if tokio::time::Instant::now() >= deadline {
                        return Ok(result);
                    }
                    until = until.min(deadline);
                }
                tokio::select! {
                    told = &mut receiver => {
                        if let Ok(told) = told {
                            return Ok(told);
                        }
                        // The writer is gone: the next look reports the queue closed.
                        tokio::time::sleep_until(until).await;
                    }
                    () = &mut notified => {}
                    () = tokio::time::sleep_until(until) => {}
                }
            }
        })
    }

    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::promote(conn, env, &id, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::reschedule(conn, env, &id, until, now))
    }

    fn retry_job(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::retry_job(conn, env, &id, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.call(move |conn, _| manage::update_priority(conn, &id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.call(move |conn, env| manage::update_data(conn, env, &id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::update_progress(conn, env, &id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize> {
        self.call(move |conn, _| manage::add_log(conn, &id, &line, keep))
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<String>, usize)> {
        self.direct(move |conn, _| manage::get_logs(conn, &id, start, end, ascending))
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.call(move |conn, _| manage::clear_logs(conn, &id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.call(move |conn, _| manage::save_stacktrace(conn, &id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::remove(conn, env, &id, now))
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::set_paused(conn, env, true, now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::set_paused(conn, env, false, now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.direct(|conn, _| ops::is_paused(conn))
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.call(move |conn, env| manage::drain(conn, env, delayed, now))
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        self.call(move |conn, env| manage::clean(conn, env, grace, limit, state, now))
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        let outcome = self.call(move |conn, env| manage::obliterate(conn, env, force, now));
        Box::pin(async move { refused(outcome.await?) })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.call(move |conn, _| {
            if max == 0 || duration == 0 {
                return Err(CoreError::InvalidConfig(format!(
                    "invalid rate limit: {max} per {duration} ms (both must be > 0)"
                )));
            }
            rows::set_meta(conn, "rate_max", Some(&max.to_string()))?;
            rows::set_meta(conn, "rate_duration", Some(&duration.to_string()))
        })
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.direct(|conn, _| ops::rate_limit(conn))
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.call(|conn, _| {
            rows::set_meta(conn, "rate_max", None)?;
            rows::set_meta(conn, "rate_duration", None)
        })
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, _| ops::set_rate_limit_wait(conn, duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.direct(move |conn, _| {
            Ok(ops::rate_limited_until(conn, now)?.map_or(0, |end| end - now))
        })
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // The commit wakes this process's waiters, and other processes' through the doorbell.
        self.call(|conn, _| ops::remove_rate_limit_key(conn))
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // A job is one row whose state column is its state, written in one transaction: no
        // data can outlive its state.
        super::backend::ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.call(move |conn, _| {
            if max == Some(0) {
                return Err(CoreError::InvalidConfig(
                    "invalid max_active: 0 (must be >= 1)".into(),
                ));
            }
            rows::set_meta(conn, "max_active", max.map(|m| m.to_string()).as_deref())
        })
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.direct(|conn, _| ops::max_active(conn))
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.direct(|conn, _| {
            Ok(ops::max_active(conn)?.is_some_and(|max| {
                rows::count(conn, JobState::Active).unwrap_or(0) >= max as usize
            }))
        })
    }

    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.direct(move |conn, _| dedup::get_job_id(conn, &dedup_id, now))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, _| dedup::remove_key(conn, &dedup_id, now))
    }

    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        self.call(move |conn, env| scheduler::upsert(conn, env, &key, spec, template, now))
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.direct(move |conn, _| scheduler::get(conn, &key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.direct(move |conn, _| scheduler::list(conn, start, end, ascending))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.direct(|conn, _| scheduler::count(conn))
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| scheduler::remove(conn, env, &key, now))
    }

    fn add_flow(&self, root: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let reserving = self.reserve_remote(&[&root], "root");
        let backend = self.clone();
        Box::pin(async move {
            let reserved = reserving.await?;
            backend
                .call(move |conn, env| flow::add_flow(conn, env, root, reserved, now))
                .await
        })
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let nodes: Vec<&FlowNode> = children.iter().collect();
        let reserving = self.reserve_remote(&nodes, "children");
        let backend = self.clone();
        Box::pin(async move {
            let reserved = reserving.await?;
            backend
                .call(move |conn, env| {
                    flow::add_children(conn, env, &parent_id, &token, children, reserved, now)
                })
                .await
        })
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        self.direct(move |conn, _| flow::get_dependencies(conn, &parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        self.direct(move |conn, _| flow::get_dependencies_count(conn, &parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| flow::remove_child_dependency(conn, env, &child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        self.call(move |conn, env| flow::remove_unprocessed_children(conn, env, &parent_id, now))
    }

    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        self.direct(move |conn, _| manage::read_events(conn, start, end, limit))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        self.call(move |conn, _| manage::trim_events(conn, max_len))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        self.direct(|conn, _| manage::last_event_id(conn))
    }

    fn close(&self) -> BoxFuture<()> {
        self.call(|_, env| {
            env.closing = true;
            Ok(())
        })
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, move |backend| {
            let last = backend.direct(|conn, _| manage::last_event_id(conn));
            Box::pin(async move { Ok((last.await? > after, None)) })
        })
    }
}
