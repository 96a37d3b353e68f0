//! `JobQueueCore`: one Python class over any `JobBackend`. Every method returns an awaitable;
//! with the in-process backends it is already resolved. This file holds the constructors and
//! the hot path (what workers call, on the wire where there is one), whose times are
//! milliseconds as `lanemq.queue` computes them; the plain forwards, which take seconds and an
//! optional `now`, are generated in `job_queue_forwards.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::{
    check_queue_name, wall_clock_ms, BoxFuture, Completion, FailOutcome, Failure, JobBackend,
    LocalBackend, NewJob, StoreConfig, Template,
};
use lanemq_core::{CoreError, CoreResult};
use lanemq_redis::{
    is_cluster_url, is_sentinel_url, Cluster, RedisBackend, RedisJobBackend, Server, ServerOptions,
    WireCalls,
};
use pyo3::exceptions::PyDeprecationWarning;
use pyo3::prelude::*;

use crate::bridge::count;
use crate::core_args::{CoreArg, Now, Secs, Text};
use crate::errors::to_py;
use crate::flows::{self, MemoryGroupCore};
use crate::interrupt::Interrupt;
use crate::job_options::JobOptions;
use crate::job_record::JobRecord;
use crate::ready;
use crate::scheduler_record;
use crate::wire_link::{WireLink, Wired};

#[pyclass(frozen, module = "lanemq._core")]
pub struct JobQueueCore {
    pub(crate) backend: Arc<dyn JobBackend>,
    /// Whether the backend's calls may finish on their first poll (in-process backends) or
    /// wait on a server (Redis): see `ready::resolve`.
    inline: bool,
    /// The backend's wire for the hot calls, if it has one (Redis): see `wire_link`. A queue
    /// of a cluster takes its master's once routed, and another's if it moves (`wired_for`).
    wired: std::sync::Mutex<Option<Arc<Wired>>>,
    /// What a Redis queue knows of its server and settings (its siblings share them).
    redis: Option<RedisParts>,
    /// The queue's limit on a payload (data, result) in bytes: the worker checks a result
    /// against it before reporting it.
    max_payload_bytes: usize,
}

struct RedisParts {
    backend: RedisJobBackend,
    settings: RedisSettings,
}

#[derive(Clone)]
struct RedisSettings {
    prefix: String,
    max_payload_bytes: usize,
    max_events: usize,
    allow_eviction: bool,
    /// Replicas that must have each write that adds jobs, and the longest wait for them (ms).
    replica_ack: (usize, u64),
}

impl RedisParts {
    fn server(&self) -> Arc<Server> {
        self.backend.server()
    }
}

/// Where a Redis queue lives: one server, or a cluster (its slot's master, found on first use).
enum Place {
    Server(Arc<Server>),
    Cluster(Arc<Cluster>),
}

/// Logs `message` on the `lanemq` logger (on the loop's thread, which holds the GIL).
fn log_warning(message: &str) {
    Python::attach(|py| {
        let logged = py
            .import("logging")
            .and_then(|logging| logging.call_method1("getLogger", ("lanemq",)))
            .and_then(|logger| logger.call_method1("warning", (message,)));
        if let Err(error) = logged {
            error.write_unraisable(py, None);
        }
    });
}

