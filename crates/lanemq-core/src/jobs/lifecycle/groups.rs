//! Groups (`contract::JobGroups`), decided once for the in-process backends over
//! `GroupStorage`, the little a store keeps per group: its waiting jobs in claim order, its
//! active count, its settings, its rate window, and the turns.
//!
//! The turns hold exactly the *claimable* groups (a waiting job, not paused, under their
//! concurrency, not held by their rate window), by the sequence at which each joined: the
//! claim takes the first, which goes to the back if still claimable (`claim_turns`). The store
//! calls `sync` whenever a grouped job enters or leaves waiting or active, so a group joins the
//! moment it becomes claimable and leaves the moment it is not: a held group is never scanned.
//! Ungrouped jobs are the group `UNGROUPED`; the store does not sync it per ungrouped job
//! (that would cost the ungrouped path): it is synced before any group joins and at each
//! grouped claim, which places it exactly where it would have joined, and a stale entry is
//! dropped when the claim meets it.

use std::collections::BTreeMap;

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::GroupLimits;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;

/// The turn key of ungrouped jobs (no group may be named "").
pub const UNGROUPED: &str = "";

/// A group's own settings (the defaults are not merged in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSettings {
    pub paused: bool,
    pub limits: GroupLimits,
}

/// One group as the claim reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupState {
    /// It has a waiting job.
    pub waiting: bool,
    pub active: usize,
    pub paused: bool,
    /// Its overrides over the queue's defaults (none for `UNGROUPED`).
    pub limits: GroupLimits,
    /// Its rate window: when it started, how many claims it gave.
    pub window: (Millis, u64),
    /// When its exhausted rate window ends (0: not held by its rate).
    pub held_until: Millis,
    pub in_turns: bool,
}

impl GroupState {
    pub fn claimable(&self) -> bool {
        self.waiting
            && !self.paused
            && self.held_until == 0
            && self
                .limits
                .concurrency
                .is_none_or(|max| self.active < max as usize)
    }
}

/// What the groups need of a store, beside `JobStorage`.
pub trait GroupStorage {
    /// Whether any group (not `UNGROUPED`) has a waiting job: without one, the claim is the
    /// plain one (`JobStorage::claim_head`, which takes ungrouped jobs only).
    fn groups_waiting(&mut self) -> CoreResult<bool>;
    fn group_state(&mut self, group: &str) -> CoreResult<GroupState>;
    /// The group whose turn it is.
    fn first_turn(&mut self) -> CoreResult<Option<String>>;
    /// Puts `group` at the back of the turns (`true`) or takes it out (`false`).
    fn set_turn(&mut self, group: &str, on: bool) -> CoreResult<()>;
    /// Takes the head of `group`'s waiting jobs (priority, then position), runs `change` on it
    /// and writes it as `update` does, without syncing the group (the claim does).
    fn take_group_head(
        &mut self,
        group: &str,
        change: &mut dyn FnMut(&mut Job),
    ) -> CoreResult<Option<Job>>;
    fn set_group_rate(
        &mut self,
        group: &str,
        window: (Millis, u64),
        held: Millis,
    ) -> CoreResult<()>;
    /// The groups held by a rate window that ended at or before `now`.
    fn rate_held_due(&mut self, now: Millis) -> CoreResult<Vec<String>>;
    /// The earliest end of a rate window that holds a group back, if any.
    fn next_rate_release(&mut self) -> CoreResult<Option<Millis>>;
    /// How many of `group`'s jobs are waiting or delayed (what its max_size bounds).
    fn group_queued(&mut self, group: &str) -> CoreResult<usize>;
    fn group_settings(&mut self, group: &str) -> CoreResult<GroupSettings>;
    fn set_group_settings(&mut self, group: &str, settings: GroupSettings) -> CoreResult<()>;
    fn group_defaults(&mut self) -> CoreResult<GroupLimits>;
    fn set_group_defaults(&mut self, limits: GroupLimits) -> CoreResult<()>;
    /// Every group the store knows (with jobs or settings), sorted by name.
    fn group_names(&mut self) -> CoreResult<Vec<String>>;
    /// Counts of `group`'s jobs, every state of `JobState::ALL` in its order.
    fn group_counts(&mut self, group: &str) -> CoreResult<Vec<(JobState, usize)>>;
    /// The ids of `group`'s jobs in `states` (any order).
    fn group_ids(&mut self, group: &str, states: &[JobState]) -> CoreResult<Vec<String>>;
}

