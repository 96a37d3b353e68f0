//! `MemoryStore`'s job schedulers: upserts, the step a claim takes, reads and removal, as
//! `scheduler` decides.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::error::CoreResult;
use crate::schedule::ScheduleSpec;

use super::store::{JobId, MemoryStore};
use super::{settle_missing, MemoryBackend};
use crate::jobs::contract::{BoxFuture, JobSchedulers};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::scheduler::{
    self, occurrence_id, occurrence_options, Current, JobScheduler, OnClaim, OnUpsert, Template,
};

/// A scheduler as stored (its pending occurrence's id is derived from `next_run`).
#[derive(Debug)]
struct Stored {
    spec: ScheduleSpec,
    template: Template,
    count: u64,
    next_run: Millis,
}

#[derive(Debug, Default)]
pub(super) struct Schedulers {
    by_key: HashMap<Arc<str>, Stored, foldhash::fast::RandomState>,
}

impl Schedulers {
    pub(super) fn clear(&mut self) {
        self.by_key.clear();
    }
}

impl MemoryStore {
    /// The state of the job with the pending occurrence's id of `key`, if it exists.
    fn pending_state(&self, key: &str, next_run: Millis) -> Option<JobState> {
        self.jobs
            .get(occurrence_id(key, next_run).as_str())
            .map(|j| j.state)
    }

