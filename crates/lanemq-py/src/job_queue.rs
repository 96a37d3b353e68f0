//! `JobQueueCore`: one Python class over any `JobBackend`, holding only what every backend
//! has. Every method returns an awaitable; with the in-process backends it is already
//! resolved. This file holds the in-process constructors, the `ServerHooks` a queue on a
//! server gives it (`RedisQueueCore`, in `redis_queue.rs`, extends this class and holds the
//! Redis-only state behind them), and the hot path (what workers call, on the wire where the
//! hooks give one), whose times are milliseconds as `lanemq.queue` computes them; the plain
//! forwards, which take seconds and an optional `now`, are generated in
//! `job_queue_forwards.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::{
    check_queue_name, wall_clock_ms, BoxFuture, Completion, FailOutcome, Failure, JobBackend,
    LocalBackend, NewJob, StoreConfig, Template,
};
use lanemq_core::{CoreError, CoreResult};
use pyo3::prelude::*;

use crate::bridge::count;
use crate::core_args::{CoreArg, Now, Text};
use crate::errors::to_py;
use crate::flows::{self, MemoryGroupCore};
use crate::interrupt::Interrupt;
use crate::job_options::JobOptions;
use crate::job_record::JobRecord;
use crate::ready;
use crate::scheduler_record;
use crate::wire_link::{WireLink, Wired};

