//! `Server`: the connections to one Redis server, shared by every queue of this process that
//! names it (the same URL, the same options). Nothing connects until a call needs it.
//!
//! - One multiplexed connection carries the commands of every queue: it is safe to share, as
//!   replies are matched to requests in order. It is opened on first use, bounded by the
//!   connect timeout, and opened again on the next call once it is known dead.
//! - Blocking waits (BZPOPMIN, XREAD BLOCK) hold a connection each while they wait (a
//!   blocked connection answers nothing else), taken from a pool of spares the queues share
//!   and put back when the wait ends.
//!
//! Each connection's task is ours (we make the socket and run the redis-rs connection's
//! driver), so we know the moment the server closes it: a connection the server dropped while
//! idle is replaced before a call is sent on it, instead of failing that call (which is what
//! made the first call after a Redis restart fail).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, Instant};

use lanemq_core::{CoreError, CoreResult};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, IntoConnectionInfo};
use tokio::sync::OnceCell;

use super::connect::{describe, is_tls, mask_url, parseable, redis_error};
use super::tls::{self, TlsSettings};

/// How long a command or script call may take before it fails as timed out. A reply may take
/// long: a script that adds a big flow or bulk, or obliterates a big queue, on a busy server;
/// a caller told "timed out" about a change that then happened may well make it twice. A dead
/// server drops the connection instead, which fails at once.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default bound of connecting: TCP (or unix socket) connect, TLS and handshake, and the
/// checks a queue makes before its first call.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often `wait_reachable` asks a server that does not answer.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// The longest single block of a wait (`waits.rs`), so a waiter also notices changes that set
/// no marker. A blocking connection's replies are bounded by this plus the connect timeout
/// (`Server::blocking`): the server owns the bound, the waits block within it.
pub(crate) const MAX_BLOCK: Duration = Duration::from_secs(1);

/// Idle blocking connections kept for later waits (more are closed when their wait ends).
const MAX_SPARES: usize = 8;

/// What, besides the URL, makes a server's connections: queues share them only when equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerOptions {
    pub connect_timeout: Duration,
    /// PEM file of the certificate authorities a `rediss://` server's certificate must chain
    /// to (besides the system's).
    pub tls_ca_file: Option<PathBuf>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            connect_timeout: CONNECT_TIMEOUT,
            tls_ca_file: None,
        }
    }
}

/// How the connections reach the server.
enum Transport {
    Tcp {
        host: String,
        port: u16,
        tls: Option<TlsSettings>,
    },
    Unix(PathBuf),
}

/// A connection and whether its task still runs (false once the server closed it).
#[derive(Clone)]
pub(crate) struct Live {
    pub connection: MultiplexedConnection,
    alive: Arc<AtomicBool>,
    /// The server's id of this connection (`CLIENT ID`), once a wait asked for it.
    pub client_id: Option<i64>,
    /// The `Server::id` of the server it is a connection to (a queue of a cluster that moved
    /// to another master puts a connection back to the one it came from only).
    server: u64,
}

impl Live {
    pub fn alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }
}

/// Marks a connection dead when its task ends (or is dropped with its runtime).
struct Mourner(Arc<AtomicBool>);

