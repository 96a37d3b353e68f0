//! `MemoryStore`: one queue's jobs, with an index per state so that claiming, promoting and
//! stall recovery are O(log n), never a scan of all jobs. Each queue has its own store (and,
//! in the bindings, its own lock), so one queue never blocks another.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use crate::error::{CoreError, CoreResult};

use super::dedup::DedupKeys;
use super::flows::Flows;
use super::schedulers::Schedulers;
use crate::jobs::constants::{STACKTRACE_LIMIT, STALLED_REASON};
use crate::jobs::contract::FailOutcome;
use crate::jobs::events::{EventLog, Text};
use crate::jobs::model::{Job, JobState, Lock, Millis};
use crate::jobs::options::{check_payload, JobOptions, Retention, StoreConfig};

/// A job handed to a worker by `claim`.
pub type Claimed = Job;

pub type JobId = Arc<str>;

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
    seq: u64,
    pub(super) next_auto_id: u64,
    drained_reported: bool,
    random: RandomState,
    /// The progress of a job that reported none, shared by all of them.
    last_name: Option<Arc<str>>,
}

fn push_hex(out: &mut String, value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        out.push(DIGITS[((value >> (i * 4)) & 0xf) as usize] as char);
    }
}

impl MemoryStore {
    pub fn new(config: StoreConfig) -> Self {
        Self {
            events: EventLog::new(config.max_events),
            dedup: DedupKeys::default(),
            schedulers: Schedulers::default(),
            flow: Flows::default(),
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
            random: RandomState::new(),
            last_name: None,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// A lock token: 64 random bits and the sequence number, in hex (written by hand: `format!`
    /// was a tenth of a claim's cost).
    fn new_token(&mut self) -> String {
        let seq = self.next_seq();
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(seq);
        let mut token = String::with_capacity(33);
        push_hex(&mut token, hasher.finish());
        token.push('-');
        push_hex(&mut token, seq);
        token
    }

    // ------------------------------------------------------------------ indexes

    pub(super) fn index_insert(&mut self, id: &JobId) {
        let job = &self.jobs[id];
        let id = Arc::clone(id);
        match job.state {
            JobState::Waiting => {
                self.waiting.insert((job.priority, job.order), id);
                self.drained_reported = false;
            }
            JobState::Delayed => {
                self.delayed.insert((job.delay_until, job.seq, id));
            }
            JobState::Active => {
                let expires = job.lock.as_ref().map_or(0, |l| l.expires_at);
                self.active.insert((expires, job.seq, id));
            }
            JobState::WaitingChildren => {
                self.waiting_children.insert((job.seq, id));
            }
            JobState::Completed => {
                self.completed
                    .insert((job.finished_on.unwrap_or(0), job.seq, id));
            }
            JobState::Failed => {
                self.failed
                    .insert((job.finished_on.unwrap_or(0), job.seq, id));
            }
        }
    }

    pub(super) fn index_remove(&mut self, id: &JobId) {
        let job = &self.jobs[id];
        match job.state {
            JobState::Waiting => {
                self.waiting.remove(&(job.priority, job.order));
            }
            JobState::Delayed => {
                self.delayed
                    .remove(&(job.delay_until, job.seq, Arc::clone(id)));
            }
            JobState::Active => {
                let expires = job.lock.as_ref().map_or(0, |l| l.expires_at);
                self.active.remove(&(expires, job.seq, Arc::clone(id)));
            }
            JobState::WaitingChildren => {
                self.waiting_children.remove(&(job.seq, Arc::clone(id)));
            }
            JobState::Completed => {
                self.completed
                    .remove(&(job.finished_on.unwrap_or(0), job.seq, Arc::clone(id)));
            }
            JobState::Failed => {
                self.failed
                    .remove(&(job.finished_on.unwrap_or(0), job.seq, Arc::clone(id)));
            }
        }
    }

    /// Moves a job to `state`, keeping the indexes right; `change` edits the job in between.
    pub(super) fn transition(
        &mut self,
        id: &JobId,
        state: JobState,
        change: impl FnOnce(&mut Job),
    ) {
        self.index_remove(id);
        let job = self.jobs.get_mut(id).expect("indexed job exists");
        job.state = state;
        change(job);
        self.index_insert(id);
    }

    /// A fresh position in waiting: the back of the job's priority, or the front with `front`
    /// (or for a LIFO job).
    pub(super) fn waiting_order(&mut self, id: &JobId, front: bool) -> i64 {
        let seq = self.next_seq() as i64;
        if front || self.jobs[id].options.lifo {
            -seq
        } else {
            seq
        }
    }

    /// Puts a job at the back (or, with `front`, the front) of its priority in waiting.
    pub(super) fn move_to_waiting(&mut self, id: &JobId, front: bool) {
        let order = self.waiting_order(id, front);
        self.transition(id, JobState::Waiting, |job| {
            job.order = order;
            job.lock = None;
        });
    }

    /// Jobs added together usually share their name: reuse the last one's.
    fn intern_name(&mut self, name: &str) -> Arc<str> {
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

    /// Validates one job without writing anything.
    fn check_new(&self, data: &str, options: &JobOptions) -> CoreResult<()> {
        options.validate()?;
        check_payload(data, self.config.max_payload_bytes)
    }

    /// Adds a job, or returns the existing one when its custom id is taken (`false`).
    pub fn add(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        now: Millis,
    ) -> CoreResult<(Job, bool)> {
        self.check_new(data, &options)?;
        Ok(self.insert(name, data, options, now))
    }

    /// Adds jobs atomically: all are validated before any is written. Input order is kept.
    pub fn add_bulk(
        &mut self,
        jobs: Vec<(String, String, JobOptions)>,
        now: Millis,
    ) -> CoreResult<Vec<(Job, bool)>> {
        for (index, (_, data, options)) in jobs.iter().enumerate() {
            self.check_new(data, options).map_err(|e| match e {
                CoreError::InvalidConfig(m) => {
                    CoreError::InvalidConfig(format!("job #{index}: {m}"))
                }
                other => other,
            })?;
        }
        self.jobs.reserve(jobs.len());
        Ok(jobs
            .into_iter()
            .map(|(name, data, options)| self.insert(&name, &data, options, now))
            .collect())
    }

    /// Adds a validated job: the existing one if its custom id is taken (`false`), the holder
    /// of its dedup key if that is held (`false`), else a new one (`true`).
    fn insert(&mut self, name: &str, data: &str, options: JobOptions, now: Millis) -> (Job, bool) {
        if let Some(existing) = self.existing(&options, now) {
            return (existing, false);
        }
        if options.dedup.is_some() {
            return self.insert_deduplicated(name, data, options, now);
        }
        (self.create(name, data, options, now), true)
    }

    /// The job that already has the custom id of `options`, if any (a `duplicated` event).
    pub(super) fn existing(&mut self, options: &JobOptions, now: Millis) -> Option<Job> {
        let job = options
            .job_id
            .as_deref()
            .and_then(|id| self.jobs.get(id))?
            .clone();
        self.events.push(now, "duplicated", Some(&job.id), None);
        Some(job)
    }

    /// Writes a new job (its checks done) and its events.
    pub(super) fn create(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        now: Millis,
    ) -> Job {
        self.create_with(name, data, options, false, now)
    }

    /// `create`; with `hold`, the job waits for children (a flow's parent) before anything
    /// else, its delay counting from its release.
    pub(super) fn create_with(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        hold: bool,
        now: Millis,
    ) -> Job {
        let id: JobId = match &options.job_id {
            Some(id) => Arc::from(id.as_str()),
            None => {
                let id = self.next_auto_id;
                self.next_auto_id += 1;
                Arc::from(id.to_string())
            }
        };
        let seq = self.next_seq();
        let order = if options.lifo {
            -(seq as i64)
        } else {
            seq as i64
        };
        let name = self.intern_name(name);
        let job = Job::added(
            Arc::clone(&id),
            Arc::clone(&name),
            Arc::from(data),
            options,
            (seq, order),
            hold,
            now,
        );
        let snapshot = job.clone();
        self.jobs.insert(Arc::clone(&id), job);
        self.index_insert(&id);
        self.events
            .push(now, "added", Some(&id), Some(("name", Text::Shared(name))));
        if hold {
            self.events.push(now, "waiting-children", Some(&id), None);
        } else if snapshot.state == JobState::Delayed {
            let until = snapshot.delay_until.to_string();
            self.events
                .push(now, "delayed", Some(&id), Some(("delay", until.into())));
        } else {
            self.events.push(now, "waiting", Some(&id), None);
        }
        snapshot
    }

    // ------------------------------------------------------------------- claim

    /// Moves delayed jobs whose time has come to waiting.
    pub fn promote_due(&mut self, now: Millis) -> usize {
        let mut promoted = 0;
        while let Some((due, _, id)) = self.delayed.first().cloned() {
            if due > now {
                break;
            }
            self.move_to_waiting(&id, false);
            self.events
                .push(now, "waiting", Some(&id), Some(("prev", "delayed".into())));
            promoted += 1;
        }
        promoted
    }

    /// How many jobs the rate limits let start now: none during a manual wait, else what is
    /// left of the window (opening a new one if the last one ended).
    fn rate_allowance(&mut self, now: Millis) -> usize {
        if now < self.rate_until {
            return 0;
        }
        let Some((max, duration)) = self.rate_limit else {
            return usize::MAX;
        };
        let (start, count) = self.rate_window;
        if now >= start + duration {
            self.rate_window = (now, 0);
            return max as usize;
        }
        max.saturating_sub(count) as usize
    }

    /// Hands out up to `max_jobs` jobs to `worker_id`, each locked for `lease` ms.
    pub fn claim(
        &mut self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> Vec<Claimed> {
        self.promote_due(now);
        if self.paused {
            return Vec::new();
        }
        let mut allowed = max_jobs.min(self.rate_allowance(now));
        if let Some(max_active) = self.max_active {
            allowed = allowed.min((max_active as usize).saturating_sub(self.active.len()));
        }
        let mut claimed = Vec::with_capacity(allowed.min(self.waiting.len()));
        let worker: Arc<str> = Arc::from(worker_id);
        // Occurrences of job schedulers claimed: their next ones are produced after the loop,
        // so a next occurrence due at once is never claimed by the claim that produced it.
        let mut started: Vec<(String, JobId)> = Vec::new();
        while claimed.len() < allowed {
            let Some((_, id)) = self.waiting.pop_first() else {
                break;
            };
            let token = self.new_token();
            let job = self.jobs.get_mut(&id).expect("waiting job exists");
            job.state = JobState::Active;
            job.attempts_made += 1;
            job.processed_on = Some(now);
            job.lock = Some(Lock {
                token,
                worker_id: Arc::clone(&worker),
                expires_at: now + lease,
            });
            if let Some(key) = &job.options.scheduler {
                started.push((key.clone(), Arc::clone(&id)));
            }
            claimed.push(job.clone());
            self.active.insert((now + lease, job.seq, Arc::clone(&id)));
            self.events
                .push(now, "active", Some(&id), Some(("prev", "waiting".into())));
        }
        for (key, id) in started {
            self.scheduler_on_claim(&key, &id, now);
        }
        if self.rate_limit.is_some() {
            self.rate_window.1 += claimed.len() as u32;
        }
        if claimed.is_empty() && self.waiting.is_empty() && !self.drained_reported {
            self.drained_reported = true;
            self.events.push(now, "drained", None, None);
        }
        claimed
    }

    /// Until when the rate limits hold claims back at `now` (`model::rate_limited_until`).
    pub fn rate_limited_until(&self, now: Millis) -> Option<Millis> {
        let (start, used) = self.rate_window;
        let limit = self.rate_limit;
        crate::jobs::model::rate_limited_until(now, self.rate_until, limit, start, used.into())
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

    // ------------------------------------------------------------- finishing

    /// The job, if `token` holds its live lock.
    pub(super) fn locked(&self, id: &str, token: &str, now: Millis) -> CoreResult<JobId> {
        let key = self.key(id)?;
        self.jobs[&key].check_lock(token, now)?;
        Ok(key)
    }

    pub fn complete(
        &mut self,
        id: &str,
        token: &str,
        result: impl Into<Arc<str>>,
        now: Millis,
    ) -> CoreResult<()> {
        let key = self.locked(id, token, now)?;
        let result: Arc<str> = result.into();
        self.transition(&key, JobState::Completed, |job| {
            job.finished_on = Some(now);
            job.return_value = Some(Arc::clone(&result));
            job.lock = None;
        });
        self.events.push(
            now,
            "completed",
            Some(&key),
            Some(("returnvalue", Text::Shared(result))),
        );
        self.dedup_on_finish(&key, now);
        self.flow_on_finish(&key, now);
        let policy = self.jobs[&key].options.remove_on_complete.clone();
        self.retain(JobState::Completed, &policy, &key, now);
        Ok(())
    }

    /// Records a failed attempt: retried (after the backoff, or `delay` if given) while
    /// `retry` holds and attempts remain, otherwise failed for good.
    #[allow(clippy::too_many_arguments)]
    pub fn fail(
        &mut self,
        id: &str,
        token: &str,
        error: &str,
        stacktrace: Option<&str>,
        retry: bool,
        delay: Option<Millis>,
        now: Millis,
    ) -> CoreResult<FailOutcome> {
        let key = self.locked(id, token, now)?;
        let job = self.jobs.get_mut(&key).expect("locked job exists");
        job.failed_reason = Some(error.to_owned());
        if let Some(trace) = stacktrace {
            job.stacktrace.push(trace.to_owned());
            let excess = job.stacktrace.len().saturating_sub(STACKTRACE_LIMIT);
            job.stacktrace.drain(..excess);
        }
        let attempts_made = job.attempts_made;
        if retry && attempts_made < job.options.attempts {
            let backoff = job.options.backoff.clone();
            let random = crate::jobs::jitter::random_unit();
            let wait = delay
                .or_else(|| backoff.map(|b| b.delay_for(attempts_made, random)))
                .unwrap_or(0);
            if wait > 0 {
                self.transition(&key, JobState::Delayed, |job| {
                    job.delay_until = now + wait;
                    job.lock = None;
                });
                self.events.push(
                    now,
                    "delayed",
                    Some(&key),
                    Some(("delay", (now + wait).to_string().into())),
                );
                return Ok(FailOutcome::Retry {
                    delay_until: Some(now + wait),
                });
            }
            self.move_to_waiting(&key, false);
            self.events
                .push(now, "waiting", Some(&key), Some(("prev", "failed".into())));
            return Ok(FailOutcome::Retry { delay_until: None });
        }
        self.fail_for_good(&key, error, now);
        Ok(FailOutcome::Failed)
    }

    pub(super) fn fail_for_good(&mut self, key: &JobId, reason: &str, now: Millis) {
        self.transition(key, JobState::Failed, |job| {
            job.finished_on = Some(now);
            job.failed_reason = Some(reason.to_owned());
            job.lock = None;
        });
        let job = &self.jobs[key];
        let attempts = job.attempts_made;
        let exhausted = attempts >= job.options.attempts;
        let policy = job.options.remove_on_fail.clone();
        self.events.push(
            now,
            "failed",
            Some(key),
            Some(("failedReason", reason.to_owned().into())),
        );
        if exhausted {
            self.events.push(
                now,
                "retries-exhausted",
                Some(key),
                Some(("attemptsMade", attempts.to_string().into())),
            );
        }
        self.dedup_on_finish(key, now);
        self.flow_on_finish(key, now);
        self.retain(JobState::Failed, &policy, key, now);
    }

    /// Extends a held lock to `now + lease`.
    pub fn renew(&mut self, id: &str, token: &str, lease: Millis, now: Millis) -> CoreResult<()> {
        let key = self.locked(id, token, now)?;
        self.index_remove(&key);
        if let Some(lock) = self.jobs.get_mut(&key).and_then(|j| j.lock.as_mut()) {
            lock.expires_at = now + lease;
        }
        self.index_insert(&key);
        Ok(())
    }

    /// Gives an active job back to the delayed set without using an attempt.
    pub fn move_to_delayed(
        &mut self,
        id: &str,
        token: &str,
        delay_until: Millis,
        now: Millis,
    ) -> CoreResult<()> {
        let key = self.locked(id, token, now)?;
        self.transition(&key, JobState::Delayed, |job| {
            job.attempts_made = job.attempts_made.saturating_sub(1);
            job.delay_until = delay_until.max(now);
            job.lock = None;
        });
        self.events.push(
            now,
            "delayed",
            Some(&key),
            Some(("delay", delay_until.to_string().into())),
        );
        Ok(())
    }

    /// Gives an active job back to the front of its priority without using an attempt.
    pub fn release(&mut self, id: &str, token: &str, now: Millis) -> CoreResult<()> {
        let key = self.locked(id, token, now)?;
        self.jobs
            .get_mut(&key)
            .expect("locked job exists")
            .attempts_made -= 1;
        self.move_to_waiting(&key, true);
        self.events
            .push(now, "waiting", Some(&key), Some(("prev", "active".into())));
        Ok(())
    }

    /// Active jobs whose lease ran out go back to the front of waiting (stalled count + 1), or
    /// fail once they have stalled more than `max_stalled_count` times. Returns (recovered,
    /// failed) ids.
    pub fn recover_stalled(&mut self, now: Millis) -> (Vec<String>, Vec<String>) {
        let expired: Vec<JobId> = self
            .active
            .iter()
            .take_while(|(expires, _, _)| *expires <= now)
            .map(|(_, _, id)| Arc::clone(id))
            .collect();
        let (mut recovered, mut failed) = (Vec::new(), Vec::new());
        for key in expired {
            let job = self.jobs.get_mut(&key).expect("active job exists");
            job.stalled_count += 1;
            job.attempts_made = job.attempts_made.saturating_sub(1);
            let stalled = job.stalled_count;
            self.events.push(
                now,
                "stalled",
                Some(&key),
                Some(("stalledCount", stalled.to_string().into())),
            );
            if stalled > self.jobs[&key].options.max_stalled_count {
                self.fail_for_good(&key, STALLED_REASON, now);
                failed.push(key.to_string());
            } else {
                self.move_to_waiting(&key, true);
                self.events
                    .push(now, "waiting", Some(&key), Some(("prev", "stalled".into())));
                recovered.push(key.to_string());
            }
        }
        (recovered, failed)
    }

    // -------------------------------------------------------------- retention

    /// Applies a finished job's retention policy to its state's finished set.
    fn retain(&mut self, state: JobState, policy: &Retention, just_finished: &JobId, now: Millis) {
        let doomed: Vec<JobId> = match policy {
            Retention::KeepAll => return,
            Retention::RemoveAll => vec![Arc::clone(just_finished)],
            Retention::Keep { count, age, limit } => {
                let set = if state == JobState::Completed {
                    &self.completed
                } else {
                    &self.failed
                };
                let over_count = count.map_or(0, |c| set.len().saturating_sub(c as usize));
                let cutoff = age.map(|a| now.saturating_sub(a));
                let limit = limit.map_or(usize::MAX, |l| l as usize);
                set.iter()
                    .enumerate()
                    .take_while(|(i, (finished, _, _))| {
                        *i < over_count || cutoff.is_some_and(|c| *finished < c)
                    })
                    .take(limit)
                    .map(|(_, (_, _, id))| Arc::clone(id))
                    .collect()
            }
        };
        for id in doomed {
            self.delete(&id);
        }
    }

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
