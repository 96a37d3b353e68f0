//! `MemoryBackend`: `MemoryStore` behind a mutex, as a `JobBackend`. Operations finish at once
//! (their futures are ready); only the waits (`wait_for_job`, `wait_finished`, `wait_events`)
//! suspend, on a `Notify` that every change pings.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{oneshot, Notify};

use crate::error::CoreResult;
use crate::schedule::ScheduleSpec;

use super::backend::{ready, BoxFuture, Completion, Failure, JobBackend, NewJob};
use super::events::StreamEvent;
use super::flow::{AddedNode, Dependencies, DependencyCounts, FlowNode};
use super::memory_flow::{self, settle_flows};
use super::model::{FinishedResult, Job, JobState, Millis};
use super::scheduler::{JobScheduler, Template};
use super::store::{FailOutcome, MemoryStore, StoreConfig, STALLED_REASON};

type Waiters = HashMap<String, Vec<oneshot::Sender<FinishedResult>>>;

pub(super) struct State {
    pub(super) store: MemoryStore,
    /// `wait_finished` callers by job id; told the outcome when it happens, so a job removed on
    /// completion still reports its result.
    pub(super) waiters: Waiters,
}

/// The queues of a group, by name.
#[derive(Default)]
pub(super) struct Queues {
    pub(super) states: Vec<State>,
    names: HashMap<Arc<str>, usize>,
}

impl Queues {
    pub(super) fn index(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }
}

#[derive(Default)]
struct Shared {
    queues: Mutex<Queues>,
    changed: Notify,
}

/// Queues that share one lock, so that a flow spanning them is one atomic step (like the queues
/// of one Redis server). Queues built from the same group under the same name share one store.
#[derive(Clone, Default)]
pub struct MemoryGroup {
    shared: Arc<Shared>,
}

impl MemoryGroup {
    pub fn new() -> Self {
        Self::default()
    }

    /// The queue `name` of this group: a new store with `config`, or the existing one (whose
    /// configuration stays).
    pub fn queue(&self, name: &str, config: StoreConfig) -> MemoryBackend {
        let mut queues = lock(&self.shared);
        let index = match queues.index(name) {
            Some(index) => index,
            None => {
                let mut store = MemoryStore::new(config);
                store.set_queue_name(name);
                queues.states.push(State {
                    store,
                    waiters: HashMap::new(),
                });
                let index = queues.states.len() - 1;
                queues.names.insert(Arc::from(name), index);
                index
            }
        };
        MemoryBackend {
            shared: Arc::clone(&self.shared),
            index,
        }
    }

    /// The names of the group's queues, in creation order.
    pub fn queue_names(&self) -> Vec<String> {
        let queues = lock(&self.shared);
        let mut names: Vec<(usize, String)> = queues
            .names
            .iter()
            .map(|(n, i)| (*i, n.to_string()))
            .collect();
        names.sort();
        names.into_iter().map(|(_, n)| n).collect()
    }
}

/// One queue of a `MemoryGroup`.
#[derive(Clone)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
    index: usize,
}

pub fn wall_clock_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis)
}

pub(super) fn finish(waiters: &mut Waiters, id: &str, result: impl FnOnce() -> FinishedResult) {
    if let Some(list) = waiters.remove(id) {
        let result = result();
        for waiter in list {
            let _ = waiter.send(result.clone());
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Queues> {
    // A panic while holding the lock leaves the stores as they were before the failed call
    // (operations validate before they write), so the poisoned data is still usable.
    shared.queues.lock().unwrap_or_else(|e| e.into_inner())
}

/// The group's lock, seen as one queue's state.
struct QueueGuard<'a> {
    queues: MutexGuard<'a, Queues>,
    index: usize,
}

impl Deref for QueueGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.queues.states[self.index]
    }
}

impl DerefMut for QueueGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.queues.states[self.index]
    }
}

impl MemoryBackend {
    /// A queue of its own (a private group), named "default".
    pub fn new(config: StoreConfig) -> Self {
        MemoryGroup::new().queue("default", config)
    }

