//! `JobQueueCore`: one Python class over any `JobBackend`. Every method returns an awaitable;
//! with the in-process backends it is already resolved. Times are milliseconds.

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::{
    wall_clock_ms, BoxFuture, Completion, FailOutcome, Failure, FinishedResult, JobBackend,
    JobState, LocalBackend, NewJob, StoreConfig, Template,
};
use lanemq_core::{CoreError, CoreResult};
use lanemq_redis::{RedisBackend, RedisJobBackend, Server, ServerOptions, WireCalls};
use pyo3::prelude::*;

use crate::bridge::{count, Int};
use crate::errors::{invalid, to_py};
use crate::flows::{self, MemoryGroupCore};
use crate::interrupt::Interrupt;
use crate::job_options::JobOptions;
use crate::job_record::JobRecord;
use crate::ready;
use crate::scheduler_record::{self, SchedulerRecord};
use crate::wire_link::{WireLink, Wired};

#[pyclass(frozen, module = "lanemq._core")]
pub struct JobQueueCore {
    backend: Arc<dyn JobBackend>,
    /// Whether the backend's calls may finish on their first poll (in-process backends) or
    /// wait on a server (Redis): see `ready::resolve`.
    inline: bool,
    /// The backend's wire for the hot calls, if it has one (Redis): see `wire_link`.
    wired: Option<Wired>,
    /// What a Redis queue knows of its server and settings (its siblings share them).
    redis: Option<RedisParts>,
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
}

