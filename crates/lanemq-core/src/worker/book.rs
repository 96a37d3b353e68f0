//! What a worker keeps between the turns of its loop, and the events that change it: a job
//! starts or finishes, an outcome is recorded, taken to be reported or put back, a call to the
//! backend returns or fails, a turn fails.

use std::collections::HashMap;
use std::hash::Hash;

use crate::error::{CoreError, CoreResult};
use crate::lanes::Micros;

/// The first wait after a failed turn; each failure in a row doubles it, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Micros = 100_000;
const MAX_BACKOFF: Micros = 5_000_000;

/// The default bound of the jobs claimed ahead: the concurrency, up to this. Claiming ahead
/// pays where a call carries few jobs (concurrency 10: CPU per job 0.77x on both sides); at
/// concurrency 100 a call already carries 50 and no gain was measured, so a larger default
/// would only hoard jobs (benches/history/18.md, "Claim ahead, built").
const DEFAULT_PREFETCH_CAP: u32 = 10;

/// The kinds of outcome a worker reports, each in its own call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The processor returned: complete the job (with its result).
    Completed,
    /// The processor raised (or timed out, or was cancelled): fail the attempt.
    Failed,
    /// Give the job back to waiting, attempt unused (a rate limit, close's grace ran out).
    Released,
}

/// The worker's counters since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Jobs completed (the backend accepted the completion).
    pub processed: u64,
    /// Jobs failed for good (no retry left, or not retryable).
    pub failed: u64,
    /// Every failed attempt recorded, retried or not.
    pub attempts_failed: u64,
}

/// A worker's bookkeeping. `K` names a running job (the bindings use the address of its task),
/// `R` is what is kept of a running job, `O` what is kept of an outcome waiting to be reported.
#[derive(Debug)]
pub struct WorkerBook<K, R, O> {
    concurrency: u32,
    /// Whether calls wait on something outside the caller's thread: then up to two calls are
    /// in flight, so jobs run while one is out.
    pub(super) remote: bool,
    running: HashMap<K, R, foldhash::fast::RandomState>,
    pub(super) completed: Vec<O>,
    pub(super) failed: Vec<O>,
    pub(super) released: Vec<O>,
    /// Calls a turn planned that have not returned yet, and the slots their claims may fill.
    pub(super) calls: u32,
    claiming: u32,
    /// On a remote backend, how many jobs beyond the concurrency may be claimed ahead (`None`:
    /// as many as the concurrency, up to `DEFAULT_PREFETCH_CAP`). A job claimed ahead is active and leased but not started:
    /// it starts, in claim order, when a slot frees, so a call claims twice the jobs and its
    /// fixed cost is spread over them (benches/history/18.md).
    prefetch: Option<u32>,
    /// Jobs claimed ahead and not started yet (the bindings keep the jobs themselves).
    ahead: u32,
    /// The last claim came back short: the queue is empty, so claim again only along with a
    /// report (or after waiting for a job).
    pub(super) starved: bool,
    /// The last call returned (rather than failed): two calls may be in flight, not one, and
    /// the back-off starts over.
    pub(super) healthy: bool,
    /// A call failed since the last turn: that turn fails (with the call's error, which the
    /// caller keeps).
    pub(super) unseen_failure: bool,
    /// No claims before this (after a rate limit).
    pause_until: Micros,
    backoff: Micros,
    /// The turn since the last `turn` failed: its back-off stands.
    last_turn_failed: bool,
    counts: Counts,
    /// This worker takes no job (`JobWorker.pause`); its running jobs go on.
    held: bool,
    /// This worker's own claim limit (`JobWorker(limiter=...)`), and its current window.
    limit: Option<ClaimLimit>,
    window: Window,
}

/// At most `max` jobs started by one worker per `per` (a fixed window, opened by the first
/// start after the last one closed), whatever the queue's own limits allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimit {
    pub max: u32,
    pub per: Micros,
}

#[derive(Debug, Clone, Copy, Default)]
struct Window {
    ends: Micros,
    started: u32,
}

