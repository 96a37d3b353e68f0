//! Edits of one job and of the queue, under the group's lock.

use crate::jobs::contract::{ready, BoxFuture, JobAdmin};
use crate::jobs::model::{JobState, Millis};

use super::{settle_missing, MemoryBackend};

impl JobAdmin for MemoryBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.promote(&id, now))
    }

    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize> {
        self.write(|s| crate::jobs::lifecycle::promote_jobs(&mut s.store, count, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.reschedule(&id, until, now))
    }

    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.retry_job(&id, reset_attempts, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.write(|s| s.store.update_priority(&id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.read(|store| store.update_data(&id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.update_progress(&id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize> {
        self.read(|store| store.add_log(&id, &line, keep))
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.read(|store| store.clear_logs(&id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.read(|store| store.save_stacktrace(&id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.write_group(|queues, at| {
            super::flows::remove_tree(queues, at, &id, now)?;
            settle_missing(&mut queues.states[at]);
            Ok(())
        })
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.pause(now);
            Ok(())
        })
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.resume(now);
            Ok(())
        })
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.read(|store| Ok(store.is_paused()))
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.write(|s| {
            let removed = s.store.drain(delayed, now);
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
            let removed = s.store.clean(grace, limit, state, now);
            settle_missing(s);
            Ok(removed)
        })
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            s.store.obliterate(force, now)?;
            settle_missing(s);
            Ok(())
        })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.set_rate_limit(max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.read(|store| Ok(store.get_rate_limit()))
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.write(|s| {
            s.store.clear_rate_limit();
            Ok(())
        })
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.write(|s| s.store.rate_limit(duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.read(|store| Ok(store.get_rate_limit_ttl(now)))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // A write: waiters learn at once that claims may go on.
        self.write(|s| {
            s.store.remove_rate_limit_key();
            Ok(())
        })
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // Every job is in its state's index by construction (one lock, no partial writes).
        ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.write(|s| s.store.set_max_active(max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.read(|store| Ok(store.get_max_active()))
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.read(|store| Ok(store.is_maxed()))
    }
}
