//! `JobQueueCore`'s forwards for groups (`JobGroups`) and cancellation (`JobCancels`), written
//! as the other forwards are (`job_queue_forwards::forwards!`).

use lanemq_core::jobs::{CancelOutcome, CancelRequest, GroupLimits, GroupRow, Millis};
use pyo3::prelude::*;

use crate::core_args::{Dict, Group, Now, Positive, Secs, States, Text};
use crate::job_queue::JobQueueCore;
use crate::job_queue_forwards::{forwards, rate_limit_seconds, state_counts};

forwards! {
    // ------------------------------------------------------------------ groups

    /// Replaces the queue-wide group limits (None: no limit).
    fn set_group_defaults(
        concurrency: Option<Positive> = None,
        rate_max: Option<Positive> = None,
        rate_duration: Option<Secs> = None,
        max_size: Option<Positive> = None,
    ) -> Ok {
        set_group_defaults(limits(concurrency, rate_max, rate_duration, max_size))
    }
    /// Awaits `(concurrency, (max, seconds) | None, max_size)`.
    fn get_group_defaults() -> limits_row { get_group_defaults() }
    /// Replaces one group's overrides (None: the default's).
    fn set_group_limits(
        group: Group,
        concurrency: Option<Positive> = None,
        rate_max: Option<Positive> = None,
        rate_duration: Option<Secs> = None,
        max_size: Option<Positive> = None,
    ) -> Ok {
        set_group_limits(group, limits(concurrency, rate_max, rate_duration, max_size))
    }
    fn get_group_limits(group: Group) -> limits_row { get_group_limits(group) }
    fn pause_group(group: Group, now: Option<Now> = None) -> Ok { pause_group(group, now) }
    fn resume_group(group: Group, now: Option<Now> = None) -> Ok { resume_group(group, now) }
    fn is_group_paused(group: Group) -> Ok { is_group_paused(group) }
    fn get_group_counts(group: Group, states: States) -> state_counts {
        get_group_counts(group, states)
    }
    /// Awaits `([(name, paused, counts)], total)`.
    fn list_groups(start: usize, count: usize) -> group_rows { list_groups(start, count) }
    fn group_job_ids(group: Group, states: States) -> Ok { group_job_ids(group, states) }
    fn remove_group(group: Group, now: Option<Now> = None) -> Ok { remove_group(group, now) }

    // ------------------------------------------------------------ cancellation

    /// Awaits "failed", "requested" or "finished" (`CancelOutcome`).
    fn cancel(id: Text, reason: Text, now: Option<Now> = None) -> outcome_name {
        cancel(id, reason, now)
    }
    fn last_cancel_seq() -> Ok { last_cancel_seq() }
    /// Awaits `[(seq, job id, reason)]`.
    fn wait_cancels(after: u64, timeout: Option<Secs> = None) -> cancel_rows {
        wait_cancels(after, timeout)
    }
}

fn limits(
    concurrency: Option<u32>,
    rate_max: Option<u32>,
    rate_duration: Option<Millis>,
    max_size: Option<u32>,
) -> GroupLimits {
    GroupLimits {
        concurrency,
        rate: rate_max.zip(rate_duration),
        max_size,
    }
}

type LimitsRow = (Option<u32>, Option<(u32, f64)>, Option<u32>);

fn limits_row(limits: GroupLimits) -> PyResult<LimitsRow> {
    Ok((
        limits.concurrency,
        rate_limit_seconds(limits.rate)?,
        limits.max_size,
    ))
}

type GroupRows = (Vec<(String, bool, Dict<&'static str, usize>)>, usize);

fn group_rows((rows, total): (Vec<GroupRow>, usize)) -> PyResult<GroupRows> {
    let rows = rows
        .into_iter()
        .map(|row| Ok((row.name, row.paused, state_counts(row.counts)?)))
        .collect::<PyResult<_>>()?;
    Ok((rows, total))
}

fn outcome_name(outcome: CancelOutcome) -> PyResult<&'static str> {
    Ok(match outcome {
        CancelOutcome::Failed => "failed",
        CancelOutcome::Requested => "requested",
        CancelOutcome::Finished => "finished",
    })
}

fn cancel_rows(requests: Vec<CancelRequest>) -> PyResult<Vec<(u64, String, String)>> {
    Ok(requests
        .into_iter()
        .map(|r| (r.seq, r.job_id, r.reason))
        .collect())
}
