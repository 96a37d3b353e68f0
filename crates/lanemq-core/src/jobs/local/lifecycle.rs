//! `JobLifecycle` for the local backend: each transition is the shared one (`lifecycle`) on
//! the file (`SqlStore`), one operation of the writer thread, committed with whatever else the
//! batch holds before it answers.

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, Completion, FailOutcome, Failure, JobLifecycle, NewJob};
use crate::jobs::lifecycle;
use crate::jobs::model::{wall_clock_ms, Job, Millis};

use super::storage::SqlStore;
use super::{ops, LocalBackend};

impl JobLifecycle for LocalBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        self.call_store(move |s| {
            let max = s.env.max_payload_bytes;
            lifecycle::add(s, job, max, now)
        })
    }

    fn add_gathered(&self, jobs: Vec<(NewJob, Millis)>) -> Vec<BoxFuture<(Job, bool)>> {
        let adds = jobs.into_iter().map(|(job, now)| {
            move |s: &mut SqlStore<'_>| {
                let max = s.env.max_payload_bytes;
                lifecycle::add(s, job, max, now)
            }
        });
        self.call_store_gathered(adds.collect())
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        self.call_store(move |s| {
            let max = s.env.max_payload_bytes;
            lifecycle::add_bulk(s, jobs, max, now)
        })
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        self.call_store(move |s| lifecycle::claim(s, &worker_id, lease, max_jobs, now))
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
        self.direct_store(move |s| {
            Ok(items
                .iter()
                .map(|c| lifecycle::complete(s, &c.id, &c.token, &c.result, now))
                .collect())
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        self.direct_store(move |s| Ok(items.iter().map(|f| lifecycle::fail(s, f, now)).collect()))
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        self.direct_store(move |s| {
            Ok(items
                .iter()
                .map(|(id, token)| lifecycle::renew(s, id, token, lease, now))
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
        self.call_store(move |s| lifecycle::move_to_delayed(s, &id, &token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        self.call_store(move |s| lifecycle::release(s, &id, &token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        self.call_store(move |s| {
            // Also the pass that delivers flow messages a crash or a locked file held back.
            s.env.outbox_pending = true;
            lifecycle::recover_stalled(s, now)
        })
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        self.direct_store(move |s| lifecycle::holds_lock(s, &id, &token, now))
    }
}
