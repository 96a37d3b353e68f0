//! `MemoryBackend`: `MemoryStore` behind a mutex, as a `JobBackend`. Operations finish at once
//! (their futures are ready); only the waits (`wait_for_job`, `wait_finished`, `wait_events`)
//! suspend, on a `Notify` that every change pings. The contract's concerns are implemented in
//! the files of the same names as in `local/` (`lifecycle`, `reads`, `admin`, `events`,
//! `dedup`, `flows`, `schedulers`, `observe`), calling the shared `jobs::lifecycle` on the
//! store, which `storage` and `manage` make its `JobStorage` and `ManageStorage`.
//!
//! The files are layered, each using only files below it (`scripts/jobs-imports`): `job_id`
//! and the store's plain tables (`dedup_keys`, `scheduler_map`, `flow_state`, and `observe`'s
//! `Observed`), which never name the store; `store`; then the files over it, which make it the
//! shared steps' storage (`storage`, `manage`, `dedup`, `schedulers`, `flow_sets`, `flows`,
//! `flow_group`) and implement the contract for `MemoryBackend`, defined here.

mod admin;
mod cancel_log;
mod cancels;
mod dedup;
mod dedup_keys;
mod events;
mod flow_group;
mod flow_sets;
mod flow_state;
mod flows;
mod groups;
mod job_id;
mod lifecycle;
mod manage;
mod observe;
mod prefetch;
mod reads;
mod scheduler_map;
mod schedulers;
mod storage;
mod store;

pub use store::{Claimed, MemoryStore};

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{oneshot, Notify};

use crate::error::CoreResult;

use crate::jobs::contract::{ready, BoxFuture};
use crate::jobs::model::wall_clock_ms;
use crate::jobs::model::{FinishedResult, Millis};
use crate::jobs::options::StoreConfig;
use flows::settle_flows;

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
        names_in_creation_order(&lock(&self.shared))
    }
}

fn names_in_creation_order(queues: &Queues) -> Vec<String> {
    let mut names: Vec<(usize, String)> = queues
        .names
        .iter()
        .map(|(n, i)| (*i, n.to_string()))
        .collect();
    names.sort();
    names.into_iter().map(|(_, n)| n).collect()
}

/// One queue of a `MemoryGroup`.
#[derive(Clone)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
    index: usize,
}

pub(super) fn finish(waiters: &mut Waiters, id: &str, result: impl FnOnce() -> FinishedResult) {
    if waiters.is_empty() {
        return; // (the common case: no hashing of the id per finished job)
    }
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

    /// The names of the queues of this queue's group, in creation order.
    fn group_queue_names(&self) -> Vec<String> {
        names_in_creation_order(&lock(&self.shared))
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

/// Tells waiters of jobs that a dedup replace removed.
pub(super) fn settle_replaced(state: &mut State) {
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