    /// Creates or updates the scheduler `key`; returns its pending occurrence.
    pub fn upsert_scheduler(
        &mut self,
        key: &str,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> CoreResult<Job> {
        scheduler::check(key, &spec, &template, now, self.config.max_payload_bytes)?;
        let stored = self.schedulers.by_key.get(key);
        let current = stored.map(|s| Current {
            spec: &s.spec,
            template: &s.template,
            iteration_count: s.count,
            next_run: s.next_run,
            pending: self.pending_state(key, s.next_run),
        });
        let pending_id = stored.map(|s| occurrence_id(key, s.next_run));
        let decision = scheduler::on_upsert(key, &spec, &template, current.as_ref(), now)?;
        let (replace, number, from) = match decision {
            OnUpsert::Keep => {
                let id = pending_id.expect("a kept scheduler has a pending occurrence");
                return Ok(self.jobs[id.as_str()].clone());
            }
            OnUpsert::Produce {
                replace,
                number,
                from,
            } => (replace, number, from),
        };
        let replaced = pending_id.filter(|_| replace);
        // Decided before anything is written, the replaced occurrence counting as gone.
        let run = scheduler::place(&spec, key, from, number, now, |id| {
            Ok(replaced.as_deref() != Some(id) && self.jobs.contains_key(id))
        })?
        .ok_or_else(|| scheduler::no_free_run(key, &spec))?;
        if let Some(id) = replaced {
            self.remove_occurrence(&id, now);
        }
        let created = self.create_occurrence(key, &template, run, now);
        self.schedulers.by_key.insert(
            Arc::from(key),
            Stored {
                spec,
                template,
                count: number,
                next_run: run,
            },
        );
        Ok(created)
    }

    /// Removes a pending occurrence, as a removal by hand does (a `removed` event).
    fn remove_occurrence(&mut self, id: &str, now: Millis) {
        let Ok(key) = self.key(id) else { return };
        if let Some(job) = self.delete_releasing(&key, now) {
            self.events.push(
                now,
                "removed",
                Some(&key),
                Some(("prev", job.state.as_str().into())),
            );
        }
    }

    fn create_occurrence(
        &mut self,
        key: &str,
        template: &Template,
        run: Millis,
        now: Millis,
    ) -> Job {
        let options = occurrence_options(key, &template.options, run, now);
        self.create(&template.name, &template.data, options, now)
    }

    /// After a claim started `job`, an occurrence of scheduler `key`: if it was the pending
    /// one, produces the next, or removes the scheduler when the schedule has ended.
    pub(super) fn scheduler_on_claim(&mut self, key: &str, job: &JobId, now: Millis) {
        let current = self
            .schedulers
            .by_key
            .get(key)
            .map(|s| (&s.spec, s.count, s.next_run));
        let placed = match scheduler::on_claim(job, key, current, now) {
            OnClaim::Ignore => return,
            OnClaim::Finish => None,
            OnClaim::Advance { from, number } => {
                let stored = &self.schedulers.by_key[key];
                // Reading the map cannot fail, so neither can `place`.
                scheduler::place(&stored.spec, key, from, number, now, |id| {
                    Ok(self.jobs.contains_key(id))
                })
                .unwrap_or(None)
                .map(|run| (run, number))
            }
        };
        let Some((run, number)) = placed else {
            self.schedulers.by_key.remove(key);
            return;
        };
        let stored = self
            .schedulers
            .by_key
            .get_mut(key)
            .expect("an advancing scheduler exists");
        stored.count = number;
        stored.next_run = run;
        let template = stored.template.clone();
        self.create_occurrence(key, &template, run, now);
    }

    /// Whether `job` is its scheduler's pending occurrence (`JobStorage::is_pending_occurrence`).
    pub(super) fn pending_occurrence_of(&self, job: &Job) -> bool {
        let Some(key) = job.options.scheduler.as_deref() else {
            return false;
        };
        scheduler::not_started(Some(job.state))
            && self
                .schedulers
                .by_key
                .get(key)
                .is_some_and(|s| *job.id == occurrence_id(key, s.next_run))
    }

    /// The ids of the schedulers' pending occurrences (drain and clean keep them).
    pub(super) fn pending_occurrence_ids(&self) -> HashSet<String> {
        self.schedulers
            .by_key
            .iter()
            .map(|(key, s)| occurrence_id(key, s.next_run))
            .collect()
    }

    /// Removes the scheduler `key` and its pending occurrence (if it has not started); `true`
    /// if the scheduler existed.
    pub fn remove_scheduler(&mut self, key: &str, now: Millis) -> bool {
        let Some(stored) = self.schedulers.by_key.remove(key) else {
            return false;
        };
        if scheduler::not_started(self.pending_state(key, stored.next_run)) {
            self.remove_occurrence(&occurrence_id(key, stored.next_run), now);
        }
        true
    }

    fn view(&self, key: &str, stored: &Stored) -> JobScheduler {
        let pending = scheduler::not_started(self.pending_state(key, stored.next_run));
        JobScheduler {
            key: key.to_owned(),
            spec: stored.spec.clone(),
            template: stored.template.clone(),
            iteration_count: stored.count,
            next_run: stored.next_run,
            job_id: pending.then(|| occurrence_id(key, stored.next_run)),
        }
    }

    pub fn get_scheduler(&self, key: &str) -> Option<JobScheduler> {
        let (key, stored) = self.schedulers.by_key.get_key_value(key)?;
        Some(self.view(key, stored))
    }

    /// Schedulers by next run time (then key), from index `start` to `end` inclusive.
    pub fn list_schedulers(&self, start: i64, end: i64, ascending: bool) -> Vec<JobScheduler> {
        let all: Vec<(&Arc<str>, &Stored)> = self.schedulers.by_key.iter().collect();
        scheduler::page(all, |(k, s)| (s.next_run, &***k), start, end, ascending)
            .into_iter()
            .map(|(key, stored)| self.view(key, stored))
            .collect()
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
            let pending = s.store.upsert_scheduler(&key, spec, template, now);
            settle_missing(s);
            pending
        })
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        self.read(|store| Ok(store.get_scheduler(&key)))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        self.read(|store| Ok(store.list_schedulers(start, end, ascending)))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        self.read(|store| Ok(store.count_schedulers()))
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| {
            let existed = s.store.remove_scheduler(&key, now);
            settle_missing(s);
            Ok(existed)
        })
    }
}
