//! `JobQueueCore`: one Python class over any `JobBackend`, holding only what every backend
//! has. Every method returns an awaitable; with the in-process backends it is already
//! resolved. This file holds the class, the `ServerHooks` a queue on a server gives it
//! (`RedisQueueCore`, in `redis_queue.rs`, extends this class and holds the Redis-only state
//! behind them), how a call's future becomes an awaitable (`resolve`), the in-process
//! constructors and the calls whose arguments need more than a plain conversion (flows,
//! schedulers) and `close`. The calls a worker makes per job (on the wire where the hooks
//! give one) are in `job_queue_hot.rs`; the plain forwards, which take seconds and an
//! optional `now`, are generated in `job_queue_forwards.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::{
    check_queue_name, BoxFuture, JobBackend, LocalBackend, StoreConfig, Template,
};
use pyo3::prelude::*;

use crate::bridge::count;
use crate::core_args::{CoreArg, Now, Text};
use crate::errors::to_py;
use crate::flows::{self, MemoryGroupCore};
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
    pub(crate) fn link<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Arc<Wired>, Bound<'py, WireLink>)>> {
        match &self.hooks {
            Some(hooks) => hooks.link(py),
            None => Ok(None),
        }
    }
}

/// A queue's name, refused unless it follows the rule (`check_queue_name`).
fn queue_name(name: Text) -> PyResult<String> {
    let name = name.core("queue name")?;
    check_queue_name(&name).map_err(to_py)?;
    Ok(name)
}

pub(crate) fn records(jobs: Vec<lanemq_core::jobs::Job>) -> PyResult<Vec<JobRecord>> {
    Ok(jobs.into_iter().map(JobRecord::from).collect())
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

    /// Adds children to the job `id` that is not running (BullMQ's `opts.parent`): it waits
    /// for them in waiting_children.
    #[pyo3(signature = (id, children, now=None))]
    fn attach_children<'py>(
        &self,
        py: Python<'py>,
        id: Text,
        children: Vec<Bound<'py, PyAny>>,
        now: Option<Now>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let now = now.core("now")?;
        let id = id.core("id")?;
        let children = children
            .iter()
            .map(flows::node)
            .collect::<PyResult<Vec<_>>>()?;
        let future = self.backend.attach_children(id, children, now);
        self.resolve(py, future, |nodes| Ok(flows::added(nodes)))
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
