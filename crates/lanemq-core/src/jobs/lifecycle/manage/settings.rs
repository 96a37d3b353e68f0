//! The queue's settings: pause and resume (each with its event, only when it changes
//! something), the windowed rate limit, the manual rate-limit wait, and the cap on active jobs.
//! Claims read them together as the `Gate`.

use crate::error::CoreResult;
use crate::jobs::model::{check_max_active, check_rate_limit, rate_limit_end, JobState, Millis};

use super::super::storage::Gate;
use super::storage::ManageStorage;

/// Pauses (`true`) or resumes the queue; a `paused` or `resumed` event when that changes it.
pub fn set_paused<S: ManageStorage>(storage: &mut S, paused: bool, now: Millis) -> CoreResult<()> {
    if storage.gate()?.paused == paused {
        return Ok(());
    }
    storage.set_paused(paused)?;
    let name = if paused { "paused" } else { "resumed" };
    storage.event(now, name, None, None)
}

pub fn is_paused<S: ManageStorage>(storage: &mut S) -> CoreResult<bool> {
    Ok(storage.gate()?.paused)
}

/// At most `max` claims per `duration` ms; `InvalidConfig` for a limit that cannot work.
pub fn set_rate_limit<S: ManageStorage>(
    storage: &mut S,
    max: u32,
    duration: Millis,
) -> CoreResult<()> {
    check_rate_limit(max, duration)?;
    storage.set_rate_limit(Some((max, duration)))
}

pub fn get_rate_limit<S: ManageStorage>(storage: &mut S) -> CoreResult<Option<(u32, Millis)>> {
    Ok(storage.gate()?.rate_limit)
}

pub fn clear_rate_limit<S: ManageStorage>(storage: &mut S) -> CoreResult<()> {
    storage.set_rate_limit(None)
}

/// Holds every claim back for `duration` ms from `now` (BullMQ's `rateLimit`); a later call
/// replaces the wait. The windowed limit still applies: the later end wins.
pub fn rate_limit<S: ManageStorage>(
    storage: &mut S,
    duration: Millis,
    now: Millis,
) -> CoreResult<()> {
    let until = rate_limit_end(duration, now)?;
    storage.set_rate_until(until)
}

/// How long the rate limits still hold claims back at `now`, in ms (0: they do not).
pub fn get_rate_limit_ttl<S: ManageStorage>(storage: &mut S, now: Millis) -> CoreResult<Millis> {
    Ok(rate_limit_ttl(&storage.gate()?, now))
}

pub(super) fn rate_limit_ttl(gate: &Gate, now: Millis) -> Millis {
    gate.limited_until(now).map_or(0, |end| end - now)
}

/// Ends the manual wait and the current window (the next claim opens a new one).
pub fn remove_rate_limit_key<S: ManageStorage>(storage: &mut S) -> CoreResult<()> {
    storage.set_rate_until(0)?;
    storage.set_rate_window((0, 0))
}

/// The cap on active jobs across workers (`None`: no cap); `InvalidConfig` for 0.
pub fn set_max_active<S: ManageStorage>(storage: &mut S, max: Option<u32>) -> CoreResult<()> {
    check_max_active(max)?;
    storage.set_max_active(max)
}

pub fn get_max_active<S: ManageStorage>(storage: &mut S) -> CoreResult<Option<u32>> {
    Ok(storage.gate()?.max_active)
}

/// Whether the active jobs reached the cap.
pub fn is_maxed<S: ManageStorage>(storage: &mut S) -> CoreResult<bool> {
    match storage.gate()?.max_active {
        Some(max) => Ok(storage.count(JobState::Active)? >= max as usize),
        None => Ok(false),
    }
}
