//! The memory store as the `ManageStorage` the shared management (`lifecycle::manage`) runs
//! over: pages of its per-state indexes, a job's fields and log in place, its settings as
//! fields. Also its plain reads (a job, a count) and its event stream.

use std::sync::Arc;

use crate::error::CoreResult;

use super::job_id::JobId;
use super::store::MemoryStore;
use crate::jobs::events::{check_custom_event, StreamEvent, Text, CUSTOM_EVENT};
use crate::jobs::lifecycle::ManageStorage;
use crate::jobs::model::{Job, JobState, LogLine, Millis};

impl MemoryStore {
    pub fn get_job(&self, id: &str) -> Option<Job> {
        self.jobs.get(id).cloned()
    }

    pub fn count(&self, state: JobState) -> usize {
        match state {
            JobState::Waiting => self.waiting.len() + self.groups.waiting_total,
            JobState::Delayed => self.delayed.len(),
            JobState::Active => self.active.len(),
            JobState::WaitingChildren => self.waiting_children.len(),
            JobState::Completed => self.completed.len(),
            JobState::Failed => self.failed.len(),
        }
    }

    /// The ids of `state`'s jobs in its index's order.
    pub(super) fn ids_in(
        &self,
        state: JobState,
    ) -> Box<dyn DoubleEndedIterator<Item = &JobId> + '_> {
        match state {
            JobState::Waiting if self.groups.waiting_total == 0 => Box::new(self.waiting.values()),
            JobState::Waiting => {
                // The ungrouped jobs first, then the grouped ones (in their groups' indexes)
                // by priority and position, as SQLite's and Redis's waiting indexes list them.
                let mut grouped: Vec<_> = self.groups.waiting_keys().collect();
                grouped.sort_unstable_by_key(|(key, _)| **key);
                let ungrouped = self.waiting.values();
                Box::new(ungrouped.chain(grouped.into_iter().map(|(_, id)| id)))
            }
            JobState::Delayed => Box::new(self.delayed.iter().map(|(_, _, id)| id)),
            JobState::Active => Box::new(self.active.iter().map(|(_, _, id)| id)),
            JobState::WaitingChildren => Box::new(self.waiting_children.iter().map(|(_, id)| id)),
            JobState::Completed => Box::new(self.completed.iter().map(|(_, _, id)| id)),
            JobState::Failed => Box::new(self.failed.iter().map(|(_, _, id)| id)),
        }
    }

    /// `lifecycle::remove` on this store, for the group's `flows::remove_tree` (which checks
    /// the other queues first).
    pub(super) fn remove(&mut self, id: &str, now: Millis) -> CoreResult<()> {
        crate::jobs::lifecycle::remove(self, id, now)
    }

    fn logs_mut(&mut self, id: &str) -> Option<&mut Vec<LogLine>> {
        self.jobs.get_mut(id).map(|job| &mut job.logs)
    }

    pub fn read_events(&self, start: u64, end: u64, limit: usize) -> Vec<StreamEvent> {
        self.events.read(start, end, limit)
    }

    pub fn trim_events(&mut self, max_len: usize) -> usize {
        self.events.trim(max_len)
    }

    pub fn last_event_id(&self) -> u64 {
        self.events.last_id()
    }

    /// Appends a custom event (`JobEvents::publish_event`); returns its id.
    pub fn publish_event(
        &mut self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> CoreResult<u64> {
        check_custom_event(&name, &data, self.config.max_payload_bytes)?;
        let job = job_id.map(Arc::<str>::from);
        self.events.push_fields(
            now,
            CUSTOM_EVENT,
            job.as_ref(),
            Some(("name", Text::Owned(name))),
            Some(("data", Text::Owned(data))),
        );
        Ok(self.events.last_id())
    }
}

impl ManageStorage for MemoryStore {
    fn max_payload_bytes(&self) -> usize {
        self.config.max_payload_bytes
    }

    fn exists(&mut self, id: &str) -> CoreResult<bool> {
        Ok(self.jobs.contains_key(id))
    }