/// Puts `group` in the turns or takes it out, as it is claimable or not.
pub fn sync<S: GroupStorage + ?Sized>(storage: &mut S, group: &str) -> CoreResult<()> {
    let state = storage.group_state(group)?;
    let claimable = state.claimable();
    if claimable == state.in_turns {
        return Ok(());
    }
    if claimable && group != UNGROUPED {
        // Ungrouped jobs that waited before this group joined go before it.
        sync(storage, UNGROUPED)?;
    }
    storage.set_turn(group, claimable)
}

/// Brings back the groups whose rate window ended (their next claim opens a new one).
pub fn release_rate_held<S: GroupStorage + ?Sized>(storage: &mut S, now: Millis) -> CoreResult<()> {
    for group in storage.rate_held_due(now)? {
        let window = storage.group_state(&group)?.window;
        storage.set_group_rate(&group, window, 0)?;
        sync(storage, &group)?;
    }
    Ok(())
}

/// The claim by turns: up to `allowed` jobs, one per turn. `None` when no group has a waiting
/// job: the caller claims the plain way.
pub fn claim_turns<S: GroupStorage + ?Sized>(
    storage: &mut S,
    allowed: usize,
    now: Millis,
    change: &mut dyn FnMut(&mut Job),
) -> CoreResult<Option<Vec<Job>>> {
    release_rate_held(storage, now)?;
    if !storage.groups_waiting()? {
        return Ok(None);
    }
    sync(storage, UNGROUPED)?;
    let mut claimed = Vec::new();
    while claimed.len() < allowed {
        let Some(group) = storage.first_turn()? else {
            break;
        };
        let state = storage.group_state(&group)?;
        storage.set_turn(&group, false)?;
        if !state.claimable() {
            continue; // (a stale `UNGROUPED`)
        }
        let mut window = None;
        if let Some((max, duration)) = state.limits.rate {
            let (start, used) = state.window;
            let (start, used) = if now >= start.saturating_add(duration) {
                (now, 0)
            } else {
                (start, used)
            };
            let end = start.saturating_add(duration);
            if used >= u64::from(max) {
                // A lowered limit: held until the window ends, no claim.
                storage.set_group_rate(&group, (start, used), end)?;
                continue;
            }
            let held = if used + 1 >= u64::from(max) { end } else { 0 };
            window = Some(((start, used + 1), held));
        }
        let Some(job) = storage.take_group_head(&group, change)? else {
            continue;
        };
        if let Some((window, held)) = window {
            storage.set_group_rate(&group, window, held)?;
        }
        claimed.push(job);
        sync(storage, &group)?;
    }
    Ok(Some(claimed))
}

/// Refuses an add that would take a group past its max_size (`CoreError::GroupFull`); run
/// before anything is written.
pub fn check_room<'a, S: GroupStorage + ?Sized>(
    storage: &mut S,
    jobs: impl IntoIterator<Item = &'a JobOptions>,
) -> CoreResult<()> {
    let mut adding: BTreeMap<&str, usize> = BTreeMap::new();
    for options in jobs {
        if let Some(group) = &options.group {
            *adding.entry(group).or_default() += 1;
        }
    }
    for (group, n) in adding {
        let Some(max_size) = storage.group_state(group)?.limits.max_size else {
            continue;
        };
        if storage.group_queued(group)? + n > max_size as usize {
            return Err(CoreError::GroupFull {
                group: group.to_owned(),
                max_size,
            });
        }
    }
    Ok(())
}

/// Each field of `overrides` over `defaults`'.
pub fn merged(overrides: &GroupLimits, defaults: &GroupLimits) -> GroupLimits {
    GroupLimits {
        concurrency: overrides.concurrency.or(defaults.concurrency),
        rate: overrides.rate.or(defaults.rate),
        max_size: overrides.max_size.or(defaults.max_size),
    }
}

/// Refuses a zero limit (a rate of 0 claims or per 0 ms, a concurrency or max_size of 0).
pub fn check_limits(limits: &GroupLimits) -> CoreResult<()> {
    let zero_rate = limits.rate.is_some_and(|(max, ms)| max == 0 || ms == 0);
    if zero_rate || limits.concurrency == Some(0) || limits.max_size == Some(0) {
        return Err(CoreError::InvalidConfig(format!(
            "invalid group limits: {limits:?} (every limit must be positive)"
        )));
    }
    Ok(())
}
