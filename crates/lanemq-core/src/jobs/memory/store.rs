//! `MemoryStore`: one queue's jobs, with an index per state so that claiming, promoting and
//! stall recovery are O(log n), never a scan of all jobs. Each queue has its own store (and,
//! in the bindings, its own lock), so one queue never blocks another. The transitions and the
//! management are `lifecycle`'s and `lifecycle::manage`'s, over this store as `JobStorage`
//! (`storage.rs`) and `ManageStorage` (`manage.rs`); `add` and `add_bulk` stay as the store's
//! entry points for callers that hold a name, data and options (flows, tests, examples).
//!
//! The store's side tables are plain types below it that never name it (`dedup_keys`,
//! `scheduler_map`, `flow_state`, `observe`, with `job_id`); the files that make it the
//! storage of the shared steps (`storage`, `manage`, `dedup`, `schedulers`, `flow_sets`,
//! `flows`, `flow_group`) are above it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::jobs::contract::NewJob;
use crate::jobs::lifecycle;

use crate::error::{CoreError, CoreResult};

use super::cancel_log::CancelLog;
use super::dedup_keys::DedupKeys;
use super::flow_state::Flows;
use super::job_id::JobId;
use super::observe::Observed;
use super::scheduler_map::Schedulers;
use crate::jobs::events::EventLog;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::{JobOptions, StoreConfig};

/// A job handed to a worker by `claim`.
pub type Claimed = Job;

/// The message of `expect` on the store's own results: the shared steps return `CoreResult` for
/// the stores that do I/O, and over this one they never fail.
pub(super) const NO_FAILURE: &str = "the memory store does not fail";

/// Where a job is filed in its state's index (the index's key without the id), read off the
/// job, so that a change can move it without looking the job up again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IndexEntry {
    /// (priority, order)
    Waiting((u32, i64)),
    /// (due, seq)
    Delayed((Millis, u64)),
    /// (lock expiry, seq)
    Active((Millis, u64)),
    WaitingChildren(u64),
    /// (finished, seq)
    Completed((Millis, u64)),
    Failed((Millis, u64)),
}

impl IndexEntry {
    pub(super) fn of(job: &Job) -> Self {
        match job.state {
            JobState::Waiting => IndexEntry::Waiting((job.priority, job.order)),
            JobState::Delayed => IndexEntry::Delayed((job.delay_until, job.seq)),
            JobState::Active => {
                IndexEntry::Active((job.lock.as_ref().map_or(0, |l| l.expires_at), job.seq))
            }
            JobState::WaitingChildren => IndexEntry::WaitingChildren(job.seq),
            JobState::Completed => IndexEntry::Completed((job.finished_on.unwrap_or(0), job.seq)),
            JobState::Failed => IndexEntry::Failed((job.finished_on.unwrap_or(0), job.seq)),
        }
    }
}

#[derive(Debug)]
pub struct MemoryStore {
    pub(super) config: StoreConfig,
    pub(super) jobs: HashMap<JobId, Job, foldhash::fast::RandomState>,
    /// (priority, order) -> id; priority 0 sorts first, as in BullMQ.
    pub(super) waiting: BTreeMap<(u32, i64), JobId>,
    pub(super) delayed: BTreeSet<(Millis, u64, JobId)>,
    /// By lock expiry (then sequence, so ties never compare ids), for stall recovery.
    pub(super) active: BTreeSet<(Millis, u64, JobId)>,
    pub(super) waiting_children: BTreeSet<(u64, JobId)>,
    pub(super) completed: BTreeSet<(Millis, u64, JobId)>,
    pub(super) failed: BTreeSet<(Millis, u64, JobId)>,
    pub(super) paused: bool,
    pub(super) rate_limit: Option<(u32, Millis)>,
    /// The current window of the rate limit: when it started, how many claims it gave.
    pub(super) rate_window: (Millis, u32),
    /// When the manual rate-limit wait (`rate_limit`) ends; 0 for none.
    pub(super) rate_until: Millis,
    pub(super) max_active: Option<u32>,
    pub(super) events: EventLog,
    pub(super) dedup: DedupKeys,
    pub(super) schedulers: Schedulers,
    pub(super) flow: Flows,
    /// Cancel requests of active jobs, and the log workers listen to (`cancels.rs`).
    pub(super) cancels: CancelLog,
    /// Metrics and workers (`observe.rs`): not jobs, kept beside them.
    pub(super) observed: Observed,
    pub(super) seq: u64,
    pub(super) next_auto_id: u64,
    pub(super) drained_reported: bool,
    /// The progress of a job that reported none, shared by all of them.
    last_name: Option<Arc<str>>,
}

