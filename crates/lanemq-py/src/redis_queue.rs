//! `RedisQueueCore`: the Python class of a Redis (or Valkey) queue, a `JobQueueCore` that also
//! knows its server. It holds what only a Redis queue has: where it lives (a server, or a
//! cluster's slot), its settings (which its siblings share), its share of the server's wire
//! for the hot calls, and the warnings a server leaves; and the calls only a Redis queue makes
//! (connect, wait until reachable, siblings, the server's id and masked URL). The calls every
//! backend makes stay on `JobQueueCore`, which reaches this state only through the
//! `ServerHooks` it is given (`RedisQueue`): the wire for a hot call, the warnings after a
//! call, the wire's release on close.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use lanemq_core::jobs::{check_queue_name, BoxFuture};
use lanemq_redis::{
    is_cluster_url, is_sentinel_url, Cluster, RedisBackend, RedisJobBackend, Server, ServerOptions,
    WireCalls,
};
use pyo3::exceptions::PyDeprecationWarning;
use pyo3::prelude::*;
use pyo3::PyClassInitializer;

use crate::bridge::count;
use crate::core_args::{CoreArg, Secs, Text};
use crate::errors::to_py;
use crate::job_queue::{unit, JobQueueCore, ServerHooks};
use crate::wire_link::{WireLink, Wired};

/// A Redis queue's settings: its siblings (`RedisQueueCore.sibling`) share them.
#[derive(Clone)]
struct RedisSettings {
    prefix: String,
    max_payload_bytes: usize,
    max_events: usize,
    allow_eviction: bool,
    /// Replicas that must have each write that adds jobs, and the longest wait for them (ms).
    replica_ack: (usize, u64),
}

/// Where a Redis queue lives: one server, or a cluster (its slot's master, found on first use).
enum Place {
    Server(Arc<Server>),
    Cluster(Arc<Cluster>),
}

/// A Redis queue's own state, shared by its `RedisQueueCore` and (as its `ServerHooks`) its
/// `JobQueueCore`.
struct RedisQueue {
    backend: RedisJobBackend,
    settings: RedisSettings,
    /// The queue's share of its server's wire for the hot calls (`wire_link`), if it has one.
    /// A queue of a cluster takes its master's once routed, and another's if it moves
    /// (`wired_for`).
    wired: Mutex<Option<Arc<Wired>>>,
}

