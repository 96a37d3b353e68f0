//! `GroupTable`: what the memory store keeps per group (`lifecycle::groups`). A grouped
//! waiting job is filed in its group's own waiting index (not the store's, which holds the
//! ungrouped ones only), so a group's head is O(log n) and a held group's jobs are never
//! scanned. The turns are a `BTreeMap` by join sequence, each group knowing its own entry;
//! groups held by their rate window are a `BTreeSet` by the window's end.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::jobs::contract::GroupLimits;
use crate::jobs::lifecycle::groups::merged;
use crate::jobs::lifecycle::{GroupSettings, GroupState, UNGROUPED};
use crate::jobs::model::{JobState, Millis, JOB_STATES_COUNT};

use super::job_id::JobId;

#[derive(Debug, Default)]
pub(super) struct GroupEntry {
    /// (priority, order) -> id, as the store's waiting index.
    pub(super) waiting: BTreeMap<(u32, i64), JobId>,
    /// Jobs per state, in `JobState::ALL`'s order.
    pub(super) counts: [usize; JOB_STATES_COUNT],
    pub(super) settings: GroupSettings,
    pub(super) window: (Millis, u64),
    pub(super) held_until: Millis,
    turn: Option<u64>,
}

impl GroupEntry {
    /// Nothing worth keeping: no jobs, no settings, no rate window (a window outlives the
    /// group's jobs: a job added before it ends counts in it), out of the turns.
    fn is_blank(&self) -> bool {
        self.counts.iter().all(|n| *n == 0)
            && self.settings == GroupSettings::default()
            && self.window == (0, 0)
            && self.held_until == 0
            && self.turn.is_none()
    }
}

#[derive(Debug, Default)]
pub(super) struct GroupTable {
    pub(super) entries: BTreeMap<Arc<str>, GroupEntry>,
    turns: BTreeMap<u64, Arc<str>>,
    ungrouped_turn: Option<u64>,
    next_turn: u64,
    held: BTreeSet<(Millis, Arc<str>)>,
    pub(super) defaults: GroupLimits,
    /// Grouped jobs waiting, all groups together.
    pub(super) waiting_total: usize,
}

pub(super) fn state_index(state: JobState) -> usize {
    JobState::ALL
        .iter()
        .position(|s| *s == state)
        .expect("every state is in ALL")
}

impl GroupTable {
    /// `group`'s entry, made if it has none.
    pub(super) fn entry(&mut self, group: &str) -> &mut GroupEntry {
        if !self.entries.contains_key(group) {
            self.entries.insert(Arc::from(group), GroupEntry::default());
        }
        self.entries.get_mut(group).expect("just made")
    }

    /// Drops `group`'s entry if it keeps nothing.
    pub(super) fn forget_if_blank(&mut self, group: &str) {
        if self.entries.get(group).is_some_and(GroupEntry::is_blank) {
            self.entries.remove(group);
        }
    }

    pub(super) fn counted(&mut self, group: &str, state: JobState, delta: isize) {
        let count = &mut self.entry(group).counts[state_index(state)];
        *count = count.saturating_add_signed(delta);
        if state == JobState::Waiting {
            self.waiting_total = self.waiting_total.saturating_add_signed(delta);
        }
    }

    /// `group` as the claim reads it; `ungrouped_waiting` for `UNGROUPED`.
    pub(super) fn state(&self, group: &str, ungrouped_waiting: bool) -> GroupState {
        if group == UNGROUPED {
            return GroupState {
                waiting: ungrouped_waiting,
                in_turns: self.ungrouped_turn.is_some(),
                ..GroupState::default()
            };
        }
        let Some(entry) = self.entries.get(group) else {
            return GroupState {
                limits: self.defaults.clone(),
                ..GroupState::default()
            };
        };
        GroupState {
            waiting: !entry.waiting.is_empty(),
            active: entry.counts[state_index(JobState::Active)],
            paused: entry.settings.paused,
            limits: merged(&entry.settings.limits, &self.defaults),
            window: entry.window,
            held_until: entry.held_until,
            in_turns: entry.turn.is_some(),
        }
    }

    pub(super) fn set_turn(&mut self, group: &str, on: bool) {
        let turn = if on {
            self.next_turn += 1;
            Some(self.next_turn)
        } else {
            None
        };
        let old = if group == UNGROUPED {
            std::mem::replace(&mut self.ungrouped_turn, turn)
        } else {
            std::mem::replace(&mut self.entry(group).turn, turn)
        };
        if let Some(old) = old {
            self.turns.remove(&old);
        }
        if let Some(turn) = turn {
            let name = match self.entries.get_key_value(group) {
                Some((name, _)) => Arc::clone(name),
                None => Arc::from(group),
            };
            self.turns.insert(turn, name);
        } else {
            self.forget_if_blank(group);
        }
    }

    pub(super) fn first_turn(&self) -> Option<String> {
        self.turns.first_key_value().map(|(_, g)| g.to_string())
    }

    /// Whether a group may take a turn now (the ungrouped jobs' own entry may be stale: not
    /// counted).
    pub(super) fn any_group_turn(&self) -> bool {
        self.turns.len() > usize::from(self.ungrouped_turn.is_some())
    }

    pub(super) fn set_rate(&mut self, group: &str, window: (Millis, u64), held: Millis) {
        let entry = self.entry(group);
        entry.window = window;
        let was = std::mem::replace(&mut entry.held_until, held);
        if was != 0 {
            self.held.remove(&(was, Arc::from(group)));
        }
        if held != 0 {
            self.held.insert((held, Arc::from(group)));
        }
    }

    pub(super) fn rate_held_due(&self, now: Millis) -> Vec<String> {
        self.held
            .iter()
            .take_while(|(end, _)| *end <= now)
            .map(|(_, group)| group.to_string())
            .collect()
    }

    pub(super) fn next_rate_release(&self) -> Option<Millis> {
        self.held.first().map(|(end, _)| *end)
    }

    /// Grouped waiting jobs: (priority, order) and id, of every group.
    pub(super) fn waiting_keys(&self) -> impl Iterator<Item = (&(u32, i64), &JobId)> {
        self.entries.values().flat_map(|entry| entry.waiting.iter())
    }
}