fn new_job(name: &str, data: &str, options: JobOptions) -> NewJob {
    NewJob {
        name: name.to_owned(),
        data: data.to_owned(),
        options,
    }
}

impl MemoryStore {
    pub fn new(config: StoreConfig) -> Self {
        Self {
            events: EventLog::new(config.max_events),
            dedup: DedupKeys::default(),
            schedulers: Schedulers::default(),
            flow: Flows::default(),
            cancels: CancelLog::default(),
            observed: Observed::default(),
            config,
            jobs: HashMap::default(),
            waiting: BTreeMap::new(),
            delayed: BTreeSet::new(),
            active: BTreeSet::new(),
            waiting_children: BTreeSet::new(),
            completed: BTreeSet::new(),
            failed: BTreeSet::new(),
            paused: false,
            rate_limit: None,
            rate_window: (0, 0),
            rate_until: 0,
            max_active: None,
            seq: 0,
            next_auto_id: 1,
            drained_reported: false,
            last_name: None,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    // ------------------------------------------------------------------ indexes

    pub(super) fn index_insert(&mut self, id: &JobId) {
        let entry = IndexEntry::of(&self.jobs[id]);
        self.index_put(entry, Arc::clone(id));
    }

    pub(super) fn index_remove(&mut self, id: &JobId) {
        let entry = IndexEntry::of(&self.jobs[id]);
        self.index_take(entry, id);
    }

    /// Files `id` under `entry` in its state's index.
    pub(super) fn index_put(&mut self, entry: IndexEntry, id: JobId) {
        match entry {
            IndexEntry::Waiting(key) => {
                self.waiting.insert(key, id);
                self.drained_reported = false;
            }
            IndexEntry::Delayed((due, seq)) => {
                self.delayed.insert((due, seq, id));
            }
            IndexEntry::Active((expires, seq)) => {
                self.active.insert((expires, seq, id));
            }
            IndexEntry::WaitingChildren(seq) => {
                self.waiting_children.insert((seq, id));
            }
            IndexEntry::Completed((finished, seq)) => {
                self.completed.insert((finished, seq, id));
            }
            IndexEntry::Failed((finished, seq)) => {
                self.failed.insert((finished, seq, id));
            }
        }
    }

    /// Takes `id`, filed under `entry`, out of its state's index.
    pub(super) fn index_take(&mut self, entry: IndexEntry, id: &JobId) {
        let id = Arc::clone(id);
        match entry {
            IndexEntry::Waiting(key) => {
                self.waiting.remove(&key);
            }
            IndexEntry::Delayed((due, seq)) => {
                self.delayed.remove(&(due, seq, id));
            }
            IndexEntry::Active((expires, seq)) => {
                self.active.remove(&(expires, seq, id));
            }
            IndexEntry::WaitingChildren(seq) => {
                self.waiting_children.remove(&(seq, id));
            }
            IndexEntry::Completed((finished, seq)) => {
                self.completed.remove(&(finished, seq, id));
            }
            IndexEntry::Failed((finished, seq)) => {
                self.failed.remove(&(finished, seq, id));
            }
        }
    }

    /// Jobs added together usually share their name: reuse the last one's.
    pub(super) fn intern_name(&mut self, name: &str) -> Arc<str> {
        match &self.last_name {
            Some(last) if &**last == name => Arc::clone(last),
            _ => {
                let name: Arc<str> = Arc::from(name);
                self.last_name = Some(Arc::clone(&name));
                name
            }
        }
    }

    pub(super) fn key(&self, id: &str) -> CoreResult<JobId> {
        self.jobs
            .get_key_value(id)
            .map(|(k, _)| Arc::clone(k))
            .ok_or_else(|| CoreError::JobNotFound(id.to_owned()))
    }

    // --------------------------------------------------------------------- add

    /// Adds a job, or returns the existing one when its custom id is taken (`false`).
    pub fn add(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        now: Millis,
    ) -> CoreResult<(Job, bool)> {
        let job = new_job(name, data, options);
        lifecycle::add(self, job, self.config.max_payload_bytes, now)
    }

    /// Adds jobs atomically: all are validated before any is written. Input order is kept.
    pub fn add_bulk(
        &mut self,
        jobs: Vec<(String, String, JobOptions)>,
        now: Millis,
    ) -> CoreResult<Vec<(Job, bool)>> {
        self.jobs.reserve(jobs.len());
        let jobs = jobs
            .into_iter()
            .map(|(name, data, options)| NewJob {
                name,
                data,
                options,
            })
            .collect();
        lifecycle::add_bulk(self, jobs, self.config.max_payload_bytes, now)
    }

    /// Writes a new job (its checks done) and its events; with `hold`, the job waits for
    /// children (a flow's parent) before anything else, its delay counting from its release.
    pub(super) fn create_with(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        hold: bool,
        now: Millis,
    ) -> Job {
        let id = self.next_job_id(&options);
        let seq = self.next_seq();
        lifecycle::create_as(self, new_job(name, data, options), id, seq, hold, now)
            .expect(NO_FAILURE)
    }

    /// The id of a job about to be created: its custom id, else the next automatic one.
    pub(super) fn next_job_id(&mut self, options: &JobOptions) -> JobId {
        match &options.job_id {
            Some(id) => Arc::from(id.as_str()),
            None => {
                let id = self.next_auto_id;
                self.next_auto_id += 1;
                Arc::from(id.to_string())
            }
        }
    }

    // ------------------------------------------------------------------- gate
    // The transitions themselves are `lifecycle`'s, called on the store directly.

    /// Until when the rate limits hold claims back at `now` (`model::rate_limited_until`).
    pub fn rate_limited_until(&self, now: Millis) -> Option<Millis> {
        self.gate_now().limited_until(now)
    }

    /// The queue's gate as the shared transitions read it (`JobStorage::gate`).
    pub(super) fn gate_now(&self) -> crate::jobs::lifecycle::Gate {
        crate::jobs::lifecycle::Gate {
            paused: self.paused,
            max_active: self.max_active,
            rate_limit: self.rate_limit,
            window: (self.rate_window.0, self.rate_window.1.into()),
            until: self.rate_until,
        }
    }

    /// When a claim could next return something, if nothing is claimable now: the next delayed
    /// job's due time or the end of a rate-limit wait. `None` when only new work can help.
    pub fn next_ready_at(&self, now: Millis) -> Option<Millis> {
        let window_end = self.rate_limited_until(now);
        let next_delayed = self.delayed.first().map(|(due, _, _)| *due);
        let (paused, waiting, maxed) = (self.paused, !self.waiting.is_empty(), self.is_maxed());
        crate::jobs::model::next_ready_at(now, paused, waiting, window_end, maxed, next_delayed)
    }

    pub fn is_maxed(&self) -> bool {
        self.max_active
            .is_some_and(|max| self.active.len() >= max as usize)
    }

    // -------------------------------------------------------------- removal

    /// Removes a job from every index and from the store (its dedup key stays: see
    /// `delete_releasing` for removals that release it).
    pub(super) fn delete(&mut self, id: &JobId) -> Option<Job> {
        if !self.jobs.contains_key(id) {
            return None;
        }
        self.index_remove(id);
        self.flow_on_delete(id);
        self.jobs.remove(id)
    }
}
