//! `JobLifecycle` for the memory backend: each transition is the shared one (`lifecycle`) on
//! the queue's store, under the group's lock; waiters of a finished job are told before the
//! lock is let go.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::contract::{BoxFuture, Completion, FailOutcome, Failure, JobLifecycle, NewJob};
use crate::jobs::model::{FinishedResult, Job, Millis};

use super::{finish, settle_replaced, MemoryBackend};
use crate::jobs::lifecycle;

impl JobLifecycle for MemoryBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        self.write(|s| {
            let added = s.store.add(&job.name, &job.data, job.options, now);
            settle_replaced(s);
            added
        })
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        let jobs = jobs
            .into_iter()
            .map(|j| (j.name, j.data, j.options))
            .collect();
        self.write(|s| {
            let added = s.store.add_bulk(jobs, now);
            settle_replaced(s);
            added
        })
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        self.write(|s| lifecycle::claim(&mut s.store, &worker_id, lease, max_jobs, now))
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, |store, now| match store.next_ready_at(now) {
            Some(at) if at <= now => (true, None),
            other => (false, other),
        })
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        self.write(|s| {
            // A batch's jobs were claimed a batch ago: ask for them all before the first
            // completion waits on its own.
            for c in &items {
                s.store.prefetch(&c.id);
            }
            Ok(items
                .into_iter()
                .map(|c| {
                    let outcome =
                        lifecycle::complete(&mut s.store, &c.id, &c.token, &c.result, now);
                    if outcome.is_ok() {
                        finish(&mut s.waiters, &c.id, || {
                            FinishedResult::Completed(Some(Arc::from(c.result)))
                        });
                    }
                    outcome
                })
                .collect())
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        self.write(|s| {
            Ok(items
                .into_iter()
                .map(|f| {
                    let outcome = lifecycle::fail(&mut s.store, &f, now);
                    if matches!(outcome, Ok(FailOutcome::Failed)) {
                        // Its own reason, or the one it failed for instead (started too often).
                        let store = &s.store;
                        finish(&mut s.waiters, &f.id, || {
                            let reason =
                                store.jobs.get(&*f.id).and_then(|j| j.failed_reason.clone());
                            FinishedResult::Failed(reason.unwrap_or(f.error))
                        });
                    }
                    outcome
                })
                .collect())
        })
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        self.read(|store| {
            Ok(items
                .iter()
                .map(|(id, token)| lifecycle::renew(store, id, token, lease, now))
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
        self.write(|s| lifecycle::move_to_delayed(&mut s.store, &id, &token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        self.write(|s| {
            if let Some(reason) = lifecycle::release_with_reason(&mut s.store, &id, &token, now)? {
                // Its cancellation was requested: it failed for good instead.
                finish(&mut s.waiters, &id, || FinishedResult::Failed(reason));
            }
            Ok(())
        })
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        self.write(|s| {
            let (recovered, failed) = lifecycle::recover_stalled_with_reasons(&mut s.store, now)?;
            let mut failed_ids = Vec::with_capacity(failed.len());
            for (id, reason) in failed {
                // Told directly: retention may already have removed the job.
                finish(&mut s.waiters, &id, || FinishedResult::Failed(reason));
                failed_ids.push(id);
            }
            Ok((recovered, failed_ids))
        })
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        self.read(|store| lifecycle::holds_lock(store, &id, &token, now))
    }
}
