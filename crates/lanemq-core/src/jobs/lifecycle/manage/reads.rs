//! Reads of a queue: counts, pages of jobs over several states, a job's outcome, the stats.

use crate::error::CoreResult;
use crate::jobs::contract::QueueStats;
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::paging::index_range;

use super::settings::rate_limit_ttl;
use super::storage::ManageStorage;

/// The states asked for, or all six when none are.
fn or_all(states: &[JobState]) -> &[JobState] {
    if states.is_empty() {
        &JobState::ALL
    } else {
        states
    }
}

/// The states asked for, each once in the order first named, or all six when none are.
pub fn each_once(states: &[JobState]) -> Vec<JobState> {
    let mut once: Vec<JobState> = Vec::with_capacity(states.len());
    for &state in or_all(states) {
        if !once.contains(&state) {
            once.push(state);
        }
    }
    once
}

/// Counts for the given states in first-seen order (duplicates dropped); all six if none.
pub fn get_job_counts<S: ManageStorage>(
    storage: &mut S,
    states: &[JobState],
) -> CoreResult<Vec<(JobState, usize)>> {
    let mut seen: Vec<(JobState, usize)> = Vec::new();
    for &state in or_all(states) {
        if !seen.iter().any(|(s, _)| *s == state) {
            seen.push((state, storage.count(state)?));
        }
    }
    Ok(seen)
}

/// Jobs that will still run: waiting + delayed + waiting for children.
pub fn count_pending<S: ManageStorage>(storage: &mut S) -> CoreResult<usize> {
    Ok(storage.count(JobState::Waiting)?
        + storage.count(JobState::Delayed)?
        + storage.count(JobState::WaitingChildren)?)
}

/// Waiting jobs per priority, for the priorities asked, in their order.
pub fn get_counts_per_priority<S: ManageStorage>(
    storage: &mut S,
    priorities: &[u32],
) -> CoreResult<Vec<(u32, usize)>> {
    priorities
        .iter()
        .map(|&p| Ok((p, storage.count_waiting_at(p)?)))
        .collect()
}

/// Jobs in the given states (all if none; a state named twice is listed twice), each state in
/// its order (`ManageStorage::page`), from index `start` to `end` inclusive over the
/// concatenation (a negative index counts from the end: -1 is the last); `ascending = false`
/// reverses each state's order. Also returns how many jobs the page was cut from. Only the
/// page is read: each state gives the part of it that falls in that state.
pub fn list_jobs<S: ManageStorage>(
    storage: &mut S,
    states: &[JobState],
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<(Vec<Job>, usize)> {
    let states = or_all(states);
    let counts = states
        .iter()
        .map(|&state| storage.count(state))
        .collect::<CoreResult<Vec<usize>>>()?;
    let total = counts.iter().sum();
    let range = index_range(total, start, end);
    let (mut skip, mut take) = (range.start, range.len());
    let mut page = Vec::with_capacity(take);
    for (&state, &count) in states.iter().zip(&counts) {
        if take == 0 {
            break;
        }
        if skip >= count {
            skip -= count;
            continue;
        }
        let part = storage.page(state, skip, take.min(count - skip), ascending)?;
        take -= part.len().min(take);
        skip = 0;
        page.extend(part);
    }
    Ok((page, total))
}

pub fn get_state<S: ManageStorage>(storage: &mut S, id: &str) -> CoreResult<Option<JobState>> {
    storage.with_job(id, |job| job.state)
}

/// How job `id` ended: its result, its failure, or where it is while unfinished.
pub fn finished_result<S: ManageStorage>(storage: &mut S, id: &str) -> CoreResult<FinishedResult> {
    let result = storage.with_job(id, |job| match job.state {
        JobState::Completed => FinishedResult::Completed(job.return_value.clone()),
        JobState::Failed => FinishedResult::Failed(job.failed_reason.clone().unwrap_or_default()),
        state => FinishedResult::NotFinished(state),
    })?;
    Ok(result.unwrap_or(FinishedResult::Missing))
}

/// The counts of every state and the queue's settings, read in one go (so they agree).
pub fn get_stats<S: ManageStorage>(storage: &mut S, now: Millis) -> CoreResult<QueueStats> {
    let counts = get_job_counts(storage, &JobState::ALL)?;
    let gate = storage.gate()?;
    Ok(QueueStats {
        counts,
        paused: gate.paused,
        max_active: gate.max_active,
        rate_limit: gate.rate_limit,
        rate_limit_ttl: rate_limit_ttl(&gate, now),
    })
}
