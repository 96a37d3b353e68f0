//! One turn of the worker's loop: report failures and releases, or make the calls that report
//! completions and claim jobs, or wait for work.
//!
//! On a remote backend the loop keeps up to two calls in flight (one while the last call
//! failed), each claiming up to half the concurrency, so jobs that one call returned run while
//! the backend works on the next. In process a call returns at once: one call reports and
//! claims up to every free slot. Completions ride along with claims; failures and releases are
//! rarer and go out alone, with no call in flight.

use std::hash::Hash;

use crate::lanes::Micros;

use super::book::WorkerBook;

/// What the loop does this turn.
#[derive(Debug, PartialEq, Eq)]
pub enum Turn<O> {
    /// A call failed since the last turn (the backend went away, say): this turn fails with
    /// its error, and the loop backs off.
    CallFailed,
    /// Failures or releases wait: report every outcome waiting (on a remote backend once the
    /// calls in flight are back), then turn again.
    Flush,
    /// Make `calls` (possibly none). Then, with no call in flight and no job claimed by
    /// them, wait for work as `idle` says.
    Calls { calls: Vec<Call<O>>, idle: Idle },
}

/// A call to the backend: report `completions` (possibly none) and claim up to `claim` jobs
/// (possibly 0). Until the caller tells the book it returned (`call_done`) or failed
/// (`call_failed`), its claim holds slots.
#[derive(Debug, PartialEq, Eq)]
pub struct Call<O> {
    pub completions: Vec<O>,
    pub claim: u32,
}

/// How to wait for work when there is nothing else to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Idle {
    /// Wait for a job and claim up to this many in the same call (0: claim nothing).
    pub claim: u32,
    /// Claims are paused: sleep this long at most (unless woken). `None` with a `claim` of 0:
    /// wait until woken (a job ends, close is called).
    pub pause: Option<Micros>,
}

impl<K: Hash + Eq, R, O> WorkerBook<K, R, O> {
    /// The decision of this turn, from what the book holds at `now`. The calls it returns
    /// count as in flight from now on.
    pub fn turn(&mut self, now: Micros) -> Turn<O> {
        self.settle_backoff();
        if std::mem::take(&mut self.unseen_failure) {
            return Turn::CallFailed;
        }
        if !self.failed.is_empty() || !self.released.is_empty() {
            return Turn::Flush;
        }
        // The calls claim ahead too (`room`); the idle wait's claim starts its jobs at once.
        let room = self.room().min(self.limit_room(now));
        let free = self.free().min(self.limit_room(now));
        let paused_for = self.paused_for(now);
        let claims_open = paused_for == 0 && !self.is_held();
        let can_claim = free > 0 && claims_open;
        let share = self.share();
        let mut calls = Vec::new();
        if self.remote {
            let most = if self.healthy { 2 } else { 1 };
            let mut left = room;
            while self.calls < most {
                // Claim along with every report; without one, not again until the queue may
                // have a job (a claim that came back short means it was empty).
                let claim = if claims_open && (!self.completed.is_empty() || !self.starved) {
                    left.min(share)
                } else {
                    0
                };
                if claim == 0 && self.completed.is_empty() {
                    break;
                }
                calls.push(self.call(claim));
                left -= claim;
            }
        } else if can_claim || !self.completed.is_empty() {
            calls.push(self.call(if can_claim { free } else { 0 }));
        }
        // Held, or every slot taken: sleep until woken. Paused, or the claim limit's window
        // full: until that ends.
        let pause = if can_claim || self.is_held() {
            None
        } else if paused_for > 0 {
            Some(paused_for)
        } else {
            Some(self.limited_for(now)).filter(|&wait| wait > 0)
        };
        let idle = Idle {
            claim: if can_claim { free.min(share) } else { 0 },
            pause,
        };
        Turn::Calls { calls, idle }
    }

    fn call(&mut self, claim: u32) -> Call<O> {
        self.plan_call(claim);
        Call {
            completions: super::book::take_sized(&mut self.completed),
            claim,
        }
    }
}