impl<K: Hash + Eq, R, O> WorkerBook<K, R, O> {
    pub fn new(concurrency: u32, remote: bool) -> CoreResult<Self> {
        check_concurrency(concurrency)?;
        Ok(Self {
            concurrency,
            remote,
            running: HashMap::default(),
            completed: Vec::new(),
            failed: Vec::new(),
            released: Vec::new(),
            calls: 0,
            claiming: 0,
            prefetch: Some(0), // (none unless asked: `set_prefetch`)
            ahead: 0,
            starved: false,
            healthy: true,
            unseen_failure: false,
            pause_until: 0,
            backoff: 0,
            last_turn_failed: false,
            counts: Counts::default(),
            held: false,
            limit: None,
            window: Window::default(),
        })
    }

    pub fn concurrency(&self) -> u32 {
        self.concurrency
    }

    /// Takes effect at the next turn; jobs already running go on.
    pub fn set_concurrency(&mut self, concurrency: u32) -> CoreResult<()> {
        check_concurrency(concurrency)?;
        self.concurrency = concurrency;
        Ok(())
    }

    /// The most one call claims while the loop overlaps calls or waits for work: half the
    /// concurrency and the jobs it may claim ahead (rounded up), so two calls in flight
    /// together fill both.
    pub fn share(&self) -> u32 {
        self.capacity().div_ceil(2).max(1)
    }

    /// Sets how many jobs beyond the concurrency may be claimed ahead on a remote backend
    /// (`None`: as many as the concurrency, up to `DEFAULT_PREFETCH_CAP`; in process a call
    /// returns at once and none are).
    pub fn set_prefetch(&mut self, prefetch: Option<u32>) {
        self.prefetch = prefetch;
    }

    /// How many jobs beyond the concurrency may be claimed ahead now.
    pub fn prefetch(&self) -> u32 {
        if self.remote {
            self.prefetch
                .unwrap_or(self.concurrency.min(DEFAULT_PREFETCH_CAP))
        } else {
            0
        }
    }

    /// The jobs this worker may hold at once: running, claimed ahead or being claimed.
    fn capacity(&self) -> u32 {
        self.concurrency.saturating_add(self.prefetch())
    }

    /// `n` jobs a call returned are held, claimed ahead, until slots free.
    pub fn hold_ahead(&mut self, n: u32) {
        self.ahead = self.ahead.saturating_add(n);
    }

    /// `n` jobs claimed ahead left the book (started, released or dropped).
    pub fn unhold_ahead(&mut self, n: u32) {
        debug_assert!(self.ahead >= n, "jobs that were held");
        self.ahead = self.ahead.saturating_sub(n);
    }

    pub fn ahead(&self) -> u32 {
        self.ahead
    }

    /// Slots no running job holds: how many jobs claimed ahead may start now.
    pub fn open(&self) -> u32 {
        u64::from(self.concurrency).saturating_sub(self.running.len() as u64) as u32
    }

    pub fn is_remote(&self) -> bool {
        self.remote
    }

    pub fn is_healthy(&self) -> bool {
        self.healthy
    }

    pub fn is_starved(&self) -> bool {
        self.starved
    }

    // ------------------------------------------------------------------- running jobs

    /// A claimed job started, under `key`.
    pub fn start(&mut self, key: K, job: R) {
        let previous = self.running.insert(key, job);
        debug_assert!(previous.is_none(), "a key names one running job at a time");
    }