impl RedisQueue {
    /// The queue `queue` at `place` (sharing its connections), with `settings`. A queue of a
    /// cluster takes its wire at its first hot call once routed (`wired_for`): a wire is
    /// shared by the queues of one server, which a cluster queue knows only then.
    fn on(place: Place, settings: RedisSettings, queue: &str) -> PyResult<Self> {
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
            backend,
            settings,
            wired: Mutex::new(wired),
        })
    }

    fn place(&self) -> Place {
        match self.backend.cluster() {
            Some(cluster) => Place::Cluster(Arc::clone(cluster)),
            None => Place::Server(self.backend.server()),
        }
    }

    /// The share of the wire of this queue's server, if it can have one (not over TLS): on a
    /// cluster, of its slot's master as last routed. A queue whose slot moved (or failed over)
    /// closes its share of the old master's wire and takes the new one's; until a reply says
    /// it moved, its calls on the old wire get MOVED and go again the ordinary way, which
    /// routes them.
    fn wired_for(&self, py: Python<'_>) -> PyResult<Option<Arc<Wired>>> {
        let server = self.backend.server();
        if !server.wire_capable() {
            return Ok(None);
        }
        let (wired, old) = {
            let mut slot = self.wired.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(wired) = slot.as_ref().filter(|w| w.server_id() == server.id()) {
                return Ok(Some(Arc::clone(wired)));
            }
            let calls: Arc<dyn WireCalls> = Arc::new(self.backend.clone());
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
}

impl ServerHooks for RedisQueue {
    /// The wire link of the running loop, if this queue has a wire and it is there for it
    /// (and this queue made its checks of the server: until then calls go the ordinary way,
    /// which makes them).
    fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<(Arc<Wired>, Bound<'py, WireLink>)>> {
        // A queue that waits for replicas makes its adds the ordinary way (`with_replica_ack`).
        if !self.backend.is_ready() || self.settings.replica_ack.0 > 0 {
            return Ok(None);
        }
        let Some(wired) = self.wired_for(py)? else {
            return Ok(None);
        };
        Ok(wired.link(py)?.map(|link| (wired, link)))
    }

    /// A warning of the first connect (the eviction policy could not be read) is logged, and
    /// one of a queue name Redis queues could have before the rule is raised as a
    /// `DeprecationWarning`, when a call it delayed returns.
    fn after_call(&self) -> PyResult<()> {
        if let Some(warning) = self.backend.server().take_warning() {
            log_warning(&warning);
        }
        if let Some(warning) = self.backend.take_name_warning() {
            Python::attach(|py| {
                let category = py.get_type::<PyDeprecationWarning>();
                PyErr::warn(py, &category, &std::ffi::CString::new(warning)?, 1)
            })?;
        }
        Ok(())
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let wired = self.wired.lock().unwrap_or_else(|e| e.into_inner()).take();
        match wired {
            Some(wired) => wired.close(py),
            None => Ok(()),
        }
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

#[pyclass(frozen, extends = JobQueueCore, module = "lanemq._core")]
pub struct RedisQueueCore {
    queue: Arc<RedisQueue>,
}

impl RedisQueueCore {
    /// The Python object of `queue`: its `JobQueueCore` makes the calls every backend makes,
    /// with `queue` as its hooks.
    fn initializer(queue: RedisQueue) -> PyClassInitializer<Self> {
        let queue = Arc::new(queue);
        let hooks: Arc<dyn ServerHooks> = Arc::clone(&queue) as Arc<dyn ServerHooks>;
        let core = JobQueueCore::on_server(
            Arc::new(queue.backend.clone()),
            hooks,
            queue.settings.max_payload_bytes,
        );
        PyClassInitializer::from(core).add_subclass(Self { queue })
    }
}

#[pymethods]
impl RedisQueueCore {
    /// A Redis (or Valkey) queue, without I/O: it connects on its first call (or `connect`),
    /// within `connect_timeout` ms. Queues of one URL and options share their connections. A
    /// URL that does not parse raises `ConfigError` (its password masked).
    #[new]
    #[pyo3(signature = (url, queue, prefix="lanemq", max_payload_bytes=16_777_216, max_events=10_000,
        allow_eviction=false, connect_timeout=5_000, tls_ca_file=None, min_replicas_ack=0,
        replica_ack_timeout=1_000))]
    #[allow(clippy::too_many_arguments)]
    fn new(
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
    ) -> PyResult<PyClassInitializer<Self>> {
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
        let queue = RedisQueue::on(place, settings, &redis_queue_name(queue)?)?;
        Ok(Self::initializer(queue))
    }

    /// The queue `queue` of this queue's server, prefix and settings (sharing its
    /// connections).
    fn sibling(&self, py: Python<'_>, queue: Text) -> PyResult<Py<Self>> {
        let name = &redis_queue_name(queue)?;
        let sibling = RedisQueue::on(self.queue.place(), self.queue.settings.clone(), name)?;
        Py::new(py, Self::initializer(sibling))
    }

    /// Connects (unless the server's connections are up; the wire too) and makes this queue's
    /// checks of the server; raises `BackendConnectionError` (`BackendAuthenticationError` for refused
    /// credentials) or `ConfigError` (an evicting server).
    fn connect<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let queue = &slf.get().queue;
        let backend = queue.backend.clone();
        let wire = queue.current_wired().and_then(|wired| wired.prepare(py));
        let future: BoxFuture<()> = Box::pin(async move {
            backend.backend_ready().await?;
            // The wire too, so the hot calls after this take it.
            if let Some(wire) = wire {
                wire.await;
            }
            Ok(())
        });
        slf.as_super().get().resolve(py, future, unit)
    }

    /// Awaits True once the server answers (asked every 100 ms), False after `timeout` seconds.
    fn wait_reachable<'py>(slf: &Bound<'py, Self>, timeout: Secs) -> PyResult<Bound<'py, PyAny>> {
        let timeout = timeout.core("timeout")?;
        let backend = slf.get().queue.backend.clone();
        let future: BoxFuture<bool> = Box::pin(async move {
            Ok(backend
                .backend_wait_reachable(std::time::Duration::from_millis(timeout))
                .await)
        });
        slf.as_super().get().resolve(slf.py(), future, Ok)
    }

    /// Equal for queues that share connections (one server, one set of options).
    fn server_id(&self) -> u64 {
        match self.queue.place() {
            Place::Cluster(cluster) => cluster.id(),
            Place::Server(server) => server.id(),
        }
    }

    /// The server's URL with its password masked.
    fn masked_url(&self) -> String {
        match self.queue.place() {
            Place::Cluster(cluster) => cluster.masked_url().to_owned(),
            Place::Server(server) => server.masked_url().to_owned(),
        }
    }
}