impl JobQueueCore {
    /// Awaits `future` (see `ready::resolve`), its value converted by `convert`.
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
        let Some(redis) = &self.redis else {
            return ready::resolve(py, future, convert, self.inline);
        };
        // A warning of the first connect (the eviction policy could not be read) is logged
        // when a call it delayed returns.
        let server = redis.server();
        let backend = redis.backend.clone();
        let convert = move |value| {
            if let Some(warning) = server.take_warning() {
                log_warning(&warning);
            }
            if let Some(warning) = backend.take_name_warning() {
                Python::attach(|py| {
                    let category = py.get_type::<PyDeprecationWarning>();
                    PyErr::warn(py, &category, &std::ffi::CString::new(warning)?, 1)
                })?;
            }
            convert(value)
        };
        ready::resolve(py, future, convert, self.inline)
    }

    /// The wire link of the running loop, if this backend has a wire and it is there for it
    /// (and this queue made its checks of the server: until then calls go the ordinary way,
    /// which makes them).
    fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<(Arc<Wired>, Bound<'py, WireLink>)>> {
        let Some(redis) = &self.redis else {
            return Ok(None);
        };
        // A queue that waits for replicas makes its adds the ordinary way (`with_replica_ack`).
        if !redis.backend.is_ready() || redis.settings.replica_ack.0 > 0 {
            return Ok(None);
        }
        let Some(wired) = self.wired_for(py, redis)? else {
            return Ok(None);
        };
        Ok(wired.link(py)?.map(|link| (wired, link)))
    }

    /// The share of the wire of this queue's server, if it can have one (not over TLS): on a
    /// cluster, of its slot's master as last routed. A queue whose slot moved (or failed over)
    /// closes its share of the old master's wire and takes the new one's; until a reply says
    /// it moved, its calls on the old wire get MOVED and go again the ordinary way, which
    /// routes them.
    fn wired_for(&self, py: Python<'_>, redis: &RedisParts) -> PyResult<Option<Arc<Wired>>> {
        let server = redis.server();
        if !server.wire_capable() {
            return Ok(None);
        }
        let (wired, old) = {
            let mut slot = self.wired.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(wired) = slot.as_ref().filter(|w| w.server_id() == server.id()) {
                return Ok(Some(Arc::clone(wired)));
            }
            let calls: Arc<dyn WireCalls> = Arc::new(redis.backend.clone());
            let wired = Arc::new(Wired::shared(calls, server.id()));
            let old = slot.replace(Arc::clone(&wired));
            (wired, old)
        };
        if let Some(old) = old {
            old.close(py)?;
        }
        Ok(Some(wired))
    }

    fn current_wired(&self) -> Option<Arc<Wired>> {
        self.wired.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The queue `queue` at `place` (sharing its connections), with `settings`. A queue of a
    /// cluster takes its wire at its first hot call once routed (`wired_for`): a wire is
    /// shared by the queues of one server, which a cluster queue knows only then.
    fn redis_on(place: Place, settings: RedisSettings, queue: &str) -> PyResult<Self> {
        let (prefix, max_events, evict) = (
            settings.prefix.as_str(),
            settings.max_events,
            settings.allow_eviction,
        );
        let backend = match place {
            Place::Server(server) => RedisBackend::on(server, prefix, queue, max_events, evict),
            Place::Cluster(cluster) => {
                RedisBackend::in_cluster(cluster, prefix, queue, max_events, evict)
                    .map_err(to_py)?
            }
        };
        let (replicas, ack_ms) = settings.replica_ack;
        let backend = backend.with_replica_ack(replicas, std::time::Duration::from_millis(ack_ms));
        let backend = RedisJobBackend::new(backend, settings.max_payload_bytes);
        let server = backend.server();
        let wired =
            (server.wire_capable() && backend.cluster().is_none() && replicas == 0).then(|| {
                let calls: Arc<dyn WireCalls> = Arc::new(backend.clone());
                Arc::new(Wired::shared(calls, server.id()))
            });
        Ok(Self {
            backend: Arc::new(backend.clone()),
            inline: false,
            wired: std::sync::Mutex::new(wired),
            max_payload_bytes: settings.max_payload_bytes,
            redis: Some(RedisParts { backend, settings }),
        })
    }

    fn redis_parts(&self) -> PyResult<&RedisParts> {
        self.redis
            .as_ref()
            .ok_or_else(|| to_py(CoreError::Refused("not a Redis queue".into())))
    }
}

/// A hot call (`add`, `add_bulk`, `claim`, `complete_many`, `complete_and_claim`: the methods
/// `WireCalls` and `JobLifecycle` share) on the running loop's wire if this queue has one
/// there (see `JobQueueCore::link`), else the ordinary way: the one place that chooses. Its
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

