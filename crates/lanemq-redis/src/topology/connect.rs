//! What a URL says and what errors mean: the address (and the URL with its password masked)
//! for messages, the host lists of cluster and sentinel URLs, the classification of Redis errors, and the eviction-policy check made before
//! a queue is used. Errors name the address, never the password.

use lanemq_core::CoreError;
use redis::aio::MultiplexedConnection;
use redis::{ConnectionAddr, IntoConnectionInfo};

/// Whether the server may evict keys when full (a queue must not lose jobs to eviction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionPolicy {
    /// `noeviction`: writes fail when memory is full, nothing is dropped.
    Safe,
    /// Any other policy, named.
    Evicting(String),
}

impl EvictionPolicy {
    fn named(name: &str) -> Self {
        match name.trim() {
            "" | "noeviction" => Self::Safe,
            other => Self::Evicting(other.to_owned()),
        }
    }
}

/// `url` without its credentials, for messages.
pub fn describe(url: &str) -> String {
    match parseable(url).into_connection_info() {
        Ok(info) => match info.addr() {
            ConnectionAddr::Tcp(host, port) if is_tls(url) => format!("rediss://{host}:{port}"),
            ConnectionAddr::Tcp(host, port) => format!("redis://{host}:{port}"),
            ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{host}:{port}"),
            ConnectionAddr::Unix(path) => format!("unix://{}", path.display()),
            other => format!("{other}"),
        },
        Err(_) => "an unparsable Redis URL".to_owned(),
    }
}

/// Whether `url` asks for TLS (`rediss://`).
pub fn is_tls(url: &str) -> bool {
    url.get(..9)
        .is_some_and(|s| s.eq_ignore_ascii_case("rediss://"))
}

/// `url` as redis-rs parses it: a `rediss://` URL as `redis://` (this crate makes its TLS
/// streams itself, so redis-rs needs no TLS feature to read the address).
pub(crate) fn parseable(url: &str) -> std::borrow::Cow<'_, str> {
    if is_tls(url) {
        format!("redis://{}", &url[9..]).into()
    } else {
        url.into()
    }
}

/// The `host[:port]` entries of a URL's comma-separated host list, each with `default_port`
/// where it names none (an IPv6 literal's colons, inside brackets, are no port).
pub(crate) fn host_list(hosts: &str, default_port: u16) -> Vec<String> {
    hosts
        .split(',')
        .filter(|host| !host.is_empty())
        .map(|host| {
            if host.rsplit_once(':').is_some_and(|(_, p)| !p.contains(']')) {
                host.to_owned()
            } else {
                format!("{host}:{default_port}")
            }
        })
        .collect()
}

/// `url` as given, with its password (the user info's, or a `pass`/`password` query
/// parameter's) replaced by `***`: for messages and reprs. It works on text that does not
/// parse, too (a bad URL is named in its error).
pub fn mask_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    // The user info ends at the last '@' before the query (a password may hold '/' or '@').
    let query_at = rest.find(['?', '#']).unwrap_or(rest.len());
    let (before_query, tail) = rest.split_at(query_at);
    let authority = match before_query.rfind('@') {
        Some(at) => {
            let (user_info, host) = before_query.split_at(at);
            match user_info.split_once(':') {
                Some((user, _)) => format!("{user}:***{host}"),
                None => format!("***{host}"),
            }
        }
        None => before_query.to_owned(),
    };
    let (path_query, fragment) = match tail.find('#') {
        Some(at) => tail.split_at(at),
        None => (tail, ""),
    };
    let path_query = match path_query.split_once('?') {
        Some((path, query)) => {
            let masked: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    // (`sentinel_password` of a `redis+sentinel://` URL too)
                    Some((key, _)) if is_secret_key(key) => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", masked.join("&"))
        }
        None => path_query.to_owned(),
    };
    format!("{scheme}{authority}{path_query}{fragment}")
}

/// Whether a query parameter named `key` holds a password.
fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "pass" || key.ends_with("password") || key.ends_with("_pass")
}

/// Whether `error` says the credentials were refused (or are missing).
fn is_auth_failure(error: &redis::RedisError) -> bool {
    error.kind() == redis::ErrorKind::AuthenticationFailed
        || matches!(error.code(), Some("NOAUTH" | "WRONGPASS"))
}

/// Whether `error` means the server cannot serve now (unreachable, dropped, timed out, still
/// loading its data, refusing the credentials): a connection error, not a storage one.
pub(crate) fn is_connection_class(error: &redis::RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_refusal()
        || error.is_connection_dropped()
        || error.is_timeout()
        || error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading)
        || is_auth_failure(error)
}

