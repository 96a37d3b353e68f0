//! `JobQueueCore`'s calls a worker or producer makes per job: adding, claiming, completing,
//! failing, renewing leases. Those the server's wire can carry (`WireCalls`) go on it where
//! the queue's `ServerHooks` give one (`hot_call!`), the others the ordinary way; their times
//! are milliseconds as `lanemq.queue` computes them.

use std::sync::Arc;

use lanemq_core::jobs::{wall_clock_ms, Completion, FailOutcome, Failure, NewJob};
use lanemq_core::{CoreError, CoreResult};
use pyo3::prelude::*;

use crate::core_args::{CoreArg, Text};
use crate::errors::to_py;
use crate::interrupt::Interrupt;
use crate::job_options::JobOptions;
use crate::job_queue::{records, JobQueueCore};
use crate::job_queue_renewals::{lease_items, renew_answers};
use crate::job_record::JobRecord;
use crate::wire_link::WireLink;

/// A hot call (`add`, `add_bulk`, `claim`, `complete_many`, `complete_and_claim`: the methods
/// `WireCalls` and `JobLifecycle` share) on the running loop's wire if this queue has one
/// there (see `ServerHooks::link`), else the ordinary way: the one place that chooses. Its
/// value is converted by `$convert` either way.
macro_rules! hot_call {
    ($self:ident, $py:ident, $method:ident($($arg:expr),* $(,)?), $convert:expr) => {
        match $self.link($py)? {
            Some((wired, link)) => WireLink::call(&link, wired.calls.$method($($arg),*), $convert),
            None => $self.resolve($py, $self.backend.$method($($arg),*), $convert),
        }
    };
}

fn new_job(name: String, data: String, options: Option<JobOptions>) -> NewJob {
    NewJob {
        name,
        data,
        options: options.map(|o| o.inner).unwrap_or_default(),
    }
}

/// `(id, error)` for each item a batch refused, in input order.
fn refusals(ids: Vec<String>, outcomes: Vec<CoreResult<()>>) -> Vec<(String, String)> {
    ids.into_iter()
        .zip(outcomes)
        .filter_map(|(id, o)| o.err().map(|e| (id, e.to_string())))
        .collect()
}