    fn lock(&self) -> QueueGuard<'_> {
        QueueGuard {
            queues: lock(&self.shared),
            index: self.index,
        }
    }

    /// Runs a read-only operation.
    fn read<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut MemoryStore) -> CoreResult<T>,
    ) -> BoxFuture<T> {
        ready(op(&mut self.lock().store))
    }

    /// Runs an operation that may change what a waiter is waiting for.
    fn write<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut State) -> CoreResult<T>,
    ) -> BoxFuture<T> {
        self.write_group(|queues, index| op(&mut queues.states[index]))
    }

    /// Runs an operation that may touch the group's other queues; what children told their
    /// parents is delivered before the lock is let go.
    fn write_group<T: Send + 'static>(
        &self,
        op: impl FnOnce(&mut Queues, usize) -> CoreResult<T>,
    ) -> BoxFuture<T> {
        let result = {
            let mut queues = lock(&self.shared);
            let result = op(&mut queues, self.index);
            settle_flows(&mut queues);
            result
        };
        self.shared.changed.notify_waiters();
        ready(result)
    }

    /// Resolves `true` once `check(store, now)` holds (`Some(ms)` from it: check again then),
    /// `false` after `timeout`.
    fn wait_until(
        &self,
        timeout: Option<Millis>,
        check: impl Fn(&mut MemoryStore, Millis) -> (bool, Option<Millis>) + Send + 'static,
    ) -> BoxFuture<bool> {
        if check(&mut self.lock().store, wall_clock_ms()).0 {
            return ready(Ok(true));
        }
        let backend = self.clone();
        Box::pin(async move {
            let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
            loop {
                let notified = backend.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let now = wall_clock_ms();
                let (done, recheck_at) = check(&mut backend.lock().store, now);
                if done {
                    return Ok(true);
                }
                let mut until = recheck_at.map(|at| {
                    tokio::time::Instant::now() + Duration::from_millis(at.saturating_sub(now))
                });
                if let Some(deadline) = deadline {
                    if tokio::time::Instant::now() >= deadline {
                        return Ok(false);
                    }
                    until = Some(until.map_or(deadline, |u| u.min(deadline)));
                }
                match until {
                    Some(at) => {
                        let _ = tokio::time::timeout_at(at, notified).await;
                    }
                    None => notified.await,
                }
            }
        })
    }
}