/// A Redis error as a core error: refused credentials are `Authentication` errors; a server
/// that cannot be reached, dropped the connection, timed out or is still loading its data
/// (`LOADING`) or answers in something that is not Redis protocol (another service's port) is
/// a `Connection` error (Python's `ConnectionError`); the rest are `Storage`.
/// The message names the address, never the password.
pub fn redis_error(address: &str, error: redis::RedisError) -> CoreError {
    let message = format!("redis at {address}: {error}");
    if is_auth_failure(&error) {
        CoreError::Authentication(format!(
            "{message} (the server refused the credentials of the URL)"
        ))
    } else if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading) {
        CoreError::Connection(format!("{message} (the server is still loading its data)"))
    } else if error.kind() == redis::ErrorKind::Parse {
        // (the parser's own words are lines of the bytes it choked on)
        CoreError::Connection(format!(
            "redis at {address}: the answer is not Redis protocol: is the port a Redis server's? \
             (another service, an HTTP server say, answers this way)"
        ))
    } else if is_connection_class(&error) {
        CoreError::Connection(message)
    } else {
        CoreError::Storage(message)
    }
}

/// The server's eviction policy: from `INFO memory`, which managed services allow, else from
/// `CONFIG GET`; `Err(why)` (a reason for a warning) when the user may run neither.
pub(crate) async fn read_policy(
    connection: &mut MultiplexedConnection,
    address: &str,
) -> Result<Result<EvictionPolicy, String>, CoreError> {
    let info = redis::cmd("INFO")
        .arg("memory")
        .query_async::<String>(connection)
        .await;
    let info_refused = match info {
        Ok(text) => {
            let field = text
                .lines()
                .find_map(|line| line.strip_prefix("maxmemory_policy:"));
            match field {
                Some(name) => return Ok(Ok(EvictionPolicy::named(name))),
                None => "INFO memory has no maxmemory_policy".to_owned(),
            }
        }
        Err(e) if is_connection_class(&e) => return Err(redis_error(address, e)),
        Err(e) => e.to_string(),
    };
    let config = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory-policy")
        .query_async::<Vec<String>>(connection)
        .await;
    match config {
        Ok(pair) => Ok(Ok(EvictionPolicy::named(
            pair.get(1).map_or("", String::as_str),
        ))),
        Err(e) if is_connection_class(&e) => Err(redis_error(address, e)),
        Err(e) => Ok(Err(format!("{info_refused}; {e}"))),
    }
}

/// Refuses a server that may evict keys unless `allow_eviction`: evicted job keys are lost jobs.
pub(crate) fn check_policy(
    policy: &EvictionPolicy,
    address: &str,
    allow_eviction: bool,
) -> Result<(), CoreError> {
    match policy {
        EvictionPolicy::Evicting(name) if !allow_eviction => {
            Err(CoreError::InvalidConfig(format!(
                "redis at {address} has maxmemory-policy {name}: it may evict job keys; set it to \
             noeviction, or pass allow_eviction=True to accept the risk"
            )))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_password_wherever_the_url_holds_one() {
        assert_eq!(
            mask_url("redis://user:s3cret@127.0.0.1:6379/0"),
            "redis://user:***@127.0.0.1:6379/0"
        );
        assert_eq!(
            mask_url("redis://:s3cret@host/2?protocol=resp2"),
            "redis://:***@host/2?protocol=resp2"
        );
        assert_eq!(
            mask_url("unix:///tmp/r.sock?db=3&pass=s3cret"),
            "unix:///tmp/r.sock?db=3&pass=***"
        );
        assert_eq!(
            mask_url("redis://user:s3cret@127.0.0.1:notaport/0"),
            "redis://user:***@127.0.0.1:notaport/0"
        );
        assert_eq!(mask_url("redis://s3cret@host"), "redis://***@host");
        assert_eq!(mask_url("redis://u:a/b@c@h:1/0"), "redis://u:***@h:1/0");
        assert_eq!(mask_url("redis://host:1/0"), "redis://host:1/0");
        assert_eq!(
            mask_url("redis+sentinel://:s3cret@h:1,h:2/m?sentinel_password=p4ss&x=1"),
            "redis+sentinel://:***@h:1,h:2/m?sentinel_password=***&x=1"
        );
        assert_eq!(describe("rediss://u:p@h:7/0"), "rediss://h:7");
    }
}
