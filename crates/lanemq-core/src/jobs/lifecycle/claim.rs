//! Claiming: due delayed jobs promoted, the gate consulted (pause, rate limits, global
//! concurrency), the head of waiting locked for a worker.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::jitter;
use crate::jobs::model::{Job, JobState, Lock, Millis};

use super::effects::Effects;
use super::storage::{Gate, JobStorage};

/// Moves delayed jobs whose time has come to waiting; returns how many.
pub fn promote_due<S: JobStorage>(storage: &mut S, now: Millis) -> CoreResult<usize> {
    let due = storage.due_delayed(now)?;
    if due.is_empty() {
        return Ok(0);
    }
    let first_seq = storage.reserve_seq(due.len() as u64)?;
    let mut effects = Effects::new();
    for (seq, id) in (first_seq..).zip(&due) {
        storage.update(id, |job| {
            super::to_waiting(job, seq, false);
            Ok(())
        })?;
        effects.event("waiting", Some(id), Some(("prev", "delayed".into())));
    }
    effects.apply(storage, now)?;
    Ok(due.len())
}

/// How many jobs the rate limits let start at `now`, and the window to store when it changes:
/// none during a manual wait, else what is left of the window (a new one if the last ended).
fn allowance(gate: &Gate, now: Millis) -> (usize, Option<(Millis, u64)>) {
    if now < gate.until {
        return (0, None);
    }
    let Some((max, duration)) = gate.rate_limit else {
        return (usize::MAX, None);
    };
    let (start, used) = gate.window;
    if now >= start + duration {
        return (max as usize, Some((now, 0)));
    }
    ((max as u64).saturating_sub(used) as usize, None)
}

/// A lock token: 64 random bits and a counter, in hex (written by hand: `format!` was a
/// visible part of a claim's cost, see benches/history/5-10.md).
fn new_token() -> String {
    let (bits, count) = jitter::random_bits_and_count();
    let mut token = String::with_capacity(33);
    push_hex(&mut token, bits);
    token.push('-');
    push_hex(&mut token, count);
    token
}

fn push_hex(out: &mut String, value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros()).div_ceil(4).max(1);
    for i in (0..digits).rev() {
        out.push(DIGITS[((value >> (i * 4)) & 0xf) as usize] as char);
    }
}

/// Hands out up to `max_jobs` jobs to `worker_id`, each locked for `lease` ms.
pub fn claim<S: JobStorage>(
    storage: &mut S,
    worker_id: &str,
    lease: Millis,
    max_jobs: usize,
    now: Millis,
) -> CoreResult<Vec<Job>> {
    promote_due(storage, now)?;
    let gate = storage.gate()?;
    if gate.paused {
        return Ok(Vec::new());
    }
    let (rate_allowed, new_window) = allowance(&gate, now);
    let mut allowed = max_jobs.min(rate_allowed);
    if let Some(max_active) = gate.max_active {
        let active = storage.count(JobState::Active)?;
        allowed = allowed.min((max_active as usize).saturating_sub(active));
    }
    let worker: Arc<str> = Arc::from(worker_id);
    let claimed = if allowed == 0 {
        Vec::new()
    } else {
        let mut change = |job: &mut Job| {
            job.state = JobState::Active;
            job.attempts_made += 1;
            job.processed_on = Some(now);
            job.lock = Some(Lock {
                token: new_token(),
                worker_id: Arc::clone(&worker),
                expires_at: now + lease,
            });
            job.reported_by = None; // a new attempt: the last one's report is settled
        };
        // Groups take turns when one has a waiting job; else the plain claim, at its cost.
        match super::groups::claim_turns(storage, allowed, now, &mut change)? {
            Some(claimed) => claimed,
            None => storage.claim_head(allowed, change)?,
        }
    };
    let mut effects = Effects::with_capacity(claimed.len() + 1);
    for job in &claimed {
        effects.event("active", Some(&job.id), Some(("prev", "waiting".into())));
    }
    for job in &claimed {
        if let Some(key) = &job.options.scheduler {
            effects.next_occurrence(key, &job.id);
        }
    }
    if gate.rate_limit.is_some() && (new_window.is_some() || !claimed.is_empty()) {
        let (start, used) = new_window.unwrap_or(gate.window);
        storage.set_rate_window((start, used + claimed.len() as u64))?;
    }
    if claimed.is_empty() && storage.count(JobState::Waiting)? == 0 && storage.report_drained()? {
        effects.event("drained", None, None);
    }
    effects.apply(storage, now)?;
    Ok(claimed)
}