impl JobBackend for MemoryBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        self.write(|s| {
            let added = s.store.add(&job.name, &job.data, job.options, now);
            settle_replaced(s);
            added
        })
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        let jobs = jobs
            .into_iter()
            .map(|j| (j.name, j.data, j.options))
            .collect();
        self.write(|s| {
            let added = s.store.add_bulk(jobs, now);
            settle_replaced(s);
            added
        })
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        self.write(|s| Ok(s.store.claim(&worker_id, lease, max_jobs, now)))
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, |store, now| match store.next_ready_at(now) {
            Some(at) if at <= now => (true, None),
            other => (false, other),
        })
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        self.write(|s| {
            Ok(items
                .into_iter()
                .map(|c| {
                    let result: Arc<str> = Arc::from(c.result);
                    let outcome = s.store.complete(&c.id, &c.token, Arc::clone(&result), now);
                    if outcome.is_ok() {
                        finish(&mut s.waiters, &c.id, || {
                            FinishedResult::Completed(Some(result))
                        });
                    }
                    outcome
                })
                .collect())
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        self.write(|s| {
            Ok(items
                .into_iter()
                .map(|f| {
                    let outcome = s.store.fail(
                        &f.id,
                        &f.token,
                        &f.error,
                        f.stacktrace.as_deref(),
                        f.retry,
                        f.delay,
                        now,
                    );
                    if matches!(outcome, Ok(FailOutcome::Failed)) {
                        finish(&mut s.waiters, &f.id, || FinishedResult::Failed(f.error));
                    }
                    outcome
                })
                .collect())
        })
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        self.read(|store| {
            Ok(items
                .iter()
                .map(|(id, token)| store.renew(id, token, lease, now))
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
        self.write(|s| s.store.move_to_delayed(&id, &token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.release(&id, &token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        self.write(|s| {
            let (recovered, failed) = s.store.recover_stalled(now);
            for id in &failed {
                // Told directly: retention may already have removed the job.
                finish(&mut s.waiters, id, || {
                    FinishedResult::Failed(STALLED_REASON.into())
                });
            }
            Ok((recovered, failed))
        })
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        self.read(|store| {
            Ok(store
                .get_job(&id)
                .and_then(|j| j.lock)
                .is_some_and(|lock| lock.token == token && lock.expires_at > now))
        })
    }

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

    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.promote(&id, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.reschedule(&id, until, now))
    }

    fn retry_job(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.retry_job(&id, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.write(|s| s.store.update_priority(&id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.read(|store| store.update_data(&id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.update_progress(&id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize> {
        self.read(|store| store.add_log(&id, &line, keep))
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

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.read(|store| store.clear_logs(&id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.read(|store| store.save_stacktrace(&id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.remove(&id, now)?;
            finish(&mut s.waiters, &id, || FinishedResult::Missing);
            Ok(())
        })
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.pause(now);
            Ok(())
        })
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.resume(now);
            Ok(())
        })
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.read(|store| Ok(store.is_paused()))
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.write(|s| {
            let removed = s.store.drain(delayed, now);
            settle_missing(s);
            Ok(removed)
        })
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        self.write(|s| {
            let removed = s.store.clean(grace, limit, state, now);
            settle_missing(s);
            Ok(removed)
        })
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.obliterate(force, now)?;
            settle_missing(s);
            Ok(())
        })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.set_rate_limit(max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.read(|store| Ok(store.get_rate_limit()))
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.write(|s| {
            s.store.clear_rate_limit();
            Ok(())
        })
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.rate_limit(duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.read(|store| Ok(store.get_rate_limit_ttl(now)))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // A write: waiters learn at once that claims may go on.
        self.write(|s| {
            s.store.remove_rate_limit_key();
            Ok(())
        })
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // Every job is in its state's index by construction (one lock, no partial writes).
        ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.write(|s| s.store.set_max_active(max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.read(|store| Ok(store.get_max_active()))
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.read(|store| Ok(store.is_maxed()))
    }

    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.read(|store| Ok(store.get_deduplication_job_id(&dedup_id, now)))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| Ok(s.store.remove_deduplication_key(&dedup_id, now)))
    }

    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        self.write(|s| {
            let pending = s.store.upsert_scheduler(&key, spec, template, now);
            settle_missing(s);
            pending
        })
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.read(|store| Ok(store.get_scheduler(&key)))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.read(|store| Ok(store.list_schedulers(start, end, ascending)))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.read(|store| Ok(store.count_schedulers()))
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| {
            let existed = s.store.remove_scheduler(&key, now);
            settle_missing(s);
            Ok(existed)
        })
    }

    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        self.write_group(|queues, at| memory_flow::add_flow(queues, at, flow, now))
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.write_group(|queues, at| {
            memory_flow::add_children(queues, at, &parent_id, &token, children, now)
        })
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        self.read(|store| store.get_dependencies(&parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        self.read(|store| store.get_dependencies_count(&parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        self.write_group(|queues, at| {
            memory_flow::remove_child_dependency(queues, at, &child_id, now)
        })
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        self.write_group(|queues, at| {
            memory_flow::remove_unprocessed_children(queues, at, &parent_id, now)
        })
    }

    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        self.read(|store| Ok(store.read_events(start, end, limit)))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        self.read(|store| Ok(store.trim_events(max_len)))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        self.read(|store| Ok(store.last_event_id()))
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, move |store, _| {
            (store.last_event_id() > after, None)
        })
    }
}

/// Tells waiters of jobs that a dedup replace removed.
fn settle_replaced(state: &mut State) {
    for id in state.store.take_replaced() {
        finish(&mut state.waiters, &id, || FinishedResult::Missing);
    }
}

/// Tells waiters of jobs that no longer exist.
fn settle_missing(state: &mut State) {
    let gone: Vec<String> = state
        .waiters
        .keys()
        .filter(|id| state.store.get_job(id).is_none())
        .cloned()
        .collect();
    for id in gone {
        finish(&mut state.waiters, &id, || FinishedResult::Missing);
    }
}