/// A Redis queue's name: the rule's, or a name Redis queues could have before it (not empty,
/// no braces, which would change the hash tag), which only an existing queue may keep (its
/// first call checks, `RedisBackend::ready`).
fn redis_queue_name(name: Text) -> PyResult<String> {
    let name = name.core("queue name")?;
    if name.is_empty() || name.contains(['{', '}']) {
        check_queue_name(&name).map_err(to_py)?;
    }
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
        Ok(Self {
            max_payload_bytes: config.max_payload_bytes,
            backend: Arc::new(group.inner.queue(name, config)),
            inline: true,
            wired: std::sync::Mutex::new(None),
            redis: None,
        })
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
        Ok(Self {
            backend: Arc::new(backend),
            inline: true,
            wired: std::sync::Mutex::new(None),
            redis: None,
            max_payload_bytes,
        })
    }

    /// A Redis (or Valkey) backend, without I/O: it connects on its first call (or
    /// `connect`), within `connect_timeout` ms. Queues of one URL and options share their
    /// connections. A URL that does not parse raises `ConfigError` (its password masked).
    #[staticmethod]
    #[pyo3(signature = (url, queue, prefix="lanemq", max_payload_bytes=16_777_216, max_events=10_000,
        allow_eviction=false, connect_timeout=5_000, tls_ca_file=None, min_replicas_ack=0,
        replica_ack_timeout=1_000))]
    #[allow(clippy::too_many_arguments)]
    fn redis(
        url: &str,
        queue: Text,
        prefix: &str,
        max_payload_bytes: i64,
        max_events: i64,
        allow_eviction: bool,
        connect_timeout: i64,
        tls_ca_file: Option<PathBuf>,
        min_replicas_ack: i64,
        replica_ack_timeout: i64,
    ) -> PyResult<Self> {
        let max_payload_bytes = count("max_payload_bytes", max_payload_bytes, 1)? as usize;
        let replicas = count("min_replicas_ack", min_replicas_ack, 0)? as usize;
        let replica_ack_timeout = count("replica_ack_timeout", replica_ack_timeout, 1)?;
        let max_events = count("max_events", max_events, 0)? as usize;
        let connect_timeout = count("connect_timeout", connect_timeout, 1)?;
        let options = ServerOptions {
            connect_timeout: std::time::Duration::from_millis(u64::from(connect_timeout)),
            tls_ca_file,
        };
        let place = if is_cluster_url(url) || is_sentinel_url(url) {
            Place::Cluster(Cluster::shared(url, &options).map_err(to_py)?)
        } else {
            Place::Server(Server::shared(url, &options).map_err(to_py)?)
        };
        let settings = RedisSettings {
            prefix: prefix.to_owned(),
            max_payload_bytes,
            max_events,
            allow_eviction,
            replica_ack: (replicas, u64::from(replica_ack_timeout)),
        };
        Self::redis_on(place, settings, &redis_queue_name(queue)?)
    }

    /// The largest payload (a job's data or result) the queue takes, in bytes.
    #[getter]
    fn max_payload_bytes(&self) -> usize {
        self.max_payload_bytes
    }

    /// The queue `queue` of this Redis queue's server, prefix and settings (sharing its
    /// connections).
    fn redis_sibling(&self, queue: Text) -> PyResult<Self> {
        let queue = &redis_queue_name(queue)?;
        let parts = self.redis_parts()?;
        let place = match parts.backend.cluster() {
            Some(cluster) => Place::Cluster(Arc::clone(cluster)),
            None => Place::Server(parts.server()),
        };
        Self::redis_on(place, parts.settings.clone(), queue)
    }

    /// Connects (unless the server's connections are up; the wire too) and makes this queue's
    /// checks of the server; raises `BackendConnectionError` (`BackendAuthenticationError` for refused
    /// credentials) or `ConfigError` (an evicting server).
    fn connect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.redis_parts()?.backend.clone();
        let wire = self.current_wired().and_then(|wired| wired.prepare(py));
        let future: BoxFuture<()> = Box::pin(async move {
            backend.backend_ready().await?;
            // The wire too, so the hot calls after this take it.
            if let Some(wire) = wire {
                wire.await;
            }
            Ok(())
        });
        self.resolve(py, future, unit)
    }

    /// Awaits True once the server answers (asked every 100 ms), False after `timeout` seconds.
    fn wait_reachable<'py>(&self, py: Python<'py>, timeout: Secs) -> PyResult<Bound<'py, PyAny>> {
        let timeout = timeout.core("timeout")?;
        let backend = self.redis_parts()?.backend.clone();
        let future: BoxFuture<bool> = Box::pin(async move {
            Ok(backend
                .backend_wait_reachable(std::time::Duration::from_millis(timeout))
                .await)
        });
        self.resolve(py, future, Ok)
    }

    /// Equal for queues that share connections (one server, one set of options).
    fn server_id(&self) -> PyResult<u64> {
        let parts = self.redis_parts()?;
        Ok(match parts.backend.cluster() {
            Some(cluster) => cluster.id(),
            None => parts.server().id(),
        })
    }

    /// The server's URL with its password masked.
    fn masked_url(&self) -> PyResult<String> {
        let parts = self.redis_parts()?;
        Ok(match parts.backend.cluster() {
            Some(cluster) => cluster.masked_url().to_owned(),
            None => parts.server().masked_url().to_owned(),
        })
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
        let wired = self.wired.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(wired) = wired {
            wired.close(py)?;
        }
        self.resolve(py, self.backend.close(), unit)
    }
}
