//! `JobStorage`: what the shared transitions need of a backend's store. Small on purpose: a job
//! changed in place, a few ordered index reads, the queue's gate, events, its dedup keys and job
//! schedulers as tables (`DedupTable`, `SchedulerTable`, in `tables`: the shared `dedup` and
//! `schedulers` modules decide what is written to them), and the flow reactions that may reach
//! another queue (`tell_parent`, `settle_removals`, ...), which each store delivers its own way
//! (its dependency sets are `flows::DependencySets`).

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::events::Text;
use crate::jobs::flow::ParentRef;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::cancel_table::CancelTable;
use super::finished::Finished;
use super::tables::{DedupTable, SchedulerTable};

/// What decides whether a claim may hand out jobs now: the queue's settings and its rate
/// window, read in one go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    pub paused: bool,
    pub max_active: Option<u32>,
    /// (max claims, per duration ms).
    pub rate_limit: Option<(u32, Millis)>,
    /// The current window of the rate limit: when it started, how many claims it gave.
    pub window: (Millis, u64),
    /// When the manual rate-limit wait ends (0: none).
    pub until: Millis,
}

impl Gate {
    /// Until when the rate limits hold claims back at `now`, if they do
    /// (`model::rate_limited_until`).
    pub fn limited_until(&self, now: Millis) -> Option<Millis> {
        let (start, used) = self.window;
        crate::jobs::model::rate_limited_until(now, self.until, self.rate_limit, start, used)
    }
}

/// One field of an event, as a transition emits it.
pub type EventField = Option<(&'static str, Text)>;

pub trait JobStorage: DedupTable + SchedulerTable + CancelTable {
    /// A copy of the job `id`, if it exists.
    fn load(&mut self, id: &str) -> CoreResult<Option<Job>>;
    /// Runs `change` on the job `id` and writes what it changed of the job's lifecycle (state,
    /// placement, attempts, timestamps, outcome, stack traces, lock; not name, data or
    /// options); `None` if there is no such job. `change` checks before it changes anything:
    /// when it returns an error the job must be as it was. A store keeps its indexes and
    /// per-state counts right, and forgets that it reported the queue drained when the job is
    /// now waiting.
    fn update<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
    ) -> CoreResult<Option<R>>;
    /// `update` for a change that edits the job's options too.
    fn update_options<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
    ) -> CoreResult<Option<R>> {
        self.update(id, change)
    }
    /// Writes a new job (every field).
    fn insert(&mut self, job: Job) -> CoreResult<()>;
    /// The id of a job about to be created: its custom id, else the queue's next automatic one.
    fn auto_id(&mut self, options: &JobOptions) -> CoreResult<Arc<str>>;
    /// Jobs added together usually share their name: a store may hand out the last one's.
    fn intern_name(&mut self, name: &str) -> Arc<str> {
        Arc::from(name)
    }
    /// Deletes a job and what belongs to it alone (its logs, its own dependency sets); its
    /// dedup key and its parent are the caller's business. Returns its state if it existed.
    fn delete(&mut self, id: &str) -> CoreResult<Option<JobState>>;
    /// Removes a job by hand (not by retention): it releases its dedup key, an unfinished child
    /// is noted for its parent (told by `settle_removals`), and whoever waits for it hears it
    /// is gone.
    fn remove_job(&mut self, id: &Arc<str>, now: Millis) -> CoreResult<()>;
    /// The parents of the children removed so far hear of it. With `hard` (a drain or clean),
    /// a parent of this queue left without pending children is deleted instead of released,
    /// and so on up the tree.
    fn settle_removals(&mut self, now: Millis, hard: bool) -> CoreResult<()>;
    /// The name of this store's queue.
    fn queue_name(&self) -> &str;
    /// Every child of `id` (pending, completed, failed or ignored), wherever it is, sorted by
    /// key (`<queue>:<id>`).
    fn children(&mut self, id: &str) -> CoreResult<Vec<ParentRef>>;
    /// For a child in another queue: the id of a job of its tree there that a live lock holds.
    fn remote_locked(&mut self, child: &ParentRef, now: Millis) -> CoreResult<Option<String>>;
    /// Removes a child in another queue with its tree there (`remote_locked` said none is
    /// held).
    fn remove_remote(&mut self, child: &ParentRef, now: Millis) -> CoreResult<()>;
    /// What a drain removes: waiting jobs, and with `delayed` the delayed ones, except the job
    /// schedulers' pending occurrences (as BullMQ's drain).
    fn drainable(&mut self, delayed: bool) -> CoreResult<Vec<Arc<str>>>;
    /// What a clean removes: up to `limit` jobs in `state`, in its order, that finished (or,
    /// unfinished, were created) at or before `cutoff` and hold no live lock at `now`; never a
    /// job scheduler's pending occurrence (as BullMQ's clean).
    fn cleanable(
        &mut self,
        state: JobState,
        cutoff: Millis,
        limit: usize,
        now: Millis,
    ) -> CoreResult<Vec<Arc<str>>>;
    /// Reserves `n` sequence numbers; returns the first.
    fn reserve_seq(&mut self, n: u64) -> CoreResult<u64>;

    /// Takes up to `n` waiting jobs in claim order (priority, then position), runs `change`
    /// on each and writes it as `update` does; returns them as changed.
    fn claim_head(&mut self, n: usize, change: impl FnMut(&mut Job)) -> CoreResult<Vec<Job>>;
    /// The delayed jobs due at `now`, by due time then sequence.
    fn due_delayed(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>>;
    /// The active jobs whose lock expired at `now`, by expiry then sequence.
    fn expired_active(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>>;
    fn count(&mut self, state: JobState) -> CoreResult<usize>;
    /// The ids of the `n` jobs that finished first in `state` (by finish time, then sequence).
    fn oldest_finished(&mut self, state: JobState, n: usize) -> CoreResult<Vec<Arc<str>>>;
    /// How many jobs in `state` finished at or before `cutoff`.
    fn count_finished_by(&mut self, state: JobState, cutoff: Millis) -> CoreResult<usize>;

    fn gate(&mut self) -> CoreResult<Gate>;
    fn set_rate_window(&mut self, window: (Millis, u64)) -> CoreResult<()>;
    /// `true` once per stretch of empty waiting (the caller then emits `drained`).
    fn report_drained(&mut self) -> CoreResult<bool>;

    fn event(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        field: EventField,
    ) -> CoreResult<()>;
    /// `event` with two fields.
    fn event_fields(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        fields: [EventField; 2],
    ) -> CoreResult<()>;

    /// Whoever waits in this process for a job that finished is told (after the commit, for
    /// a store that has one).
    fn tell_waiters(&mut self, finished: &Finished) -> CoreResult<()>;
    /// Tells a finished job's flow parent (`jobs::flow`), wherever it lives.
    fn tell_parent(&mut self, finished: &Finished, now: Millis) -> CoreResult<()>;
    /// Before a finished job is retried by hand (its dedup key taken back, `dedup::on_retry`):
    /// its flow parent counts it again.
    fn before_retry(&mut self, job: &Job, now: Millis) -> CoreResult<()>;
}
