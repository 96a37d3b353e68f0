//! Edits of one job and of the queue, each one writer-thread operation.

use crate::jobs::contract::{BoxFuture, JobAdmin};
use crate::jobs::model::{check_max_active, check_rate_limit, JobState, Millis};
use crate::jobs::options::check_log_line;

use super::storage::SqlStore;
use super::{manage, ops, refused, rows, LocalBackend};

impl JobAdmin for LocalBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::promote(conn, env, &id, now))
    }

    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize> {
        self.call(move |conn, env| {
            crate::jobs::lifecycle::promote_jobs(&mut SqlStore::new(conn, env), count, now)
        })
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::reschedule(conn, env, &id, until, now))
    }

    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::retry_job(conn, env, &id, reset_attempts, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        self.call(move |conn, env| manage::update_priority(conn, env, &id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        self.call(move |conn, env| manage::update_data(conn, env, &id, &data))
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::update_progress(conn, env, &id, &progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize> {
        self.call(move |conn, env| {
            check_log_line(&id, &line, env.max_payload_bytes)?;
            manage::add_log(conn, &id, &line, keep)
        })
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        self.call(move |conn, _| manage::clear_logs(conn, &id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        self.call(move |conn, _| manage::save_stacktrace(conn, &id, lines, reason.as_deref()))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::remove(conn, env, &id, now))
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::set_paused(conn, env, true, now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| manage::set_paused(conn, env, false, now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        self.direct(|conn, _| ops::is_paused(conn))
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        self.call(move |conn, env| manage::drain(conn, env, delayed, now))
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        self.call(move |conn, env| manage::clean(conn, env, grace, limit, state, now))
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        let outcome = self.call(move |conn, env| manage::obliterate(conn, env, force, now));
        Box::pin(async move { refused(outcome.await?) })
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        self.call(move |conn, _| {
            check_rate_limit(max, duration)?;
            rows::set_meta(conn, "rate_max", Some(&max.to_string()))?;
            rows::set_meta(conn, "rate_duration", Some(&duration.to_string()))
        })
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        self.direct(|conn, _| ops::rate_limit(conn))
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        self.call(|conn, _| {
            rows::set_meta(conn, "rate_max", None)?;
            rows::set_meta(conn, "rate_duration", None)
        })
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, _| ops::set_rate_limit_wait(conn, duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        self.direct(move |conn, _| {
            Ok(ops::rate_limited_until(conn, now)?.map_or(0, |end| end - now))
        })
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        // The commit wakes this process's waiters, and other processes' through the doorbell.
        self.call(|conn, _| ops::remove_rate_limit_key(conn))
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        // A job is one row whose state column is its state, written in one transaction: no
        // data can outlive its state.
        crate::jobs::contract::ready(Ok(0))
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        self.call(move |conn, _| {
            check_max_active(max)?;
            rows::set_meta(conn, "max_active", max.map(|m| m.to_string()).as_deref())
        })
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        self.direct(|conn, _| ops::max_active(conn))
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        self.direct(|conn, _| {
            Ok(ops::max_active(conn)?.is_some_and(|max| {
                rows::count(conn, JobState::Active).unwrap_or(0) >= max as usize
            }))
        })
    }

    fn close(&self) -> BoxFuture<()> {
        self.call(|_, env| {
            env.closing = true;
            Ok(())
        })
    }
}
