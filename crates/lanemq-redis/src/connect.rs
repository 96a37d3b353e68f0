//! Connecting: a reconnecting multiplexed connection for commands, and the checks made before a
//! queue is used. Errors name the address, never the password.

use lanemq_core::{CoreError, CoreResult};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, ConnectionAddr, IntoConnectionInfo};

/// How long a command or script call may take before it fails as timed out.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the server may evict keys when full (a queue must not lose jobs to eviction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionPolicy {
    /// `noeviction`: writes fail when memory is full, nothing is dropped.
    Safe,
    /// Any other policy, named.
    Evicting(String),
}

#[derive(Clone)]
pub struct Connection {
    pub commands: ConnectionManager,
    pub client: Client,
    pub address: String,
}

/// `url` without its credentials, for messages.
pub fn describe(url: &str) -> String {
    match url.into_connection_info() {
        Ok(info) => match info.addr() {
            ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}"),
            ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{host}:{port}"),
            ConnectionAddr::Unix(path) => format!("unix://{}", path.display()),
            other => format!("{other}"),
        },
        Err(_) => "an unparsable Redis URL".to_owned(),
    }
}

fn connection_error(address: &str, what: &str, error: redis::RedisError) -> CoreError {
    match redis_error(address, error) {
        CoreError::Connection(m) => CoreError::Connection(format!("{what}: {m}")),
        other => other,
    }
}

/// A Redis error as a core error: unreachable servers are `Connection` errors (Python's
/// `ConnectionError`), the rest `Storage`. The message names the address, never the password.
pub fn redis_error(address: &str, error: redis::RedisError) -> CoreError {
    let message = format!("redis at {address}: {error}");
    if error.is_io_error()
        || error.is_connection_refusal()
        || error.is_connection_dropped()
        || error.is_timeout()
    {
        CoreError::Connection(message)
    } else {
        CoreError::Storage(message)
    }
}

/// Connects to `url` and checks the server's eviction policy. With `allow_eviction` false, a
/// server that may evict keys is refused (`InvalidConfig`), since evicted job keys are lost jobs.
pub async fn connect(url: &str, allow_eviction: bool) -> CoreResult<Connection> {
    let address = describe(url);
    let client = Client::open(url).map_err(|e| {
        CoreError::InvalidConfig(format!("invalid Redis URL for {address}: {}", e.kind_str()))
    })?;
    // The first connection fails fast; once up, the manager reconnects by itself. A reply may
    // take long: a script that adds a big flow or bulk, or obliterates a big queue, on a busy
    // server. redis-rs gives up after 500 ms by default, and a caller told "timed out" about a
    // change that then happened may well make it twice; a dead server drops the connection
    // instead, which fails at once.
    let config = ConnectionManagerConfig::new()
        .set_number_of_retries(1)
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    let mut commands = client
        .get_connection_manager_with_config(config)
        .await
        .map_err(|e| connection_error(&address, "cannot connect", e))?;
    let policy: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async(&mut commands)
        .await
        .map_err(|e| connection_error(&address, "cannot read maxmemory-policy", e))?;
    let policy = match policy.get(1).map(String::as_str) {
        None | Some("noeviction") => EvictionPolicy::Safe,
        Some(other) => EvictionPolicy::Evicting(other.to_owned()),
    };
    if let EvictionPolicy::Evicting(name) = &policy {
        if !allow_eviction {
            return Err(CoreError::InvalidConfig(format!(
                "redis at {address} has maxmemory-policy {name}: it may evict job keys; set it \
                 to noeviction, or pass allow_eviction=True to accept the risk"
            )));
        }
    }
    Ok(Connection {
        commands,
        client,
        address,
    })
}

trait KindStr {
    fn kind_str(&self) -> String;
}

impl KindStr for redis::RedisError {
    /// The error's category only: a parse error's detail may quote the URL, password included.
    fn kind_str(&self) -> String {
        format!("{:?}", self.kind())
    }
}