    /// The job under `key` ended; what was kept of it, once (`None` if the book has no such
    /// job). Its outcome, if any, is recorded separately.
    pub fn finish(&mut self, key: &K) -> Option<R> {
        self.running.remove(key)
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    pub fn running_jobs(&self) -> impl Iterator<Item = &R> {
        self.running.values()
    }

    /// Slots no running job, no job claimed ahead and no claim in flight holds (0 when the
    /// concurrency was lowered below what runs): what a claim that starts its jobs at once
    /// may take (`claimable`: `run_once`, the idle check).
    pub fn free(&self) -> u32 {
        self.room_within(self.concurrency)
    }

    /// As `free`, with the jobs that may be claimed ahead: what the loop's calls may claim.
    pub(super) fn room(&self) -> u32 {
        self.room_within(self.capacity())
    }

    fn room_within(&self, bound: u32) -> u32 {
        let held = (self.running.len() as u64)
            .saturating_add(u64::from(self.claiming))
            .saturating_add(u64::from(self.ahead));
        u64::from(bound).saturating_sub(held) as u32
    }

    // ------------------------------------------------------------------------ outcomes

    pub fn record(&mut self, kind: Outcome, outcome: O) {
        self.outcomes_mut(kind).push(outcome);
    }

    /// Every outcome of `kind` waiting, oldest first, to be reported now.
    pub fn take(&mut self, kind: Outcome) -> Vec<O> {
        take_sized(self.outcomes_mut(kind))
    }

    /// Outcomes taken whose report failed: they go first in the next one.
    pub fn put_back(&mut self, kind: Outcome, outcomes: Vec<O>) {
        let waiting = self.outcomes_mut(kind);
        waiting.splice(0..0, outcomes);
    }

    pub fn waiting(&self, kind: Outcome) -> usize {
        match kind {
            Outcome::Completed => self.completed.len(),
            Outcome::Failed => self.failed.len(),
            Outcome::Released => self.released.len(),
        }
    }

    /// Outcomes of every kind waiting to be reported.
    pub fn pending(&self) -> usize {
        self.completed.len() + self.failed.len() + self.released.len()
    }

    /// Every outcome waiting, of every kind.
    pub fn outcomes(&self) -> impl Iterator<Item = &O> {
        self.completed
            .iter()
            .chain(&self.failed)
            .chain(&self.released)
    }

    fn outcomes_mut(&mut self, kind: Outcome) -> &mut Vec<O> {
        match kind {
            Outcome::Completed => &mut self.completed,
            Outcome::Failed => &mut self.failed,
            Outcome::Released => &mut self.released,
        }
    }

    // ------------------------------------------------------------------- pause, claims

    /// No claims for `delay` from `now` (a pause already longer stands).
    pub fn pause(&mut self, now: Micros, delay: Micros) {
        self.pause_until = self.pause_until.max(now.saturating_add(delay));
    }

    /// How long claims are still paused (0: not paused).
    pub fn paused_for(&self, now: Micros) -> Micros {
        self.pause_until.saturating_sub(now)
    }

    /// How many jobs may be claimed now: the free slots within the claim limit's room, none
    /// while paused or held.
    pub fn claimable(&self, now: Micros) -> u32 {
        if self.paused_for(now) > 0 || self.held {
            0
        } else {
            self.free().min(self.limit_room(now))
        }
    }

    /// Holds claims (`true`) until released (`false`); running jobs go on.
    pub fn set_held(&mut self, held: bool) {
        self.held = held;
    }

    pub fn is_held(&self) -> bool {
        self.held
    }

    /// Sets (or with `None`, lifts) this worker's own claim limit; a new limit starts with a
    /// fresh window.
    pub fn set_limit(&mut self, limit: Option<ClaimLimit>) -> CoreResult<()> {
        if let Some(limit) = limit {
            if limit.max < 1 || limit.per < 1 {
                return Err(CoreError::InvalidConfig(format!(
                    "invalid limiter: ({}, {}us) (must be at least 1 job per > 0 seconds)",
                    limit.max, limit.per
                )));
            }
        }
        self.limit = limit;
        self.window = Window::default();
        Ok(())
    }

    pub fn has_limit(&self) -> bool {
        self.limit.is_some()
    }

    /// A claimed job started at `now`: counted in the claim limit's window (opening one if
    /// none is open).
    pub fn count_start(&mut self, now: Micros) {
        let Some(limit) = self.limit else { return };
        if now >= self.window.ends {
            self.window = Window {
                ends: now.saturating_add(limit.per),
                started: 0,
            };
        }
        self.window.started = self.window.started.saturating_add(1);
    }

    /// How many more jobs the claim limit lets this worker claim now (the claims in flight
    /// counted as taken); `u32::MAX` without a limit.
    pub fn limit_room(&self, now: Micros) -> u32 {
        let Some(limit) = self.limit else {
            return u32::MAX;
        };
        let started = if now >= self.window.ends {
            0
        } else {
            self.window.started
        };
        // (jobs claimed ahead start later, each counted then: they are taken room already)
        limit
            .max
            .saturating_sub(started)
            .saturating_sub(self.claiming)
            .saturating_sub(self.ahead)
    }

    /// How long until the claim limit's window closes, when it leaves no room (0 otherwise).
    pub fn limited_for(&self, now: Micros) -> Micros {
        if self.limit_room(now) > 0 {
            0
        } else {
            self.window.ends.saturating_sub(now)
        }
    }

    /// A call a turn planned returned, having claimed `got` of its `claim`.
    pub fn call_done(&mut self, claim: u32, got: u32) {
        self.end_call(claim);
        self.healthy = true;
        if got < claim {
            self.starved = true;
        }
    }

    /// A call a turn planned failed (its outcomes are put back separately); the next turn
    /// fails with it.
    pub fn call_failed(&mut self, claim: u32) {
        self.end_call(claim);
        self.healthy = false;
        self.unseen_failure = true;
    }

    fn end_call(&mut self, claim: u32) {
        debug_assert!(
            self.calls > 0 && self.claiming >= claim,
            "a call that was planned"
        );
        self.calls = self.calls.saturating_sub(1);
        self.claiming = self.claiming.saturating_sub(claim);
    }

    /// The loop waited for work, claiming up to `asked` (0: it only slept) and getting `got`:
    /// a full claim, or none asked, means the queue may have more.
    pub fn idled(&mut self, asked: u32, got: u32) {
        self.starved = got < asked;
    }

    // ----------------------------------------------------------------------- back-off

    /// A turn failed (the backend went away, say): how long to wait before the next one,
    /// doubling with each failure in a row.
    pub fn back_off(&mut self) -> Micros {
        self.last_turn_failed = true;
        self.backoff = (self.backoff.saturating_mul(2)).clamp(FIRST_BACKOFF, MAX_BACKOFF);
        self.backoff
    }

    /// At the start of a turn: the last one went through and the backend answers, so the next
    /// failure waits the shortest time again.
    pub(super) fn settle_backoff(&mut self) {
        if !self.last_turn_failed && self.healthy {
            self.backoff = 0;
        }
        self.last_turn_failed = false;
    }

    pub(super) fn plan_call(&mut self, claim: u32) {
        self.calls += 1;
        self.claiming += claim;
    }

    // ----------------------------------------------------------------------- counters

    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// `n` completions were accepted by the backend.
    pub fn count_completed(&mut self, n: u64) {
        self.counts.processed += n;
    }

    /// A failed attempt was recorded; `retried` unless the job failed for good.
    pub fn count_failed(&mut self, retried: bool) {
        self.counts.attempts_failed += 1;
        if !retried {
            self.counts.failed += 1;
        }
    }

    /// Drops every running job and outcome (what the bindings do when the garbage collector
    /// clears a dropped worker); counters and state stay.
    pub fn clear(&mut self) {
        self.running.clear();
        self.ahead = 0;
        self.completed.clear();
        self.failed.clear();
        self.released.clear();
    }
}

fn check_concurrency(concurrency: u32) -> CoreResult<()> {
    if concurrency < 1 {
        return Err(CoreError::InvalidConfig(format!(
            "invalid concurrency: {concurrency} (must be >= 1)"
        )));
    }
    Ok(())
}

/// Takes `outcomes`, leaving room for as many: the next batch is usually as large, and a list
/// grown from empty reallocates several times per batch (visible per job, benches/history/12.md).
pub(super) fn take_sized<O>(outcomes: &mut Vec<O>) -> Vec<O> {
    let room = outcomes.len();
    std::mem::replace(outcomes, Vec::with_capacity(room))
}
