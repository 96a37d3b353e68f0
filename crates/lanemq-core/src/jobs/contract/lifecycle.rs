//! Adding, claiming and finishing jobs, and the leases in between: the worker's hot path.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::error::CoreResult;
use crate::jobs::model::{Job, Millis};

use super::{BoxFuture, Completion, FailOutcome, Failure, NewJob};

pub trait JobLifecycle: Send + Sync + 'static {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)>;
    /// Separate adds that one caller gathered (an event loop's iteration), each answered as
    /// `add` answers it, in order. A backend may commit them together (the local one does, on
    /// the caller's thread when it can); by default each is an `add`.
    fn add_gathered(&self, jobs: Vec<(NewJob, Millis)>) -> Vec<BoxFuture<(Job, bool)>> {
        jobs.into_iter()
            .map(|(job, now)| self.add(job, now))
            .collect()
    }
    /// All or nothing: every job is validated before any is written.
    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>>;

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>>;
    /// Resolves `true` once a claim may return a job, `false` after `timeout` ms.
    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool>;
    /// For a backend that can wait and claim in one round trip: what an idle worker does in
    /// one step (wait as `wait_for_job`, at most `timeout` ms; then claim up to `max_jobs`).
    /// Once `interrupted` is notified, a wait still going on ends and the call resolves with
    /// what it claimed, nothing if it was still waiting: cancelling could drop jobs a claim had
    /// just taken. `None` (the default): the caller waits, then claims.
    fn wait_and_claim(
        &self,
        _worker_id: String,
        _lease: Millis,
        _max_jobs: usize,
        _timeout: Option<Millis>,
        _interrupted: Arc<Notify>,
    ) -> Option<BoxFuture<Vec<Job>>> {
        None
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>>;
    /// `complete_many`, then `claim`: what a worker does when jobs finish and slots free up,
    /// in one step (Redis: one script call). Backends that apply calls in the order they are
    /// made get it by composition.
    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<(Vec<CoreResult<()>>, Vec<Job>)> {
        let completed = self.complete_many(items, now);
        let claimed = self.claim(worker_id, lease, max_jobs, now);
        Box::pin(async move { Ok((completed.await?, claimed.await?)) })
    }
    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>>;
    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>>;
    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()>;
    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()>;
    /// Returns (recovered ids, failed ids).
    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)>;
    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool>;
}
