//! `JobAdmin` for the memory backend: each edit is the shared decision (`lifecycle`,
//! `lifecycle::manage`) run on the queue's store under the group's lock. Edits that can change
//! what a waiter waits for are writes (they wake waiters); the others are reads of the lock.

use crate::jobs::contract::{ready, BoxFuture, JobAdmin};
use crate::jobs::lifecycle::{self, manage};
use crate::jobs::model::{JobState, Millis};
use crate::jobs::search::JobFilter;

use super::{settle_missing, MemoryBackend};

impl JobAdmin for MemoryBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| lifecycle::promote(&mut s.store, &id, now))
    }

    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize> {
        self.write(|s| lifecycle::promote_jobs(&mut s.store, count, now))
    }

    fn promote_due(&self, now: Millis) -> BoxFuture<usize> {
        self.write(|s| lifecycle::promote_due(&mut s.store, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| lifecycle::reschedule(&mut s.store, &id, until, now, false))
    }
    fn delay_job(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| lifecycle::reschedule(&mut s.store, &id, until, now, true))
    }

    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()> {
        self.write(|s| lifecycle::retry_job(&mut s.store, &id, reset_attempts, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.write(|s| lifecycle::update_priority(&mut s.store, &id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.read(|store| manage::update_data(store, &id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| manage::update_progress(&mut s.store, &id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize, now: Millis) -> BoxFuture<usize> {
        self.read(|store| manage::add_log(store, &id, &line, keep, now))
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.read(|store| manage::clear_logs(store, &id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.read(|store| manage::save_stacktrace(store, &id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write_group(|queues, at| {
            super::flows::remove_tree(queues, at, &id, now)?;
            settle_missing(&mut queues.states[at]);
            Ok(())
        })
    }

    fn remove_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        limit: Option<usize>,
        now: Millis,
    ) -> BoxFuture<usize> {
        crate::jobs::remove_jobs(self.clone(), states, filter, limit, now)
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| manage::set_paused(&mut s.store, true, now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| manage::set_paused(&mut s.store, false, now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.read(manage::is_paused)
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.write(|s| {
            let removed = lifecycle::drain(&mut s.store, delayed, now)?;
            settle_missing(s);
            Ok(removed)
        })
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        self.write(|s| {
            let removed = lifecycle::clean(&mut s.store, grace, limit, state, now)?;
            settle_missing(s);
            Ok(removed)
        })
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            // Refused, the queue stays paused (no rollback in memory, as the SQLite store
            // commits its pause).
            let outcome = manage::obliterate(&mut s.store, force, now)?;
            settle_missing(s);
            outcome
        })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.write(|s| manage::set_rate_limit(&mut s.store, max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.read(manage::get_rate_limit)
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.write(|s| manage::clear_rate_limit(&mut s.store))
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| manage::rate_limit(&mut s.store, duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.read(|store| manage::get_rate_limit_ttl(store, now))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // A write: waiters learn at once that claims may go on.
        self.write(|s| manage::remove_rate_limit_key(&mut s.store))
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // Every job is in its state's index by construction (one lock, no partial writes).
        ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.write(|s| manage::set_max_active(&mut s.store, max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.read(manage::get_max_active)
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.read(manage::is_maxed)
    }
}
