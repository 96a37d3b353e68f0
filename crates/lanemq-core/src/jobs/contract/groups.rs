//! Groups (`JobOptions::group`): fair turns between groups at the claim, limits held per group
//! across every worker and process, and the management of one group.
//!
//! The claim gives groups turns, round robin: with G groups that have claimable jobs, a
//! group's next job is among the next G jobs claimed, inside one multi-job claim too.
//! Ungrouped jobs take their turn as one group of their own. Within a group, priority then
//! FIFO/LIFO as without groups. A paused group, or one held by its concurrency or rate
//! limit, is out of the turns until it is claimable again; its jobs never delay another
//! group's.
//!
//! Until every backend implements this trait, its methods default to `Refused` (the bindings
//! raise it as an error naming the operation).

use crate::error::CoreError;
use crate::jobs::model::{JobState, Millis};

use super::{ready, BoxFuture};

/// Limits of one group, or the queue-wide defaults every group has unless overridden.
/// `None` fields: no limit (defaults), or the default's (a group's overrides).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupLimits {
    /// At most this many active jobs of the group at once, across every worker.
    pub concurrency: Option<u32>,
    /// At most `.0` claims of the group per `.1` ms.
    pub rate: Option<(u32, Millis)>,
    /// At most this many jobs of the group waiting, prioritized or delayed: an add beyond it
    /// is refused with `CoreError::GroupFull`, writing nothing.
    pub max_size: Option<u32>,
}

/// One group as `list_groups` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    pub name: String,
    pub paused: bool,
    /// Jobs of the group per state, every state in `JobState::ALL`'s order.
    pub counts: Vec<(JobState, usize)>,
}

fn not_yet<T: Send + 'static>(operation: &str) -> BoxFuture<T> {
    ready(Err(CoreError::Refused(format!(
        "{operation}: groups are not implemented by this backend yet"
    ))))
}

pub trait JobGroups: Send + Sync + 'static {
    /// Replaces the queue-wide defaults (each field `None`: no limit).
    fn set_group_defaults(&self, limits: GroupLimits) -> BoxFuture<()> {
        let _ = limits;
        not_yet("set_group_defaults")
    }
    fn get_group_defaults(&self) -> BoxFuture<GroupLimits> {
        not_yet("get_group_defaults")
    }
    /// Replaces `group`'s overrides (each field `None`: the default's). Takes effect at the
    /// next claim; a lower concurrency than the group's active jobs holds it until they end.
    fn set_group_limits(&self, group: String, limits: GroupLimits) -> BoxFuture<()> {
        let _ = (group, limits);
        not_yet("set_group_limits")
    }
    /// `group`'s overrides as set (not merged with the defaults).
    fn get_group_limits(&self, group: String) -> BoxFuture<GroupLimits> {
        let _ = group;
        not_yet("get_group_limits")
    }
    /// Holds the group's jobs back from claims (its active jobs run on); kept for a group
    /// that has no jobs yet.
    fn pause_group(&self, group: String, now: Millis) -> BoxFuture<()> {
        let _ = (group, now);
        not_yet("pause_group")
    }
    fn resume_group(&self, group: String, now: Millis) -> BoxFuture<()> {
        let _ = (group, now);
        not_yet("resume_group")
    }
    fn is_group_paused(&self, group: String) -> BoxFuture<bool> {
        let _ = group;
        not_yet("is_group_paused")
    }
    /// `get_job_counts` for the jobs of one group (every state when `states` is empty).
    fn get_group_counts(
        &self,
        group: String,
        states: Vec<JobState>,
    ) -> BoxFuture<Vec<(JobState, usize)>> {
        let _ = (group, states);
        not_yet("get_group_counts")
    }
    /// The groups that hold jobs, are paused or have limits set, sorted by name: `count` of
    /// them from `start`, and how many there are in all.
    fn list_groups(&self, start: usize, count: usize) -> BoxFuture<(Vec<GroupRow>, usize)> {
        let _ = (start, count);
        not_yet("list_groups")
    }
    /// The ids of the group's jobs in `states` (every state when empty), sorted by id.
    fn group_job_ids(&self, group: String, states: Vec<JobState>) -> BoxFuture<Vec<String>> {
        let _ = (group, states);
        not_yet("group_job_ids")
    }
    /// Removes the group's waiting, prioritized and delayed jobs (as `remove` would each);
    /// returns how many.
    fn remove_group(&self, group: String, now: Millis) -> BoxFuture<usize> {
        let _ = (group, now);
        not_yet("remove_group")
    }
}
