//! The worker's hot path: each call is one operation of the writer thread, committed with
//! whatever else the batch holds before it answers.

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, Completion, FailOutcome, Failure, JobLifecycle, NewJob};
use crate::jobs::model::{wall_clock_ms, Job, Millis};

use super::{ops, LocalBackend};

impl JobLifecycle for LocalBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        self.call(move |conn, env| ops::add(conn, env, job, now))
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        self.call(move |conn, env| ops::add_bulk(conn, env, jobs, now))
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        self.call(move |conn, env| ops::claim(conn, env, &worker_id, lease, max_jobs, now))
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, |backend| {
            let ready = backend.direct(|conn, _| ops::next_ready_at(conn, wall_clock_ms()));
            Box::pin(async move {
                let now = wall_clock_ms();
                Ok(match ready.await? {
                    Some(at) if at <= now => (true, None),
                    other => (false, other),
                })
            })
        })
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        // Each item checks its lock before it writes, so a refused item writes nothing and
        // needs no savepoint of its own.
        self.direct(move |conn, env| {
            Ok(items
                .iter()
                .map(|c| ops::complete(conn, env, &c.id, &c.token, &c.result, now))
                .collect())
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        self.direct(move |conn, env| {
            Ok(items.iter().map(|f| ops::fail(conn, env, f, now)).collect())
        })
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        self.direct(move |conn, env| {
            Ok(items
                .iter()
                .map(|(id, token)| ops::renew(conn, env, id, token, lease, now))
                .collect())
        })
    }

    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        self.call(move |conn, env| ops::move_to_delayed(conn, env, &id, &token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        self.call(move |conn, env| ops::release(conn, env, &id, &token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        self.call(move |conn, env| {
            // Also the pass that delivers flow messages a crash or a locked file held back.
            env.outbox_pending = true;
            ops::recover_stalled(conn, env, now)
        })
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        self.direct(move |conn, env| ops::holds_lock(conn, env, &id, &token, now))
    }
}