impl Drop for Mourner {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

type Attempt = Arc<OnceCell<CoreResult<Live>>>;

enum Slot {
    Empty,
    Up(Live),
    /// A connect in progress: every caller awaits the same one.
    Connecting(Attempt),
}

pub struct Server {
    id: u64,
    /// Holds the password: never shown (messages use `address`).
    info: ConnectionInfo,
    transport: Transport,
    address: String,
    masked_url: String,
    connect_timeout: Duration,
    commands: Mutex<Slot>,
    spares: Mutex<Vec<Live>>,
    /// Whether scripts run as the library's functions (Redis 7+); learnt on first use.
    functions: OnceCell<bool>,
    /// Whether this client may end another connection's blocking wait (`CLIENT UNBLOCK`, which
    /// an ACL can forbid); learnt on first use (`waits.rs`).
    pub(crate) unblock: std::sync::OnceLock<bool>,
    /// Queues open on this server: their last close releases the connections.
    users: AtomicUsize,
    /// A warning for the bindings to log (once): the eviction policy could not be read.
    warning: Mutex<Option<String>>,
    has_warning: AtomicBool,
    warned: AtomicBool,
}

static SERVERS: LazyLock<Mutex<HashMap<String, Weak<Server>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// The server of `url` and `options`: the one this process already has, or a new one. The
    /// URL is parsed here, without I/O; a bad one is refused (`InvalidConfig`, naming it with
    /// its password masked).
    pub fn shared(url: &str, options: &ServerOptions) -> CoreResult<Arc<Self>> {
        let refuse = |why: &str| {
            CoreError::InvalidConfig(format!("invalid Redis URL {}: {why}", mask_url(url)))
        };
        let info = parseable(url)
            .into_connection_info()
            // The category only: a parse error's detail may quote the URL, password included.
            .map_err(|e| refuse(&format!("{:?}", e.kind())))?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP2);
        let info = info.set_redis_settings(settings);
        let transport = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Transport::Tcp {
                host: host.clone(),
                port: *port,
                tls: if is_tls(url) {
                    Some(
                        tls::settings(url, host, options.tls_ca_file.as_deref())
                            .map_err(|e| refuse(&e))?,
                    )
                } else {
                    None
                },
            },
            ConnectionAddr::Unix(path) => Transport::Unix(path.clone()),
            _ => return Err(refuse("unsupported address")),
        };
        if !is_tls(url) && options.tls_ca_file.is_some() {
            return Err(CoreError::InvalidConfig(format!(
                "invalid tls_ca_file for {}: it needs a rediss:// URL",
                mask_url(url)
            )));
        }
        let settings = info.redis_settings();
        let key = format!(
            "{:?}|{}|{:?}|{:?}|{}|{options:?}",
            info.addr(),
            settings.db(),
            settings.username(),
            settings.password(),
            is_tls(url),
        );
        let mut servers = lock(&SERVERS);
        servers.retain(|_, server| server.strong_count() > 0);
        if let Some(server) = servers.get(&key).and_then(Weak::upgrade) {
            return Ok(server);
        }
        let server = Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            address: describe(url),
            masked_url: mask_url(url),
            info,
            transport,
            connect_timeout: options.connect_timeout,
            commands: Mutex::new(Slot::Empty),
            spares: Mutex::new(Vec::new()),
            functions: OnceCell::new(),
            unblock: std::sync::OnceLock::new(),
            users: AtomicUsize::new(0),
            warning: Mutex::new(None),
            has_warning: AtomicBool::new(false),
            warned: AtomicBool::new(false),
        });
        servers.insert(key, Arc::downgrade(&server));
        Ok(server)
    }

    /// Unique in this process while the server lives (queues with equal ids share connections).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The server's address, for messages (`redis://host:port`).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The URL with its password masked.
    pub fn masked_url(&self) -> &str {
        &self.masked_url
    }

    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    pub(crate) fn info(&self) -> &ConnectionInfo {
        &self.info
    }

    /// Whether a wire (a plain socket an event loop drives) can reach the server: not over TLS.
    pub fn wire_capable(&self) -> bool {
        !matches!(self.transport, Transport::Tcp { tls: Some(_), .. })
    }

    /// `error` as a core error. A reply that timed out means a connection that may no
    /// longer answer (a partition, a stalled proxy: nothing closes it), so the command
    /// connection is replaced at the next call rather than kept for every later call to time
    /// out on too; calls in flight on it still get their replies.
    pub(crate) fn error(&self, error: redis::RedisError) -> CoreError {
        if error.is_timeout() {
            let mut slot = lock(&self.commands);
            if matches!(*slot, Slot::Up(_)) {
                *slot = Slot::Empty;
            }
        }
        redis_error(&self.address, error)
    }

    fn timed_out(&self, what: &str) -> CoreError {
        CoreError::Connection(format!(
            "redis at {}: {what}: no answer within {:.1}s (connect_timeout)",
            self.address,
            self.connect_timeout.as_secs_f64()
        ))
    }

    /// Runs `future` bounded by the connect timeout.
    pub(crate) async fn bounded<T>(
        &self,
        what: &str,
        future: impl std::future::Future<Output = CoreResult<T>>,
    ) -> CoreResult<T> {
        tokio::time::timeout(self.connect_timeout, future)
            .await
            .unwrap_or_else(|_| Err(self.timed_out(what)))
    }

    /// Opens a connection: socket, TLS, handshake (AUTH, SELECT), all within the connect
    /// timeout. `response_timeout` bounds each call on it later.
    async fn open(&self, response_timeout: Option<Duration>) -> CoreResult<Live> {
        let failed = |what: &str, e: std::io::Error| {
            CoreError::Connection(format!("redis at {}: {what}: {e}", self.address))
        };
        let config = AsyncConnectionConfig::new().set_response_timeout(response_timeout);
        let opening = async {
            match &self.transport {
                Transport::Tcp { host, port, tls } => {
                    let stream = tokio::net::TcpStream::connect((host.as_str(), *port))
                        .await
                        .map_err(|e| failed("cannot connect", e))?;
                    stream
                        .set_nodelay(true)
                        .map_err(|e| failed("cannot set TCP_NODELAY", e))?;
                    match tls {
                        Some(tls) => {
                            let stream = tls
                                .connect(stream)
                                .await
                                .map_err(|e| failed("TLS handshake failed", e))?;
                            self.start(stream, config).await
                        }
                        None => self.start(stream, config).await,
                    }
                }
                Transport::Unix(path) => {
                    let stream = tokio::net::UnixStream::connect(path)
                        .await
                        .map_err(|e| failed("cannot connect", e))?;
                    self.start(stream, config).await
                }
            }
        };
        self.bounded("cannot connect", opening).await
    }

    /// Makes the handshake (AUTH, SELECT) on `stream` and runs the connection's task; the
    /// connection is marked dead the moment that task ends (the server closed it).
    async fn start<S>(&self, stream: S, config: AsyncConnectionConfig) -> CoreResult<Live>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let settings = self.info.redis_settings();
        let (connection, driver) = MultiplexedConnection::new_with_config(settings, stream, config)
            .await
            .map_err(|e| self.error(e))?;
        let alive = Arc::new(AtomicBool::new(true));
        let mourner = Mourner(Arc::clone(&alive));
        tokio::spawn(async move {
            let _mourner = mourner;
            driver.await;
        });
        Ok(Live {
            connection,
            alive,
            client_id: None,
            server: self.id,
        })
    }

    /// The command connection, opened first if there is none alive (callers at the same time
    /// share one attempt; a failed attempt is not remembered, the next call tries again).
    pub(crate) async fn commands(&self) -> CoreResult<MultiplexedConnection> {
        let attempt = {
            let mut slot = lock(&self.commands);
            match &*slot {
                Slot::Up(live) if live.alive() => return Ok(live.connection.clone()),
                Slot::Connecting(attempt) => Arc::clone(attempt),
                _ => {
                    let attempt: Attempt = Arc::new(OnceCell::new());
                    *slot = Slot::Connecting(Arc::clone(&attempt));
                    attempt
                }
            }
        };
        let outcome = attempt
            .get_or_init(|| self.open(Some(RESPONSE_TIMEOUT)))
            .await
            .clone();
        let mut slot = lock(&self.commands);
        if matches!(&*slot, Slot::Connecting(a) if Arc::ptr_eq(a, &attempt)) {
            *slot = match &outcome {
                Ok(live) => Slot::Up(live.clone()),
                Err(_) => Slot::Empty,
            };
        }
        outcome.map(|live| live.connection)
    }

    /// A connection for a blocking wait: a spare, or a new one. A wait blocks for at most
    /// `MAX_BLOCK`; a reply later than that by the connect timeout means a connection that no
    /// longer answers (a partition, a stalled proxy: nothing closes it), so the wait fails as a
    /// connection error and the connection goes, rather than waiting forever.
    pub(crate) async fn blocking(&self) -> CoreResult<Live> {
        loop {
            let spare = lock(&self.spares).pop();
            match spare {
                Some(live) if live.alive() => return Ok(live),
                Some(_) => {}
                None => {
                    let bound = MAX_BLOCK + self.connect_timeout;
                    return self.open(Some(bound)).await;
                }
            }
        }
    }

    /// Puts back a blocking connection whose last command completed.
    pub(crate) fn keep_blocking(&self, live: Live) {
        if !live.alive() || live.server != self.id || self.users.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut spares = lock(&self.spares);
        if spares.len() < MAX_SPARES {
            spares.push(live);
        }
    }

    /// Whether scripts run as functions, loading the library on the first call (`load`).
    pub(crate) async fn functions<F, Fut>(&self, load: F) -> CoreResult<bool>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = CoreResult<bool>>,
    {
        self.functions.get_or_try_init(load).await.copied()
    }

    /// What `functions` learnt, if it has run (calls built without I/O need it).
    pub(crate) fn known_functions(&self) -> Option<bool> {
        self.functions.get().copied()
    }

    /// Waits until the server answers a PING (asking every 100 ms), for at most `timeout`;
    /// whether it did.
    pub async fn wait_reachable(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let started = Instant::now();
            let left = deadline.saturating_duration_since(started);
            let ping = async {
                let mut connection = self.commands().await?;
                redis::cmd("PING")
                    .query_async::<String>(&mut connection)
                    .await
                    .map_err(|e| self.error(e))
            };
            if let Ok(Ok(_)) = tokio::time::timeout(left, ping).await {
                return true;
            }
            let next = started + PROBE_EVERY;
            if next >= deadline {
                return false;
            }
            tokio::time::sleep_until(next.into()).await;
        }
    }

    /// A queue starts using the server.
    pub(crate) fn acquire(&self) {
        self.users.fetch_add(1, Ordering::AcqRel);
    }

    /// A queue is done with the server; the last one closes its connections (a later call
    /// opens new ones).
    pub(crate) fn release(&self) {
        if self.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            *lock(&self.commands) = Slot::Empty;
            lock(&self.spares).clear();
        }
    }

    /// Records a warning for the bindings to log, once per server.
    pub(crate) fn warn(&self, message: String) {
        if !self.warned.swap(true, Ordering::AcqRel) {
            *lock(&self.warning) = Some(message);
            self.has_warning.store(true, Ordering::Release);
        }
    }

    /// The warning to log, if one is waiting (taken: it is logged once).
    pub fn take_warning(&self) -> Option<String> {
        if !self.has_warning.load(Ordering::Acquire) {
            return None;
        }
        self.has_warning.store(false, Ordering::Release);
        lock(&self.warning).take()
    }
}
