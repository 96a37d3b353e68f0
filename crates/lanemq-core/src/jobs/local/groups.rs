//! Groups on this backend (`contract::JobGroups`): each operation is the shared one
//! (`lifecycle::group_admin`) on the file, one writer-thread operation (its tables are
//! `group_rows`'), so every process sharing the file sees the same groups.

use crate::jobs::contract::{BoxFuture, GroupLimits, GroupRow, JobGroups};
use crate::jobs::lifecycle::{group_admin, GroupStorage};
use crate::jobs::model::{JobState, Millis};

use super::LocalBackend;

impl JobGroups for LocalBackend {
    fn set_group_defaults(&self, limits: GroupLimits) -> BoxFuture<()> {
        self.call_store(move |s| group_admin::set_defaults(s, limits))
    }

    fn get_group_defaults(&self) -> BoxFuture<GroupLimits> {
        self.call_store(move |s| s.group_defaults())
    }

    fn set_group_limits(&self, group: String, limits: GroupLimits) -> BoxFuture<()> {
        self.call_store(move |s| group_admin::set_limits(s, &group, limits))
    }

    fn get_group_limits(&self, group: String) -> BoxFuture<GroupLimits> {
        self.call_store(move |s| Ok(s.group_settings(&group)?.limits))
    }

    fn pause_group(&self, group: String, _now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| group_admin::set_paused(s, &group, true))
    }

    fn resume_group(&self, group: String, _now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| group_admin::set_paused(s, &group, false))
    }

    fn is_group_paused(&self, group: String) -> BoxFuture<bool> {
        self.call_store(move |s| Ok(s.group_settings(&group)?.paused))
    }

    fn get_group_counts(
        &self,
        group: String,
        states: Vec<JobState>,
    ) -> BoxFuture<Vec<(JobState, usize)>> {
        self.call_store(move |s| group_admin::counts(s, &group, &states))
    }

    fn list_groups(&self, start: usize, count: usize) -> BoxFuture<(Vec<GroupRow>, usize)> {
        self.call_store(move |s| group_admin::list(s, start, count))
    }

    fn group_job_ids(&self, group: String, states: Vec<JobState>) -> BoxFuture<Vec<String>> {
        self.call_store(move |s| group_admin::job_ids(s, &group, &states))
    }

    fn remove_group(&self, group: String, now: Millis) -> BoxFuture<usize> {
        self.call_store(move |s| group_admin::remove_group(s, &group, now))
    }
}
