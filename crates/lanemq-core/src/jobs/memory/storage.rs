//! The memory store as the `JobStorage` the shared transitions (`jobs::lifecycle`) run over:
//! jobs changed in place, their index entries moved around the change.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::{self, EventField, Finished, Gate, JobStorage};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::job_id::JobId;
use super::store::{IndexEntry, MemoryStore};

impl MemoryStore {
    /// The finished set of `state` (completed or failed), oldest first.
    fn finished_set(&self, state: JobState) -> &std::collections::BTreeSet<(Millis, u64, JobId)> {
        if state == JobState::Completed {
            &self.completed
        } else {
            &self.failed
        }
    }
}

impl JobStorage for MemoryStore {
    fn load(&mut self, id: &str) -> CoreResult<Option<Job>> {
        Ok(self.jobs.get(id).cloned())
    }

    fn update<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
    ) -> CoreResult<Option<R>> {
        let Some(job) = self.jobs.get_mut(id) else {
            return Ok(None);
        };
        let was = IndexEntry::of(job);
        let outcome = change(job);
        let now = IndexEntry::of(job);
        if now != was {
            let key = Arc::clone(&job.id);
            match job.options.group.clone() {
                None => {
                    self.index_take(was, &key);
                    self.index_put(now, key);
                }
                Some(group) => self.group_moved(&group, Some(was), Some(now), &key),
            }
        }
        outcome.map(Some)
    }

    fn insert(&mut self, job: Job) -> CoreResult<()> {
        let id = Arc::clone(&job.id);
        self.jobs.insert(Arc::clone(&id), job);
        self.index_insert(&id);
        Ok(())
    }

    fn auto_id(&mut self, options: &JobOptions) -> CoreResult<Arc<str>> {
        Ok(self.next_job_id(options))
    }

    fn intern_name(&mut self, name: &str) -> Arc<str> {
        MemoryStore::intern_name(self, name)
    }

    fn delete(&mut self, id: &str) -> CoreResult<Option<JobState>> {
        let Some(key) = self.jobs.get_key_value(id).map(|(k, _)| Arc::clone(k)) else {
            return Ok(None);
        };
        Ok(MemoryStore::delete(self, &key).map(|job| job.state))
    }

    fn remove_job(&mut self, id: &Arc<str>, now: Millis) -> CoreResult<()> {
        self.delete_releasing(id, now);
        Ok(())
    }

    /// Parents hear of removed children when the group settles its flows, after the
    /// operation, still under the lock.
    fn settle_removals(&mut self, _now: Millis, hard: bool) -> CoreResult<()> {
        MemoryStore::settle_removals(self, hard);
        Ok(())
    }

    fn queue_name(&self) -> &str {
        MemoryStore::queue_name(self)
    }

    fn children(&mut self, id: &str) -> CoreResult<Vec<ParentRef>> {
        Ok(self.children_of(id))
    }

    /// The group checks the other queues before it removes (`flows::remove_tree`).
    fn remote_locked(&mut self, _child: &ParentRef, _now: Millis) -> CoreResult<Option<String>> {
        Ok(None)
    }

    fn remove_remote(&mut self, child: &ParentRef, now: Millis) -> CoreResult<()> {
        self.remove_elsewhere(child, now);
        Ok(())
    }

    fn drainable(&mut self, delayed: bool) -> CoreResult<Vec<Arc<str>>> {
        let pending = self.pending_occurrence_ids();
        let mut doomed: Vec<JobId> = self
            .ids_in(JobState::Waiting)
            .filter(|id| !pending.contains(&***id))
            .cloned()
            .collect();
        if delayed {
            doomed.extend(
                self.delayed
                    .iter()
                    .filter(|(_, _, id)| !pending.contains(&**id))
                    .map(|(_, _, id)| Arc::clone(id)),
            );
        }
        Ok(doomed)
    }

    fn cleanable(
        &mut self,
        state: JobState,
        cutoff: Millis,
        limit: usize,
        now: Millis,
    ) -> CoreResult<Vec<Arc<str>>> {
        let pending = self.pending_occurrence_ids();
        Ok(self
            .ids_in(state)
            .filter(|id| {
                let job = &self.jobs[*id];
                let at = job.finished_on.unwrap_or(job.created_at);
                at <= cutoff
                    && job.lock.as_ref().is_none_or(|l| l.expires_at <= now)
                    && !pending.contains(&***id)
            })
            .take(limit)
            .cloned()
            .collect())
    }

    fn reserve_seq(&mut self, n: u64) -> CoreResult<u64> {
        let first = self.seq + 1;
        self.seq += n;
        Ok(first)
    }

    fn claim_head(&mut self, n: usize, mut change: impl FnMut(&mut Job)) -> CoreResult<Vec<Job>> {
        let mut heads = Vec::with_capacity(n.min(self.waiting.len()));
        while heads.len() < n {
            let Some((_, id)) = self.waiting.pop_first() else {
                break;
            };
            heads.push(id);
        }
        // The head of a long backlog has not been touched since it was added: its entry and
        // its payload are cold (a miss to memory each, the largest part of a claim's time, see
        // benches/history/12.md). Looked up all together first, the misses of lookups that do not
        // depend on each other overlap instead of coming one after another.
        for id in &heads {
            self.prefetch(id);
        }
        let mut claimed = Vec::with_capacity(heads.len());
        for id in heads {
            let job = self.jobs.get_mut(&id).expect("waiting job exists");
            change(job);
            claimed.push(job.clone());
            let entry = IndexEntry::of(job);
            self.index_put(entry, id);
        }
        Ok(claimed)
    }

    fn due_delayed(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>> {
        Ok(self
            .delayed
            .iter()
            .take_while(|(due, _, _)| *due <= now)
            .map(|(_, _, id)| Arc::clone(id))
            .collect())
    }

    fn expired_active(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>> {
        Ok(self
            .active
            .iter()
            .take_while(|(expires, _, _)| *expires <= now)
            .map(|(_, _, id)| Arc::clone(id))
            .collect())
    }

    fn count(&mut self, state: JobState) -> CoreResult<usize> {
        Ok(MemoryStore::count(self, state))
    }

    fn oldest_finished(&mut self, state: JobState, n: usize) -> CoreResult<Vec<Arc<str>>> {
        Ok(self
            .finished_set(state)
            .iter()
            .take(n)
            .map(|(_, _, id)| Arc::clone(id))
            .collect())
    }

    fn count_finished_by(&mut self, state: JobState, cutoff: Millis) -> CoreResult<usize> {
        Ok(self
            .finished_set(state)
            .iter()
            .take_while(|(finished, _, _)| *finished <= cutoff)
            .count())
    }

    fn gate(&mut self) -> CoreResult<Gate> {
        Ok(self.gate_now())
    }

    fn set_rate_window(&mut self, (start, used): (Millis, u64)) -> CoreResult<()> {
        self.rate_window = (start, used.min(u32::MAX.into()) as u32);
        Ok(())
    }

    fn report_drained(&mut self) -> CoreResult<bool> {
        Ok(!std::mem::replace(&mut self.drained_reported, true))
    }

    fn event(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        field: EventField,
    ) -> CoreResult<()> {
        self.events.push(now, name, job, field);
        Ok(())
    }

    fn event_fields(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        [field, extra]: [EventField; 2],
    ) -> CoreResult<()> {
        self.events.push_fields(now, name, job, field, extra);
        Ok(())
    }

    /// Waiters are the backend's (`MemoryBackend`): it tells them as the operation returns,
    /// still under the group's lock.
    fn tell_waiters(&mut self, _finished: &Finished) -> CoreResult<()> {
        Ok(())
    }

    fn tell_parent(&mut self, finished: &Finished, now: Millis) -> CoreResult<()> {
        match &finished.parent {
            Some((parent, outcome)) => {
                lifecycle::flows::on_finish(self, parent, &finished.id, outcome.clone(), now)
            }
            None => Ok(()),
        }
    }

    fn before_retry(&mut self, job: &Job, now: Millis) -> CoreResult<()> {
        lifecycle::flows::on_retry(self, job, now)
    }
}
