//! The management of groups (`contract::JobGroups`), once for the in-process backends: their
//! settings (each change re-syncs the groups it touches, so it acts at the next claim), their
//! reads, and `remove_group`.

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::{GroupLimits, GroupRow};
use crate::jobs::model::{JobState, Millis};
use crate::jobs::options::validate_group;

use super::groups::{check_limits, sync, GroupStorage};
use super::storage::JobStorage;

/// Lets a group held by its rate window be judged again under new limits (the next claim
/// holds it again if its window is still spent), then re-syncs it.
fn resync<S: GroupStorage + ?Sized>(storage: &mut S, group: &str) -> CoreResult<()> {
    let state = storage.group_state(group)?;
    if state.held_until != 0 {
        storage.set_group_rate(group, state.window, 0)?;
    }
    sync(storage, group)
}

pub fn set_defaults<S: GroupStorage + ?Sized>(
    storage: &mut S,
    limits: GroupLimits,
) -> CoreResult<()> {
    check_limits(&limits)?;
    storage.set_group_defaults(limits)?;
    for group in storage.group_names()? {
        resync(storage, &group)?;
    }
    Ok(())
}

pub fn set_limits<S: GroupStorage + ?Sized>(
    storage: &mut S,
    group: &str,
    limits: GroupLimits,
) -> CoreResult<()> {
    validate_group(group)?;
    check_limits(&limits)?;
    let mut settings = storage.group_settings(group)?;
    settings.limits = limits;
    storage.set_group_settings(group, settings)?;
    resync(storage, group)
}

pub fn set_paused<S: GroupStorage + ?Sized>(
    storage: &mut S,
    group: &str,
    paused: bool,
) -> CoreResult<()> {
    validate_group(group)?;
    let mut settings = storage.group_settings(group)?;
    settings.paused = paused;
    storage.set_group_settings(group, settings)?;
    sync(storage, group)
}

/// `get_job_counts` restricted to `group`: in the order asked, a repeated state once.
pub fn counts<S: GroupStorage + ?Sized>(
    storage: &mut S,
    group: &str,
    states: &[JobState],
) -> CoreResult<Vec<(JobState, usize)>> {
    validate_group(group)?;
    let all = storage.group_counts(group)?;
    if states.is_empty() {
        return Ok(all);
    }
    let mut out: Vec<(JobState, usize)> = Vec::with_capacity(states.len());
    for state in states {
        if out.iter().all(|(s, _)| s != state) {
            let n = all.iter().find(|(s, _)| s == state).map_or(0, |(_, n)| *n);
            out.push((*state, n));
        }
    }
    Ok(out)
}

/// A page of the groups that hold jobs, are paused or have overrides, by name; and how many.
pub fn list<S: GroupStorage + ?Sized>(
    storage: &mut S,
    start: usize,
    count: usize,
) -> CoreResult<(Vec<GroupRow>, usize)> {
    let mut listed = Vec::new();
    for name in storage.group_names()? {
        let settings = storage.group_settings(&name)?;
        let counts = storage.group_counts(&name)?;
        let has_jobs = counts.iter().any(|(_, n)| *n > 0);
        if has_jobs || settings.paused || settings.limits != GroupLimits::default() {
            listed.push((name, settings.paused, counts));
        }
    }
    listed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let total = listed.len();
    let rows = listed
        .into_iter()
        .skip(start)
        .take(count)
        .map(|(name, paused, counts)| GroupRow {
            name,
            paused,
            counts,
        })
        .collect();
    Ok((rows, total))
}

/// The ids of `group`'s jobs in `states` (every state when empty), sorted by id.
pub fn job_ids<S: GroupStorage + ?Sized>(
    storage: &mut S,
    group: &str,
    states: &[JobState],
) -> CoreResult<Vec<String>> {
    validate_group(group)?;
    let states = if states.is_empty() {
        &JobState::ALL[..]
    } else {
        states
    };
    let mut ids = storage.group_ids(group, states)?;
    ids.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    ids.dedup();
    Ok(ids)
}

/// Removes `group`'s waiting and delayed jobs as `remove` would each; a job `remove` refuses
/// (a pending scheduler occurrence, a locked tree) is skipped. Returns how many went.
pub fn remove_group<S: JobStorage + GroupStorage>(
    storage: &mut S,
    group: &str,
    now: Millis,
) -> CoreResult<usize> {
    let ids = job_ids(storage, group, &[JobState::Waiting, JobState::Delayed])?;
    let mut removed = 0;
    for id in ids {
        match super::remove(storage, &id, now) {
            Ok(()) => removed += 1,
            // Gone already (a flow child removed with its parent's tree), or refused.
            Err(CoreError::JobNotFound(_) | CoreError::Refused(_) | CoreError::JobState { .. }) => {
            }
            Err(other) => return Err(other),
        }
    }
    Ok(removed)
}