impl RedisParts {
    fn server(&self) -> &Arc<Server> {
        self.backend.server()
    }
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
    fn resolve<'py, T, U, F>(
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
        let server = Arc::clone(redis.server());
        let convert = move |value| {
            if let Some(warning) = server.take_warning() {
                log_warning(&warning);
            }
            convert(value)
        };
        ready::resolve(py, future, convert, self.inline)
    }

    /// The wire link of the running loop, if this backend has a wire and it is there for it
    /// (and this queue made its checks of the server: until then calls go the ordinary way,
    /// which makes them).
    fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<(&Wired, Bound<'py, WireLink>)>> {
        let (Some(wired), Some(redis)) = (&self.wired, &self.redis) else {
            return Ok(None);
        };
        if !redis.backend.is_ready() {
            return Ok(None);
        }
        Ok(wired.link(py)?.map(|link| (wired, link)))
    }

    /// The queue `queue` on `server` (sharing its connections), with `settings`.
    fn redis_on(server: Arc<Server>, settings: RedisSettings, queue: &str) -> Self {
        let backend = RedisBackend::on(
            server,
            &settings.prefix,
            queue,
            settings.max_events,
            settings.allow_eviction,
        );
        let backend = RedisJobBackend::new(backend, settings.max_payload_bytes);
        let server = backend.server();
        let wired = server.wire_capable().then(|| {
            let calls: Arc<dyn WireCalls> = Arc::new(backend.clone());
            Wired::shared(calls, server.id())
        });
        Self {
            backend: Arc::new(backend.clone()),
            inline: false,
            wired,
            redis: Some(RedisParts { backend, settings }),
        }
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

fn new_job(name: String, data: String, options: Option<JobOptions>) -> NewJob {
    NewJob {
        name,
        data,
        options: options.map(|o| o.inner).unwrap_or_default(),
    }
}

fn states(names: &[String]) -> PyResult<Vec<JobState>> {
    names
        .iter()
        .map(|n| JobState::parse(n).map_err(to_py))
        .collect()
}

fn records(jobs: Vec<lanemq_core::jobs::Job>) -> PyResult<Vec<JobRecord>> {
    Ok(jobs.into_iter().map(JobRecord::from).collect())
}

/// `(id, error)` for each item a batch refused, in input order.
fn refusals(ids: Vec<String>, outcomes: Vec<CoreResult<()>>) -> Vec<(String, String)> {
    ids.into_iter()
        .zip(outcomes)
        .filter_map(|(id, o)| o.err().map(|e| (id, e.to_string())))
        .collect()
}

fn unit(_: ()) -> PyResult<()> {
    Ok(())
}

fn finished(result: FinishedResult) -> PyResult<(&'static str, Option<String>)> {
    Ok(match result {
        FinishedResult::Missing => ("missing", None),
        FinishedResult::NotFinished(state) => ("pending", Some(state.as_str().to_owned())),
        FinishedResult::Completed(value) => ("completed", value.map(|v| v.to_string())),
        FinishedResult::Failed(reason) => ("failed", Some(reason)),
    })
}

/// An event as Python receives it: (id, timestamp, event, job id, fields).
type EventRow = (
    u64,
    u64,
    &'static str,
    Option<String>,
    Vec<(&'static str, String)>,
);

#[pymethods]
impl JobQueueCore {
    /// An in-process backend (`InMemoryJobQueue`): the queue `name` of `group` (its store if
    /// the group has it, else a new one).
    #[staticmethod]
    #[pyo3(signature = (name, group, max_payload_bytes=16_777_216, max_events=10_000))]
    fn memory(
        name: &str,
        group: &MemoryGroupCore,
        max_payload_bytes: i64,
        max_events: i64,
    ) -> PyResult<Self> {
        let config = StoreConfig {
            max_payload_bytes: count("max_payload_bytes", max_payload_bytes, 1)? as usize,
            max_events: count("max_events", max_events, 0)? as usize,
        };
        Ok(Self {
            backend: Arc::new(group.inner.queue(name, config)),
            inline: true,
            wired: None,
            redis: None,
        })
    }

    /// A backend in the SQLite file `path`, shared with other processes.
    #[staticmethod]
    #[pyo3(signature = (path, queue, max_payload_bytes=16_777_216, max_events=10_000))]
    fn local(
        py: Python<'_>,
        path: PathBuf,
        queue: &str,
        max_payload_bytes: i64,
        max_events: i64,
    ) -> PyResult<Self> {
        let config = StoreConfig {
            max_payload_bytes: count("max_payload_bytes", max_payload_bytes, 1)? as usize,
            max_events: count("max_events", max_events, 0)? as usize,
        };
        let backend = py
            .detach(|| LocalBackend::open(&path, queue, config))
            .map_err(to_py)?;
        Ok(Self {
            backend: Arc::new(backend),
            inline: true,
            wired: None,
            redis: None,
        })
    }

    /// A Redis (or Valkey) backend, without I/O: it connects on its first call (or
    /// `connect`), within `connect_timeout` ms. Queues of one URL and options share their
    /// connections. A URL that does not parse raises `ConfigError` (its password masked).
    #[staticmethod]
    #[pyo3(signature = (url, queue, prefix="lanemq", max_payload_bytes=16_777_216, max_events=10_000,
        allow_eviction=false, connect_timeout=5_000, tls_ca_file=None))]
    #[allow(clippy::too_many_arguments)]
    fn redis(
        url: &str,
        queue: &str,
        prefix: &str,
        max_payload_bytes: i64,
        max_events: i64,
        allow_eviction: bool,
        connect_timeout: i64,
        tls_ca_file: Option<PathBuf>,
    ) -> PyResult<Self> {
        let max_payload_bytes = count("max_payload_bytes", max_payload_bytes, 1)? as usize;
        let max_events = count("max_events", max_events, 0)? as usize;
        let connect_timeout = count("connect_timeout", connect_timeout, 1)?;
        let options = ServerOptions {
            connect_timeout: std::time::Duration::from_millis(u64::from(connect_timeout)),
            tls_ca_file,
        };
        let server = Server::shared(url, &options).map_err(to_py)?;
        let settings = RedisSettings {
            prefix: prefix.to_owned(),
            max_payload_bytes,
            max_events,
            allow_eviction,
        };
        Ok(Self::redis_on(server, settings, queue))
    }

    /// The queue `queue` of this Redis queue's server, prefix and settings (sharing its
    /// connections).
    fn redis_sibling(&self, queue: &str) -> PyResult<Self> {
        let parts = self.redis_parts()?;
        Ok(Self::redis_on(
            Arc::clone(parts.server()),
            parts.settings.clone(),
            queue,
        ))
    }

    /// Connects (unless the server's connections are up; the wire too) and makes this queue's
    /// checks of the server; raises `BackendConnectionError` (`BackendAuthenticationError` for refused
    /// credentials) or `ConfigError` (an evicting server).
    fn connect<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let backend = self.redis_parts()?.backend.clone();
        let wire = self.wired.as_ref().and_then(|wired| wired.prepare(py));
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

    /// Awaits True once the server answers (asked every 100 ms), False after `timeout` ms.
    fn wait_reachable<'py>(&self, py: Python<'py>, timeout: u64) -> PyResult<Bound<'py, PyAny>> {
        let server = Arc::clone(self.redis_parts()?.server());
        let future: BoxFuture<bool> = Box::pin(async move {
            Ok(server
                .wait_reachable(std::time::Duration::from_millis(timeout))
                .await)
        });
        self.resolve(py, future, Ok)
    }

    /// Equal for queues that share connections (one server, one set of options).
    fn server_id(&self) -> PyResult<u64> {
        Ok(self.redis_parts()?.server().id())
    }

    /// The server's URL with its password masked.
    fn masked_url(&self) -> PyResult<String> {
        Ok(self.redis_parts()?.server().masked_url().to_owned())
    }

    /// Adds a flow (a node is `(queue, name, data, options, children)`): awaits the added
    /// nodes in preorder, `(queue, record, parent index)`.
    fn add_flow<'py>(
        &self,
        py: Python<'py>,
        root: &Bound<'py, PyAny>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let root = flows::node(root)?;
        self.resolve(py, self.backend.add_flow(root, now), |node| {
            Ok(flows::added(vec![node]))
        })
    }

    /// Adds children to the active job `id` held by `token` and parks it in waiting_children.
    fn add_children<'py>(
        &self,
        py: Python<'py>,
        id: String,
        token: String,
        children: Vec<Bound<'py, PyAny>>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let children = children
            .iter()
            .map(flows::node)
            .collect::<PyResult<Vec<_>>>()?;
        let future = self.backend.add_children(id, token, children, now);
        self.resolve(py, future, |nodes| Ok(flows::added(nodes)))
    }

    #[pyo3(signature = (id, cursors, count=None))]
    fn get_dependencies<'py>(
        &self,
        py: Python<'py>,
        id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let future = self.backend.get_dependencies(id, cursors, count);
        self.resolve(py, future, |deps| Ok(flows::dependencies(deps)))
    }

    /// Awaits (processed, unprocessed, failed, ignored).
    fn get_dependencies_count<'py>(
        &self,
        py: Python<'py>,
        id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_dependencies_count(id), |c| {
            Ok((c.processed, c.unprocessed, c.failed, c.ignored))
        })
    }

    fn remove_child_dependency<'py>(
        &self,
        py: Python<'py>,
        id: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_child_dependency(id, now), Ok)
    }

    fn remove_unprocessed_children<'py>(
        &self,
        py: Python<'py>,
        id: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_unprocessed_children(id, now), Ok)
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
        worker_id: String,
        lease: u64,
        max_jobs: usize,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        hot_call!(self, py, claim(worker_id, lease, max_jobs, now), records)
    }

    #[pyo3(signature = (timeout=None))]
    fn wait_for_job<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.wait_for_job(timeout), Ok)
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
        worker_id: String,
        lease: u64,
        max_jobs: usize,
        timeout: Option<u64>,
    ) -> PyResult<(Bound<'py, PyAny>, Interrupt)> {
        let (interrupt, interrupted) = Interrupt::new();
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
        items: Vec<(String, String, String, Option<String>, bool)>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ids: Vec<String> = items.iter().map(|item| item.0.clone()).collect();
        let items = items
            .into_iter()
            .map(|(id, token, error, stacktrace, retry)| Failure {
                id,
                token,
                error,
                stacktrace,
                retry,
                delay: None,
            })
            .collect();
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
        id: String,
        token: String,
        error: String,
        stacktrace: Option<String>,
        retry: bool,
        delay: Option<u64>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let future = self.backend.fail_many(
            vec![Failure {
                id,
                token,
                error,
                stacktrace,
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
        id: String,
        token: String,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(
            py,
            self.backend.renew_many(vec![(id, token)], lease, now),
            |mut outcomes| outcomes.pop().unwrap_or(Ok(())).map_err(to_py),
        )
    }

    /// Renews leases; awaits the ids whose lease was lost.
    fn renew_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(String, String)>,
        lease: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
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

    fn move_to_delayed<'py>(
        &self,
        py: Python<'py>,
        id: String,
        token: String,
        delay_until: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(
            py,
            self.backend.move_to_delayed(id, token, delay_until, now),
            unit,
        )
    }

    fn release<'py>(
        &self,
        py: Python<'py>,
        id: String,
        token: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.release(id, token, now), unit)
    }

    fn recover_stalled<'py>(&self, py: Python<'py>, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.recover_stalled(now), Ok)
    }

    fn holds_lock<'py>(
        &self,
        py: Python<'py>,
        id: String,
        token: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.holds_lock(id, token, now), Ok)
    }

    fn get_job<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_job(id), |job| {
            Ok(job.map(JobRecord::from))
        })
    }

    fn get_state<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_state(id), |state| {
            Ok(state.map(JobState::as_str))
        })
    }

    fn get_job_counts<'py>(
        &self,
        py: Python<'py>,
        states: Vec<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let states = self::states(&states)?;
        self.resolve(py, self.backend.get_job_counts(states), |counts| {
            Ok(counts
                .into_iter()
                .map(|(s, n)| (s.as_str(), n))
                .collect::<Vec<_>>())
        })
    }

    fn count_pending<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.count_pending(), Ok)
    }

    fn get_counts_per_priority<'py>(
        &self,
        py: Python<'py>,
        priorities: Vec<u32>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_counts_per_priority(priorities), Ok)
    }

    fn list_jobs<'py>(
        &self,
        py: Python<'py>,
        states: Vec<String>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let states = self::states(&states)?;
        self.resolve(
            py,
            self.backend.list_jobs(states, start, end, ascending),
            records,
        )
    }

    /// Awaits `(kind, value)`: ("missing", None), ("pending", state), ("completed", json or
    /// None), ("failed", reason).
    fn finished_result<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.finished_result(id), finished)
    }

    /// Like `finished_result`, once the job finishes (or `timeout` ms pass).
    #[pyo3(signature = (id, timeout=None))]
    fn wait_finished<'py>(
        &self,
        py: Python<'py>,
        id: String,
        timeout: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.wait_finished(id, timeout), finished)
    }

    fn promote<'py>(&self, py: Python<'py>, id: String, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.promote(id, now), unit)
    }

    fn reschedule<'py>(
        &self,
        py: Python<'py>,
        id: String,
        delay_until: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.reschedule(id, delay_until, now), unit)
    }

    fn retry_job<'py>(&self, py: Python<'py>, id: String, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.retry_job(id, now), unit)
    }

    fn update_priority<'py>(
        &self,
        py: Python<'py>,
        id: String,
        priority: Int,
        lifo: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let priority = priority.get("priority")?;
        let max = i64::from(lanemq_core::jobs::MAX_PRIORITY);
        if !(0..=max).contains(&priority) {
            return Err(invalid(
                "priority",
                priority,
                &format!("must be between 0 and {max}"),
            ));
        }
        let priority = priority as u32;
        self.resolve(py, self.backend.update_priority(id, priority, lifo), unit)
    }

    fn update_data<'py>(
        &self,
        py: Python<'py>,
        id: String,
        data: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.update_data(id, data), unit)
    }

    fn update_progress<'py>(
        &self,
        py: Python<'py>,
        id: String,
        progress: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.update_progress(id, progress, now), unit)
    }

    fn add_log<'py>(
        &self,
        py: Python<'py>,
        id: String,
        line: String,
        keep: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.add_log(id, line, keep), Ok)
    }

    fn get_logs<'py>(
        &self,
        py: Python<'py>,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_logs(id, start, end, ascending), Ok)
    }

    fn clear_logs<'py>(
        &self,
        py: Python<'py>,
        id: String,
        keep: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.clear_logs(id, keep), unit)
    }

    #[pyo3(signature = (id, lines, reason=None))]
    fn save_stacktrace<'py>(
        &self,
        py: Python<'py>,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.save_stacktrace(id, lines, reason), unit)
    }

    fn remove<'py>(&self, py: Python<'py>, id: String, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove(id, now), unit)
    }

    fn pause<'py>(&self, py: Python<'py>, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.pause(now), unit)
    }

    fn resume<'py>(&self, py: Python<'py>, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.resume(now), unit)
    }

    fn is_paused<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.is_paused(), Ok)
    }

    fn drain<'py>(&self, py: Python<'py>, delayed: bool, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.drain(delayed, now), Ok)
    }

    fn clean<'py>(
        &self,
        py: Python<'py>,
        grace: u64,
        limit: usize,
        state: &str,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = JobState::parse(state).map_err(to_py)?;
        self.resolve(py, self.backend.clean(grace, limit, state, now), Ok)
    }

    fn obliterate<'py>(
        &self,
        py: Python<'py>,
        force: bool,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.obliterate(force, now), unit)
    }

    fn set_rate_limit<'py>(
        &self,
        py: Python<'py>,
        max: i64,
        duration: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max = count("max", max, 1)?;
        self.resolve(py, self.backend.set_rate_limit(max, duration), unit)
    }

    fn get_rate_limit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_rate_limit(), Ok)
    }

    fn clear_rate_limit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.clear_rate_limit(), unit)
    }

    /// Holds every claim back for `duration` ms from `now`.
    fn rate_limit<'py>(
        &self,
        py: Python<'py>,
        duration: u64,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.rate_limit(duration, now), unit)
    }

    /// Awaits how long the rate limits still hold claims back at `now`, in ms.
    fn get_rate_limit_ttl<'py>(&self, py: Python<'py>, now: u64) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_rate_limit_ttl(now), Ok)
    }

    fn remove_rate_limit_key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_rate_limit_key(), unit)
    }

    /// Awaits how many jobs that no state referenced were removed.
    fn remove_orphaned_jobs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_orphaned_jobs(), Ok)
    }

    #[pyo3(signature = (max=None))]
    fn set_max_active<'py>(
        &self,
        py: Python<'py>,
        max: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let max = max.map(|m| count("max_active", m, 1)).transpose()?;
        self.resolve(py, self.backend.set_max_active(max), unit)
    }

    fn get_max_active<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_max_active(), Ok)
    }

    fn is_maxed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.is_maxed(), Ok)
    }

    /// The id of the job holding the dedup key `dedup_id` at `now`, or None if it is not held.
    fn get_deduplication_job_id<'py>(
        &self,
        py: Python<'py>,
        dedup_id: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_deduplication_job_id(dedup_id, now), Ok)
    }

    /// Deletes the dedup key `dedup_id`; awaits True if a held key was deleted.
    fn remove_deduplication_key<'py>(
        &self,
        py: Python<'py>,
        dedup_id: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_deduplication_key(dedup_id, now), Ok)
    }

    /// Creates or updates the job scheduler `key`; awaits its pending occurrence. `every`,
    /// `start` and `end` are milliseconds.
    #[pyo3(signature = (key, every, cron, tz, limit, start, end, immediately, name, data,
        options, now))]
    #[allow(clippy::too_many_arguments)]
    fn upsert_scheduler<'py>(
        &self,
        py: Python<'py>,
        key: String,
        every: Option<u64>,
        cron: Option<String>,
        tz: String,
        limit: Option<i64>,
        start: Option<u64>,
        end: Option<u64>,
        immediately: bool,
        name: String,
        data: String,
        options: Option<JobOptions>,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let spec = scheduler_record::spec(every, cron, tz, limit, start, end, immediately)?;
        let template = Template {
            name,
            data,
            options: options.map(|o| o.inner).unwrap_or_default(),
        };
        let future = self.backend.upsert_scheduler(key, spec, template, now);
        self.resolve(py, future, |job| Ok(JobRecord::from(job)))
    }

    fn get_scheduler<'py>(&self, py: Python<'py>, key: String) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.get_scheduler(key), |found| {
            Ok(found.map(SchedulerRecord::from))
        })
    }

    fn list_schedulers<'py>(
        &self,
        py: Python<'py>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(
            py,
            self.backend.list_schedulers(start, end, ascending),
            |all| {
                Ok(all
                    .into_iter()
                    .map(SchedulerRecord::from)
                    .collect::<Vec<_>>())
            },
        )
    }

    fn count_schedulers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.count_schedulers(), Ok)
    }

    /// Removes the scheduler `key` (and its occurrence, if it has not started); awaits True
    /// if it existed.
    fn remove_scheduler<'py>(
        &self,
        py: Python<'py>,
        key: String,
        now: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.remove_scheduler(key, now), Ok)
    }

    /// Events `(id, timestamp, event, job_id, fields)` with `start <= id <= end`.
    fn read_events<'py>(
        &self,
        py: Python<'py>,
        start: u64,
        end: u64,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.read_events(start, end, limit), |events| {
            Ok(events
                .into_iter()
                .map(|e| {
                    let fields = e
                        .fields()
                        .map(|(k, v)| (*k, v.as_str().to_owned()))
                        .collect();
                    (
                        e.id,
                        e.timestamp,
                        e.event,
                        e.job_id.map(|id| id.to_string()),
                        fields,
                    )
                })
                .collect::<Vec<EventRow>>())
        })
    }

    fn trim_events<'py>(&self, py: Python<'py>, max_len: usize) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.trim_events(max_len), Ok)
    }

    fn last_event_id<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.last_event_id(), Ok)
    }

    /// Releases the backend's file or connections once pending operations are done.
    fn close<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(wired) = &self.wired {
            wired.close(py)?;
        }
        self.resolve(py, self.backend.close(), unit)
    }

    /// Awaits True once an event after `after` exists (False after `timeout` ms).
    #[pyo3(signature = (after, timeout=None))]
    fn wait_events<'py>(
        &self,
        py: Python<'py>,
        after: u64,
        timeout: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.resolve(py, self.backend.wait_events(after, timeout), Ok)
    }
}
