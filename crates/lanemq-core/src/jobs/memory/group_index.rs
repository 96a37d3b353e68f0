//! Where a grouped job is filed as it moves (`MemoryStore::group_moved`, called by the
//! store's index upkeep for a job with a group): a waiting one in its group's own index
//! (`group_table`), the others in the store's state indexes as any job; its group's counts;
//! and its group's place in the turns (`lifecycle::groups::sync`) when it entered or left
//! waiting or active. An ungrouped job never comes here.

use std::sync::Arc;

use crate::jobs::lifecycle;
use crate::jobs::model::JobState;

use super::job_id::JobId;
use super::store::{IndexEntry, MemoryStore, NO_FAILURE};

impl MemoryStore {
    /// A job of `group` moved from `was` to `now` (`None`: it was made, or deleted): its
    /// index entries, its group's counts, and the group's place in the turns
    /// (`lifecycle::groups::sync`) when it entered or left waiting or active.
    pub(super) fn group_moved(
        &mut self,
        group: &str,
        was: Option<IndexEntry>,
        now: Option<IndexEntry>,
        id: &JobId,
    ) {
        if let Some(was) = was {
            self.group_take(group, was, id);
        }
        if let Some(now) = now {
            self.group_put(group, now, Arc::clone(id));
        }
        let (from, to) = (was.map(IndexEntry::state), now.map(IndexEntry::state));
        if from == to {
            return;
        }
        if let Some(from) = from {
            self.groups.counted(group, from, -1);
        }
        if let Some(to) = to {
            self.groups.counted(group, to, 1);
        }
        let claims = |s: Option<JobState>| matches!(s, Some(JobState::Waiting | JobState::Active));
        if claims(from) || claims(to) {
            lifecycle::groups::sync(self, group).expect(NO_FAILURE);
        }
        self.groups.forget_if_blank(group);
    }

    /// `index_put` for a job of `group`: waiting in the group's own index.
    pub(super) fn group_put(&mut self, group: &str, entry: IndexEntry, id: JobId) {
        match entry {
            IndexEntry::Waiting(key) => {
                self.groups.entry(group).waiting.insert(key, id);
                self.drained_reported = false;
            }
            other => self.index_put(other, id),
        }
    }

    /// `index_take` for a job of `group`.
    pub(super) fn group_take(&mut self, group: &str, entry: IndexEntry, id: &JobId) {
        match entry {
            IndexEntry::Waiting(key) => {
                self.groups.entry(group).waiting.remove(&key);
            }
            other => self.index_take(other, id),
        }
    }
}