#[pymethods]
impl JobQueueCore {
    /// Adds a job: awaits its record (the existing job's, where its custom id or dedup key was
    /// taken).
    #[pyo3(signature = (name, data, options, now))]
    fn add<'py>(
        &self,
        py: Python<'py>,
        name: String,
        data: String,
        options: Option<JobOptions>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let job = new_job(name, data, options);
        hot_call!(self, py, add(job, now), |(job, _)| Ok(JobRecord::from(job)))
    }

    /// Separate adds gathered by the caller (one event-loop iteration's), as
    /// `(name, data, options, now)`: an awaitable for each, answering what `add` answers.
    /// The local queue commits them in one transaction, on this thread when it can (see
    /// `JobLifecycle::add_gathered`); their awaitables are then already resolved.
    fn add_gathered<'py>(
        &self,
        py: Python<'py>,
        jobs: Vec<(String, String, Option<JobOptions>, u64)>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let jobs = jobs
            .into_iter()
            .map(|(n, d, o, now)| (new_job(n, d, o), now))
            .collect();
        self.backend
            .add_gathered(jobs)
            .into_iter()
            .map(|added| self.resolve(py, added, |(job, _)| Ok(JobRecord::from(job))))
            .collect()
    }

    fn add_bulk<'py>(
        &self,
        py: Python<'py>,
        jobs: Vec<(String, String, Option<JobOptions>)>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let jobs = jobs.into_iter().map(|(n, d, o)| new_job(n, d, o)).collect();
        let convert = |added: Vec<(lanemq_core::jobs::Job, bool)>| {
            Ok(added
                .into_iter()
                .map(|(job, _)| JobRecord::from(job))
                .collect::<Vec<_>>())
        };
        hot_call!(self, py, add_bulk(jobs, now), convert)
    }

    fn claim<'py>(
        &self,
        py: Python<'py>,
        worker_id: Text,
        lease: u64,
        max_jobs: usize,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let worker_id = worker_id.core("worker_id")?;
        hot_call!(self, py, claim(worker_id, lease, max_jobs, now), records)
    }

    /// What an idle worker does, in one step: waits until a claim may return a job (as
    /// `wait_for_job`), then claims up to `max_jobs` at the time the wait ended, so the claim
    /// follows the wake-up without a round trip through the event loop. Returns the awaitable
    /// (the claimed records; none after `timeout` or once interrupted while still waiting)
    /// and the `Interrupt` that ends the wait.
    #[pyo3(signature = (worker_id, lease, max_jobs, timeout=None))]
    fn wait_and_claim<'py>(
        &self,
        py: Python<'py>,
        worker_id: Text,
        lease: u64,
        max_jobs: usize,
        timeout: Option<u64>,
    ) -> PyResult<(Bound<'py, PyAny>, Interrupt)> {
        let worker_id = worker_id.core("worker_id")?;
        let (interrupt, interrupted) = Interrupt::new();
        // A backend that waits and claims in one round trip does it all (Redis).
        if let Some(claimed) = self.backend.wait_and_claim(
            worker_id.clone(),
            lease,
            max_jobs,
            timeout,
            Arc::clone(&interrupted),
        ) {
            return Ok((self.resolve(py, claimed, records)?, interrupt));
        }
        let backend = Arc::clone(&self.backend);
        let waited = backend.wait_for_job(timeout);
        let claimed = Box::pin(async move {
            let ready = tokio::select! {
                biased;
                () = interrupted.notified() => false,
                ready = waited => ready?,
            };
            if !ready {
                return Ok(Vec::new());
            }
            backend
                .claim(worker_id, lease, max_jobs, wall_clock_ms())
                .await
        });
        Ok((self.resolve(py, claimed, records)?, interrupt))
    }

    /// Completes `(id, token, result)` items; awaits `(id, error)` for those refused.
    fn complete_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(String, String, String)>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ids, items) = completions(items);
        let convert = move |outcomes| Ok(refusals(ids, outcomes));
        hot_call!(self, py, complete_many(items, now), convert)
    }

    /// `complete_many`, then `claim`, in one backend step: awaits `((id, error) for those
    /// refused, claimed records)`.
    fn complete_and_claim<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(String, String, String)>,
        worker_id: String,
        lease: u64,
        max_jobs: usize,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ids, items) = completions(items);
        let convert = move |(outcomes, claimed)| Ok((refusals(ids, outcomes), records(claimed)?));
        hot_call!(
            self,
            py,
            complete_and_claim(items, worker_id, lease, max_jobs, now),
            convert
        )
    }

    /// Completes one job; raises `LockMismatchError` / `JobStateError` / `JobNotFoundError`.
    fn complete<'py>(
        &self,
        py: Python<'py>,
        id: String,
        token: String,
        result: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let items = vec![Completion { id, token, result }];
        let convert =
            |mut outcomes: Vec<CoreResult<()>>| outcomes.pop().unwrap_or(Ok(())).map_err(to_py);
        hot_call!(self, py, complete_many(items, now), convert)
    }

    /// Fails `(id, token, error, stacktrace, retry, delay)` items (`delay`: ms overriding the
    /// backoff, or None); awaits `(id, retried, error)`.
    #[allow(clippy::type_complexity)]
    fn fail_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(Text, Text, Text, Option<Text>, bool, Option<u64>)>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let items = items
            .into_iter()
            .map(|(id, token, error, stacktrace, retry, delay)| {
                Ok(Failure {
                    id: id.core("id")?,
                    token: token.core("token")?,
                    error: error.core("error")?,
                    stacktrace: stacktrace.core("stacktrace")?,
                    retry,
                    delay,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let ids: Vec<String> = items.iter().map(|item| item.id.clone()).collect();
        self.resolve(py, self.backend.fail_many(items, now), move |outcomes| {
            Ok(ids
                .into_iter()
                .zip(outcomes)
                .map(|(id, outcome)| match outcome {
                    Ok(FailOutcome::Retry { .. }) => (id, true, None),
                    Ok(FailOutcome::Failed) => (id, false, None),
                    Err(e) => (id, false, Some(e.to_string())),
                })
                .collect::<Vec<_>>())
        })
    }

    /// Fails one job; awaits `(retried, delay_until)`.
    #[pyo3(signature = (id, token, error, stacktrace, retry, delay, now))]
    #[allow(clippy::too_many_arguments)]
    fn fail<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        token: Text,
        error: Text,
        stacktrace: Option<Text>,
        retry: bool,
        delay: Option<u64>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let future = self.backend.fail_many(
            vec![Failure {
                id: id.core("id")?,
                token: token.core("token")?,
                error: error.core("error")?,
                stacktrace: stacktrace.core("stacktrace")?,
                retry,
                delay,
            }],
            now,
        );
        self.resolve(py, future, |mut outcomes| {
            match outcomes
                .pop()
                .unwrap_or(Err(CoreError::Refused("no outcome".into())))
                .map_err(to_py)?
            {
                FailOutcome::Retry { delay_until } => Ok((true, delay_until)),
                FailOutcome::Failed => Ok((false, None)),
            }
        })
    }

    fn renew<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        token: Text,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let item = (id.core("id")?, token.core("token")?);
        self.resolve(
            py,
            self.backend.renew_many(vec![item], lease, now),
            |mut outcomes| outcomes.pop().unwrap_or(Ok(())).map_err(to_py),
        )
    }

    /// Renews leases; awaits the ids whose lease was lost (not those whose cancellation was
    /// requested: their leases were renewed; see `renew_leases`).
    fn renew_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(Text, Text)>,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (ids, items) = lease_items(items)?;
        self.resolve(
            py,
            self.backend.renew_many(items, lease, now),
            move |outcomes| Ok(renew_answers(ids, outcomes).0),
        )
    }
}

/// The ids of `(id, token, result)` items (to name the refused ones in the reply) and the
/// items as the backend takes them.
fn completions(items: Vec<(String, String, String)>) -> (Vec<String>, Vec<Completion>) {
    let ids = items.iter().map(|(id, _, _)| id.clone()).collect();
    let items = items
        .into_iter()
        .map(|(id, token, result)| Completion { id, token, result })
        .collect();
    (ids, items)
}