/// What a queue on a server (Redis: `redis_queue::RedisQueue`) adds to the calls every
/// backend makes. A trait object, so this class names no backend: a server queue pays one
/// dynamic call per call for it (its wire, its warnings), an in-process queue nothing.
pub(crate) trait ServerHooks: Send + Sync {
    /// The wire link to make a hot call on from the running loop, if there is one now.
    fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<(Arc<Wired>, Bound<'py, WireLink>)>>;
    /// Runs as each call's value is converted for Python (the GIL held): what the server left
    /// to say (warnings) is said then.
    fn after_call(&self) -> PyResult<()>;
    /// The queue closes: releases what the hooks hold (the queue's share of the wire).
    fn close(&self, py: Python<'_>) -> PyResult<()>;
}

#[pyclass(frozen, subclass, module = "lanemq._core")]
pub struct JobQueueCore {
    pub(crate) backend: Arc<dyn JobBackend>,
    /// Whether the backend's calls may finish on their first poll (in-process backends) or
    /// wait on a server (Redis): see `ready::resolve`.
    inline: bool,
    /// A server queue's hooks (its wire for the hot calls, its warnings); None in process.
    hooks: Option<Arc<dyn ServerHooks>>,
    /// The queue's limit on a payload (data, result) in bytes: the worker checks a result
    /// against it before reporting it.
    max_payload_bytes: usize,
}

impl JobQueueCore {
    /// The core of a queue on a server (its calls wait on it), with its `hooks`.
    pub(crate) fn on_server(
        backend: Arc<dyn JobBackend>,
        hooks: Arc<dyn ServerHooks>,
        max_payload_bytes: usize,
    ) -> Self {
        Self {
            backend,
            inline: false,
            hooks: Some(hooks),
            max_payload_bytes,
        }
    }

    /// The core of an in-process queue (its calls may finish on their first poll).
    fn in_process(backend: Arc<dyn JobBackend>, max_payload_bytes: usize) -> Self {
        Self {
            backend,
            inline: true,
            hooks: None,
            max_payload_bytes,
        }
    }

    /// Awaits `future` (see `ready::resolve`), its value converted by `convert` (after the
    /// hooks' `after_call`, if there are hooks).
    pub(crate) fn resolve<'py, T, U, F>(
        &self,
        py: Python<'py>,
        future: BoxFuture<T>,
        convert: F,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: Send + 'static,
        U: for<'a> IntoPyObject<'a> + Send + 'static,
        F: FnOnce(T) -> PyResult<U> + Send + 'static,
    {
        let Some(hooks) = &self.hooks else {
            return ready::resolve(py, future, convert, self.inline);
        };
        let hooks = Arc::clone(hooks);
        let convert = move |value| {
            hooks.after_call()?;
            convert(value)
        };
        ready::resolve(py, future, convert, self.inline)
    }

    /// The wire link of the running loop, if the hooks give one (see `ServerHooks::link`).
    fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<(Arc<Wired>, Bound<'py, WireLink>)>> {
        match &self.hooks {
            Some(hooks) => hooks.link(py),
            None => Ok(None),
        }
    }
}

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

/// A queue's name, refused unless it follows the rule (`check_queue_name`).
fn queue_name(name: Text) -> PyResult<String> {
    let name = name.core("queue name")?;
    check_queue_name(&name).map_err(to_py)?;
    Ok(name)
}

fn new_job(name: String, data: String, options: Option<JobOptions>) -> NewJob {
    NewJob {
        name,
        data,
        options: options.map(|o| o.inner).unwrap_or_default(),
    }
}

pub(crate) fn records(jobs: Vec<lanemq_core::jobs::Job>) -> PyResult<Vec<JobRecord>> {
    Ok(jobs.into_iter().map(JobRecord::from).collect())
}

/// `(id, error)` for each item a batch refused, in input order.
fn refusals(ids: Vec<String>, outcomes: Vec<CoreResult<()>>) -> Vec<(String, String)> {
    ids.into_iter()
        .zip(outcomes)
        .filter_map(|(id, o)| o.err().map(|e| (id, e.to_string())))
        .collect()
}

pub(crate) fn unit(_: ()) -> PyResult<()> {
    Ok(())
}

#[pymethods]
impl JobQueueCore {
    /// An in-process backend (`InMemoryJobQueue`): the queue `name` of `group` (its store if
    /// the group has it, else a new one).
    #[staticmethod]
    #[pyo3(signature = (name, group, max_payload_bytes=16_777_216, max_events=10_000))]
    fn memory(
        name: Text,
        group: &MemoryGroupCore,
        max_payload_bytes: i64,
        max_events: i64,
    ) -> PyResult<Self> {
        let name = queue_name(name)?;
        let name = name.as_str();
        let config = StoreConfig {
            max_payload_bytes: count("max_payload_bytes", max_payload_bytes, 1)? as usize,
            max_events: count("max_events", max_events, 0)? as usize,
        };
        let max_payload_bytes = config.max_payload_bytes;
        let backend = Arc::new(group.inner.queue(name, config));
        Ok(Self::in_process(backend, max_payload_bytes))
    }

    /// A backend in the SQLite file `path`, shared with other processes; its commits synced
    /// as `sync` ("full" or "normal") says.
    #[staticmethod]
    #[pyo3(signature = (path, queue, max_payload_bytes=16_777_216, max_events=10_000, sync="full"))]
    fn local(
        py: Python<'_>,
        path: PathBuf,
        queue: Text,
        max_payload_bytes: i64,
        max_events: i64,
        sync: &str,
    ) -> PyResult<Self> {
        let queue = queue_name(queue)?;
        let queue = queue.as_str();
        let config = StoreConfig {
            max_payload_bytes: count("max_payload_bytes", max_payload_bytes, 1)? as usize,
            max_events: count("max_events", max_events, 0)? as usize,
        };
        let sync = lanemq_core::jobs::LocalSync::parse(sync).map_err(to_py)?;
        let max_payload_bytes = config.max_payload_bytes;
        let backend = py
            .detach(|| LocalBackend::open_synced(&path, queue, config, sync))
            .map_err(to_py)?;
        Ok(Self::in_process(Arc::new(backend), max_payload_bytes))
    }

    /// The largest payload (a job's data or result) the queue takes, in bytes.
    #[getter]
    fn max_payload_bytes(&self) -> usize {
        self.max_payload_bytes
    }

    /// Adds a flow (a node is `(queue, name, data, options, children)`): awaits the added
    /// nodes in preorder, `(queue, record, parent index)`.
    #[pyo3(signature = (root, now=None))]
    fn add_flow<'py>(
        &self,
        py: Python<'py>,
        root: &Bound<'py, PyAny>,
        now: Option<Now>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let root = flows::node(root)?;
        let now = now.core("now")?;
        self.resolve(py, self.backend.add_flow(root, now), |node| {
            Ok(flows::added(vec![node]))
        })
    }

    /// Adds children to the active job `id` held by `token` and parks it in waiting_children.
    #[pyo3(signature = (id, token, children, now=None))]
    fn add_children<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        token: Text,
        children: Vec<Bound<'py, PyAny>>,
        now: Option<Now>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let now = now.core("now")?;
        let (id, token) = (id.core("id")?, token.core("token")?);
        let children = children
            .iter()
            .map(flows::node)
            .collect::<PyResult<Vec<_>>>()?;
        let future = self.backend.add_children(id, token, children, now);
        self.resolve(py, future, |nodes| Ok(flows::added(nodes)))
    }

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
        let ids: Vec<String> = items.iter().map(|(id, _, _)| id.clone()).collect();
        let items = items
            .into_iter()
            .map(|(id, token, result)| Completion { id, token, result })
            .collect();
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
        let ids: Vec<String> = items.iter().map(|(id, _, _)| id.clone()).collect();
        let items = items
            .into_iter()
            .map(|(id, token, result)| Completion { id, token, result })
            .collect();
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

