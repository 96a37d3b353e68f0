//! `JobAdmin` for the local backend: each edit is the shared decision (`lifecycle`,
//! `lifecycle::manage`) on the file, one writer-thread operation; reads of the settings run on
//! the caller's own connection (`direct`).

use crate::jobs::contract::{BoxFuture, JobAdmin};
use crate::jobs::lifecycle::{self, manage};
use crate::jobs::model::{JobState, Millis};
use crate::jobs::search::JobFilter;

use super::LocalBackend;

impl JobAdmin for LocalBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::promote(s, &id, now))
    }

    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize> {
        self.call_store(move |s| lifecycle::promote_jobs(s, count, now))
    }

    fn promote_due(&self, now: Millis) -> BoxFuture<usize> {
        self.call_store(move |s| lifecycle::promote_due(s, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::reschedule(s, &id, until, now, false))
    }
    fn delay_job(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::reschedule(s, &id, until, now, true))
    }

    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::retry_job(s, &id, reset_attempts, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::update_priority(s, &id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.call_store(move |s| manage::update_data(s, &id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| manage::update_progress(s, &id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize, now: Millis) -> BoxFuture<usize> {
        self.call_store(move |s| manage::add_log(s, &id, &line, keep, now))
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.call_store(move |s| manage::clear_logs(s, &id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.call_store(move |s| manage::save_stacktrace(s, &id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::remove(s, &id, now))
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
        self.call_store(move |s| manage::set_paused(s, true, now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| manage::set_paused(s, false, now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.direct_store(|s| manage::is_paused(s))
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.call_store(move |s| lifecycle::drain(s, delayed, now))
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        self.call_store(move |s| lifecycle::clean(s, grace, limit, state, now))
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        // A refusal comes back inside a success, so the pause before it is committed.
        let outcome = self.call_store(move |s| manage::obliterate(s, force, now));
        Box::pin(async move { outcome.await? })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.call_store(move |s| manage::set_rate_limit(s, max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.direct_store(|s| manage::get_rate_limit(s))
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.call_store(|s| manage::clear_rate_limit(s))
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| manage::rate_limit(s, duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.direct_store(move |s| manage::get_rate_limit_ttl(s, now))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // The commit wakes this process's waiters, and other processes' through the doorbell.
        self.call_store(|s| manage::remove_rate_limit_key(s))
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // A job is one row whose state column is its state, written in one transaction: no
        // data can outlive its state.
        crate::jobs::contract::ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.call_store(move |s| manage::set_max_active(s, max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.direct_store(|s| manage::get_max_active(s))
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.direct_store(|s| manage::is_maxed(s))
    }

    fn close(&self) -> BoxFuture<()> {
        self.call(|_, env| {
            env.closing = true;
            Ok(())
        })
    }
}
