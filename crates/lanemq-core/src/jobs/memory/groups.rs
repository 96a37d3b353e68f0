//! Groups on this backend (`contract::JobGroups`): the memory store as the `GroupStorage` the
//! shared decisions (`lifecycle::groups`, `lifecycle::group_admin`) run over, its tables being
//! `group_table`'s.

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, GroupLimits, GroupRow, JobGroups};
use crate::jobs::lifecycle::group_admin;
use crate::jobs::lifecycle::{GroupSettings, GroupState, GroupStorage, UNGROUPED};
use crate::jobs::model::{Job, JobState, Millis};

use super::group_table::state_index;
use super::store::{IndexEntry, MemoryStore};
use super::MemoryBackend;

impl GroupStorage for MemoryStore {
    fn groups_waiting(&mut self) -> CoreResult<bool> {
        Ok(self.groups.waiting_total > 0)
    }

    fn group_state(&mut self, group: &str) -> CoreResult<GroupState> {
        Ok(self.groups.state(group, !self.waiting.is_empty()))
    }

    fn first_turn(&mut self) -> CoreResult<Option<String>> {
        Ok(self.groups.first_turn())
    }

    fn set_turn(&mut self, group: &str, on: bool) -> CoreResult<()> {
        self.groups.set_turn(group, on);
        Ok(())
    }

    fn take_group_head(
        &mut self,
        group: &str,
        change: &mut dyn FnMut(&mut Job),
    ) -> CoreResult<Option<Job>> {
        let head = if group == UNGROUPED {
            self.waiting.pop_first()
        } else {
            self.groups
                .entries
                .get_mut(group)
                .and_then(|entry| entry.waiting.pop_first())
        };
        let Some((_, id)) = head else {
            return Ok(None);
        };
        let job = self.jobs.get_mut(&id).expect("waiting job exists");
        change(job);
        let claimed = job.clone();
        let entry = IndexEntry::of(job);
        self.index_put(entry, id);
        if group != UNGROUPED {
            self.groups.counted(group, JobState::Waiting, -1);
            self.groups.counted(group, entry.state(), 1);
        }
        Ok(Some(claimed))
    }

    fn set_group_rate(
        &mut self,
        group: &str,
        window: (Millis, u64),
        held: Millis,
    ) -> CoreResult<()> {
        self.groups.set_rate(group, window, held);
        Ok(())
    }

    fn rate_held_due(&mut self, now: Millis) -> CoreResult<Vec<String>> {
        Ok(self.groups.rate_held_due(now))
    }

    fn next_rate_release(&mut self) -> CoreResult<Option<Millis>> {
        Ok(self.groups.next_rate_release())
    }

    fn group_queued(&mut self, group: &str) -> CoreResult<usize> {
        Ok(self.groups.entries.get(group).map_or(0, |entry| {
            entry.counts[state_index(JobState::Waiting)]
                + entry.counts[state_index(JobState::Delayed)]
        }))
    }

    fn group_settings(&mut self, group: &str) -> CoreResult<GroupSettings> {
        Ok(self
            .groups
            .entries
            .get(group)
            .map(|entry| entry.settings.clone())
            .unwrap_or_default())
    }

    fn set_group_settings(&mut self, group: &str, settings: GroupSettings) -> CoreResult<()> {
        self.groups.entry(group).settings = settings;
        self.groups.forget_if_blank(group);
        Ok(())
    }

    fn group_defaults(&mut self) -> CoreResult<GroupLimits> {
        Ok(self.groups.defaults.clone())
    }

    fn set_group_defaults(&mut self, limits: GroupLimits) -> CoreResult<()> {
        self.groups.defaults = limits;
        Ok(())
    }

    fn group_names(&mut self) -> CoreResult<Vec<String>> {
        Ok(self.groups.entries.keys().map(|g| g.to_string()).collect())
    }

    fn group_counts(&mut self, group: &str) -> CoreResult<Vec<(JobState, usize)>> {
        let counts = self
            .groups
            .entries
            .get(group)
            .map(|entry| entry.counts)
            .unwrap_or_default();
        Ok(JobState::ALL.into_iter().zip(counts).collect())
    }

    /// A scan of the store's jobs: a management read, not on any claim's path.
    fn group_ids(&mut self, group: &str, states: &[JobState]) -> CoreResult<Vec<String>> {
        Ok(self
            .jobs
            .values()
            .filter(|job| {
                job.options.group.as_deref() == Some(group) && states.contains(&job.state)
            })
            .map(|job| job.id.to_string())
            .collect())
    }
}

impl JobGroups for MemoryBackend {
    fn set_group_defaults(&self, limits: GroupLimits) -> BoxFuture<()> {
        self.write(|s| group_admin::set_defaults(&mut s.store, limits))
    }

    fn get_group_defaults(&self) -> BoxFuture<GroupLimits> {
        self.read(|store| store.group_defaults())
    }

    fn set_group_limits(&self, group: String, limits: GroupLimits) -> BoxFuture<()> {
        self.write(|s| group_admin::set_limits(&mut s.store, &group, limits))
    }

    fn get_group_limits(&self, group: String) -> BoxFuture<GroupLimits> {
        self.read(|store| Ok(store.group_settings(&group)?.limits))
    }

    fn pause_group(&self, group: String, _now: Millis) -> BoxFuture<()> {
        self.write(|s| group_admin::set_paused(&mut s.store, &group, true))
    }

    fn resume_group(&self, group: String, _now: Millis) -> BoxFuture<()> {
        self.write(|s| group_admin::set_paused(&mut s.store, &group, false))
    }

    fn is_group_paused(&self, group: String) -> BoxFuture<bool> {
        self.read(|store| Ok(store.group_settings(&group)?.paused))
    }

    fn get_group_counts(
        &self,
        group: String,
        states: Vec<JobState>,
    ) -> BoxFuture<Vec<(JobState, usize)>> {
        self.read(|store| group_admin::counts(store, &group, &states))
    }

    fn list_groups(&self, start: usize, count: usize) -> BoxFuture<(Vec<GroupRow>, usize)> {
        self.read(|store| group_admin::list(store, start, count))
    }

    fn group_job_ids(&self, group: String, states: Vec<JobState>) -> BoxFuture<Vec<String>> {
        self.read(|store| group_admin::job_ids(store, &group, &states))
    }

    fn remove_group(&self, group: String, now: Millis) -> BoxFuture<usize> {
        self.write_group(|queues, index| {
            let store = &mut queues.states[index].store;
            group_admin::remove_group(store, &group, now)
        })
    }
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