    /// Fails `(id, token, error, stacktrace, retry)` items; awaits `(id, retried, error)`.
    #[allow(clippy::type_complexity)]
    fn fail_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(Text, Text, Text, Option<Text>, bool)>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let items = items
            .into_iter()
            .map(|(id, token, error, stacktrace, retry)| {
                Ok(Failure {
                    id: id.core("id")?,
                    token: token.core("token")?,
                    error: error.core("error")?,
                    stacktrace: stacktrace.core("stacktrace")?,
                    retry,
                    delay: None,
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

    /// Renews leases; awaits the ids whose lease was lost.
    fn renew_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(Text, Text)>,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let items = items
            .into_iter()
            .map(|(id, token)| Ok((id.core("id")?, token.core("token")?)))
            .collect::<PyResult<Vec<_>>>()?;
        let ids: Vec<String> = items.iter().map(|(id, _)| id.clone()).collect();
        self.resolve(
            py,
            self.backend.renew_many(items, lease, now),
            move |outcomes| {
                Ok(ids
                    .into_iter()
                    .zip(outcomes)
                    .filter(|(_, o)| o.is_err())
                    .map(|(id, _)| id)
                    .collect::<Vec<_>>())
            },
        )
    }

    /// Creates or updates the job scheduler `key`; awaits its pending occurrence. `every`,
    /// `start` and `end` are milliseconds.
    #[pyo3(signature = (key, every, cron, tz, limit, start, end, immediately, name, data,
        options, now=None))]
    #[allow(clippy::too_many_arguments)]
    fn upsert_scheduler<'py>(
        &self,
        py: Python<'py>,
        key: Text,
        every: Option<u64>,
        cron: Option<Text>,
        tz: Text,
        limit: Option<i64>,
        start: Option<u64>,
        end: Option<u64>,
        immediately: bool,
        name: Text,
        data: Text,
        options: Option<JobOptions>,
        now: Option<Now>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let now = now.core("now")?;
        let key = key.core("scheduler key")?;
        let (cron, tz) = (cron.core("cron")?, tz.core("tz")?);
        let name = name.core("job name of the template")?;
        let data = data.core("data of the template")?;
        let spec = scheduler_record::spec(every, cron, tz, limit, start, end, immediately)?;
        let template = Template {
            name,
            data,
            options: options.map(|o| o.inner).unwrap_or_default(),
        };
        let future = self.backend.upsert_scheduler(key, spec, template, now);
        self.resolve(py, future, |job| Ok(JobRecord::from(job)))
    }

    /// Releases the backend's file or connections once pending operations are done.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(hooks) = &self.hooks {
            hooks.close(py)?;
        }
        self.resolve(py, self.backend.close(), unit)
    }
}
