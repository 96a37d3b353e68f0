//! `MemoryStore` as the `SchedulerTable` that `lifecycle::schedulers` writes (over its
//! `Schedulers`, `scheduler_map.rs`), the pending occurrences drain and clean keep, the store's
//! scheduler entry points, and `JobSchedulers` for `MemoryBackend`.

use std::collections::HashSet;
use std::sync::Arc;

use crate::error::CoreResult;
use crate::schedule::ScheduleSpec;

use super::store::MemoryStore;
use super::{settle_missing, MemoryBackend};
use crate::jobs::contract::{BoxFuture, JobSchedulers};
use crate::jobs::lifecycle::{self, SchedulerTable, StoredScheduler};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::scheduler::{self, occurrence_id, JobScheduler, Template};

impl SchedulerTable for MemoryStore {
    fn scheduler(&self, key: &str) -> CoreResult<Option<StoredScheduler>> {
        Ok(self.schedulers.by_key.get(key).cloned())
    }

    fn scheduler_next_run(&self, key: &str) -> CoreResult<Option<Millis>> {
        Ok(self.schedulers.by_key.get(key).map(|s| s.next_run))
    }

    fn save_scheduler(&mut self, key: &str, scheduler: StoredScheduler) -> CoreResult<()> {
        match self.schedulers.by_key.get_mut(key) {
            Some(stored) => *stored = scheduler,
            None => {
                self.schedulers.by_key.insert(Arc::from(key), scheduler);
            }
        }
        Ok(())
    }

    fn delete_scheduler(&mut self, key: &str) -> CoreResult<bool> {
        Ok(self.schedulers.by_key.remove(key).is_some())
    }

    fn scheduler_count(&self) -> CoreResult<usize> {
        Ok(self.schedulers.by_key.len())
    }

    fn scheduler_page(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<Vec<(String, StoredScheduler)>> {
        let all: Vec<(&Arc<str>, &StoredScheduler)> = self.schedulers.by_key.iter().collect();
        let page = scheduler::page(all, |(k, s)| (s.next_run, &***k), start, end, ascending);
        Ok(page
            .into_iter()
            .map(|(key, stored)| (key.to_string(), stored.clone()))
            .collect())
    }

    fn occurrence_state(&self, id: &str) -> CoreResult<Option<JobState>> {
        Ok(self.jobs.get(id).map(|j| j.state))
    }
}

impl MemoryStore {
    /// The ids of the schedulers' pending occurrences (drain and clean keep them).
    pub(super) fn pending_occurrence_ids(&self) -> HashSet<String> {
        self.schedulers
            .by_key
            .iter()
            .map(|(key, s)| occurrence_id(key, s.next_run))
            .collect()
    }

    /// Creates or updates the scheduler `key`; returns its pending occurrence.
    pub fn upsert_scheduler(
        &mut self,
        key: &str,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> CoreResult<Job> {
        let max_payload_bytes = self.config.max_payload_bytes;
        lifecycle::schedulers::upsert(self, key, spec, template, max_payload_bytes, now)
    }

    /// Removes the scheduler `key` and its pending occurrence (if it has not started); `true`
    /// if the scheduler existed.
    pub fn remove_scheduler(&mut self, key: &str, now: Millis) -> bool {
        lifecycle::schedulers::remove(self, key, now).expect("the memory store does not fail")
    }

    pub fn get_scheduler(&self, key: &str) -> Option<JobScheduler> {
        lifecycle::schedulers::get(self, key).expect("the memory store does not fail")
    }

    /// Schedulers by next run time (then key), from index `start` to `end` inclusive.
    pub fn list_schedulers(&self, start: i64, end: i64, ascending: bool) -> Vec<JobScheduler> {
        lifecycle::schedulers::list(self, start, end, ascending)
            .expect("the memory store does not fail")
    }

    pub fn count_schedulers(&self) -> usize {
        self.schedulers.by_key.len()
    }
}

impl JobSchedulers for MemoryBackend {
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        self.write(|s| {
            let max = s.store.config.max_payload_bytes;
            let pending =
                lifecycle::schedulers::upsert(&mut s.store, &key, spec, template, max, now);
            settle_missing(s);
            pending
        })
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.read(|store| lifecycle::schedulers::get(store, &key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.read(|store| lifecycle::schedulers::list(store, start, end, ascending))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.read(|store| store.scheduler_count())
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| {
            let existed = lifecycle::schedulers::remove(&mut s.store, &key, now);
            settle_missing(s);
            existed
        })
    }
}

/// `lifecycle::schedulers` over the memory store.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::options::{JobOptions, StoreConfig};

    const T: Millis = 1_000_000;

    fn template() -> Template {
        Template {
            name: "tick".into(),
            data: "null".into(),
            options: JobOptions::default(),
        }
    }

    #[test]
    fn lists_by_next_run_either_way_and_removal_takes_the_pending_occurrence() {
        let mut s = MemoryStore::new(StoreConfig::default());
        for (key, start) in [("b", T + 20), ("a", T + 10), ("c", T + 10)] {
            let mut spec = ScheduleSpec::every(1000);
            spec.start = Some(start);
            s.upsert_scheduler(key, spec, template(), T).unwrap();
        }
        let keys = |list: Vec<JobScheduler>| list.into_iter().map(|j| j.key).collect::<Vec<_>>();
        assert_eq!(keys(s.list_schedulers(0, -1, true)), ["a", "c", "b"]);
        assert_eq!(keys(s.list_schedulers(0, 1, false)), ["b", "c"]);

        let pending = s.get_scheduler("a").unwrap().job_id.unwrap();
        let before = s.last_event_id();
        assert!(s.remove_scheduler("a", T));
        assert!(!s.remove_scheduler("a", T));
        assert!(s.get_job(&pending).is_none());
        let removed = s.read_events(before + 1, u64::MAX, 10);
        assert_eq!(removed.len(), 1);
        assert_eq!(
            (removed[0].event, removed[0].job_id.as_deref()),
            ("removed", Some(&*pending))
        );
        assert_eq!(s.count_schedulers(), 2);
    }
}