    fn with_job<R>(&mut self, id: &str, read: impl FnOnce(&Job) -> R) -> CoreResult<Option<R>> {
        Ok(self.jobs.get(id).map(read))
    }

    fn page(
        &mut self,
        state: JobState,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<Job>> {
        let ids = self.ids_in(state);
        let ids = if ascending { ids } else { Box::new(ids.rev()) };
        Ok(ids
            .skip(skip)
            .take(take)
            .map(|id| self.jobs[id].clone())
            .collect())
    }

    fn count_waiting_at(&mut self, priority: u32) -> CoreResult<usize> {
        let range = (priority, i64::MIN)..=(priority, i64::MAX);
        let grouped: usize = (self.groups.entries.values())
            .map(|entry| entry.waiting.range(range.clone()).count())
            .sum();
        Ok(self.waiting.range(range).count() + grouped)
    }

    fn set_data(&mut self, id: &str, data: &str) -> CoreResult<bool> {
        Ok(match self.jobs.get_mut(id) {
            Some(job) => {
                job.data = Arc::from(data);
                true
            }
            None => false,
        })
    }

    fn set_progress(&mut self, id: &str, progress: &Arc<str>) -> CoreResult<Option<Arc<str>>> {
        Ok(self.jobs.get_mut(id).map(|job| {
            job.progress = Arc::clone(progress);
            Arc::clone(&job.id)
        }))
    }

    fn append_log(&mut self, id: &str, line: &str, time: Millis) -> CoreResult<usize> {
        Ok(self.logs_mut(id).map_or(0, |logs| {
            logs.push(LogLine {
                time: Some(time),
                text: line.to_owned(),
            });
            logs.len()
        }))
    }

    fn keep_newest_logs(&mut self, id: &str, keep: usize) -> CoreResult<()> {
        if let Some(logs) = self.logs_mut(id) {
            let excess = logs.len().saturating_sub(keep);
            logs.drain(..excess);
        }
        Ok(())
    }

    fn log_count(&mut self, id: &str) -> CoreResult<usize> {
        Ok(self.jobs.get(id).map_or(0, |job| job.logs.len()))
    }

    fn log_page(
        &mut self,
        id: &str,
        skip: usize,
        take: usize,
        ascending: bool,
    ) -> CoreResult<Vec<LogLine>> {
        let Some(job) = self.jobs.get(id) else {
            return Ok(Vec::new());
        };
        let page = if ascending {
            job.logs.iter().skip(skip).take(take).cloned().collect()
        } else {
            job.logs
                .iter()
                .rev()
                .skip(skip)
                .take(take)
                .cloned()
                .collect()
        };
        Ok(page)
    }

    fn set_paused(&mut self, paused: bool) -> CoreResult<()> {
        self.paused = paused;
        Ok(())
    }

    fn set_rate_limit(&mut self, limit: Option<(u32, Millis)>) -> CoreResult<()> {
        self.rate_limit = limit;
        Ok(())
    }

    fn set_rate_until(&mut self, until: Millis) -> CoreResult<()> {
        self.rate_until = until;
        Ok(())
    }

    fn set_max_active(&mut self, max: Option<u32>) -> CoreResult<()> {
        self.max_active = max;
        Ok(())
    }

    /// The backend tells the waiters of the jobs that went (`settle_missing`).
    fn wipe(&mut self) -> CoreResult<()> {
        self.jobs.clear();
        self.waiting.clear();
        self.groups = Default::default();
        self.delayed.clear();
        self.active.clear();
        self.waiting_children.clear();
        self.completed.clear();
        self.failed.clear();
        self.events.restart();
        self.next_auto_id = 1;
        self.dedup.clear();
        self.schedulers.clear();
        self.observed = Default::default();
        self.rate_limit = None;
        self.rate_window = (0, 0);
        self.rate_until = 0;
        self.max_active = None;
        self.paused = false;
        Ok(())
    }
}

#[cfg(test)]
#[path = "manage_tests.rs"]
mod tests;
