//! Redis Sentinel: a `redis+sentinel://` URL names sentinels and a master name, and a queue's
//! calls go to the master the sentinels name, as to a plain server (its own `Server`). The
//! queue follows its master the way a queue of a cluster follows its slot (`route.rs`): the
//! sentinel topology is a `Cluster` whose map has one range, all slots, served by the master
//! the sentinels name (`Sentinels::master`, which `Cluster` asks: this file uses no `Cluster`); a lost connection, a connect failure or a READONLY reply (the old
//! master, now a replica) marks the route stale and the next call asks the sentinels again.
//!
//! `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>][?query]`:
//! the user info is the master's; `sentinel_username=` and `sentinel_password=` in the query
//! are the sentinels' own (none by default); the rest of the query goes to the master. A
//! sentinel without a port is at 26379. `rediss+sentinel://` speaks TLS to both.

use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use super::connect::host_list;
use super::server::{Server, ServerOptions};

/// The sentinels' default port.
const SENTINEL_PORT: u16 = 26379;

/// Whether `url` names sentinels (`redis+sentinel://`, `rediss+sentinel://`, and the valkey
/// spellings).
pub fn is_sentinel_url(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        matches!(
            scheme.to_ascii_lowercase().as_str(),
            "redis+sentinel" | "rediss+sentinel" | "valkey+sentinel" | "valkeys+sentinel"
        )
    })
}

/// What a sentinel URL says, parsed without I/O.
#[derive(Debug)]
pub(crate) struct Sentinels {
    /// The master name the sentinels monitor.
    pub name: String,
    /// `host:port` of each sentinel, asked in this order (the last that answered first).
    pub addresses: Vec<String>,
    /// `redis://` or `rediss://`, with the sentinels' user info and `@` (if any).
    sentinel_head: String,
    /// The master's: `redis://` or `rediss://`, then its user info with its `@`.
    pub master_head: String,
    /// The master's `/<db>` and `?query` (without the sentinels' credentials).
    pub master_tail: String,
    /// The sentinel that answered last (asked first next time).
    last: std::sync::atomic::AtomicUsize,
}

impl Sentinels {
    /// Parses `url` (see the module's doc); `masked_url` names it in errors.
    pub fn parse(url: &str, masked_url: &str) -> CoreResult<Self> {
        let refuse = |why: &str| {
            CoreError::InvalidConfig(format!("invalid Redis Sentinel URL {masked_url}: {why}"))
        };
        let (scheme, rest) = url
            .split_once("://")
            .filter(|_| is_sentinel_url(url))
            .ok_or_else(|| refuse("expected redis+sentinel://host:port,host:port/master"))?;
        let scheme = scheme.to_ascii_lowercase();
        let plain = if scheme.starts_with("rediss") || scheme.starts_with("valkeys") {
            "rediss://"
        } else {
            "redis://"
        };
        let query_at = rest.find('?').unwrap_or(rest.len());
        let (before_query, query) = rest.split_at(query_at);
        let (user_info, hosts_path) = match before_query.rfind('@') {
            Some(at) => before_query.split_at(at + 1),
            None => ("", before_query),
        };
        let (hosts, path) = hosts_path.split_once('/').unwrap_or((hosts_path, ""));
        let (name, db) = path.split_once('/').unwrap_or((path, ""));
        if name.is_empty() {
            return Err(refuse(
                "no master name (redis+sentinel://host:port/<master name>)",
            ));
        }
        let db = db.trim_end_matches('/');
        if !db.is_empty() && !db.bytes().all(|b| b.is_ascii_digit()) {
            return Err(refuse(
                "the database number (after the master name) is not a number",
            ));
        }
        let addresses = host_list(hosts, SENTINEL_PORT);
        if addresses.is_empty() {
            return Err(refuse("no sentinel (host:port)"));
        }
        let (mut sentinel_user, mut sentinel_password) = (String::new(), None);
        let mut master_query = Vec::new();
        for pair in query
            .trim_start_matches('?')
            .split('&')
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=') {
                Some((key, value)) if key.eq_ignore_ascii_case("sentinel_username") => {
                    sentinel_user = value.to_owned();
                }
                Some((key, value)) if key.eq_ignore_ascii_case("sentinel_password") => {
                    sentinel_password = Some(value.to_owned());
                }
                _ => master_query.push(pair),
            }
        }
        let sentinel_info = match (sentinel_user.as_str(), &sentinel_password) {
            ("", None) => String::new(),
            (user, None) => format!("{user}@"),
            (user, Some(password)) => format!("{user}:{password}@"),
        };
        let mut master_tail = format!("/{}", if db.is_empty() { "0" } else { db });
        if !master_query.is_empty() {
            master_tail = format!("{master_tail}?{}", master_query.join("&"));
        }
        Ok(Self {
            name: name.to_owned(),
            addresses,
            sentinel_head: format!("{plain}{sentinel_info}"),
            master_head: format!("{plain}{user_info}"),
            master_tail,
            last: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The server of sentinel `address`, with the sentinels' credentials.
    fn sentinel_at(
        &self,
        address: &str,
        options: &ServerOptions,
    ) -> CoreResult<std::sync::Arc<Server>> {
        Server::shared(&format!("{}{address}", self.sentinel_head), options)
    }

    /// Every sentinel must make a server (a bad port, a bad TLS file): refused before any I/O.
    pub fn check(&self, options: &ServerOptions) -> CoreResult<()> {
        for address in &self.addresses {
            self.sentinel_at(address, options)?;
        }
        Ok(())
    }

    /// The server of the master at `address`, with the master's credentials, database and
    /// query (as the `Cluster` of these sentinels makes it: the same `Server`, shared).
    fn master_at(
        &self,
        address: &str,
        options: &ServerOptions,
    ) -> CoreResult<std::sync::Arc<Server>> {
        Server::shared(
            &format!("{}{address}{}", self.master_head, self.master_tail),
            options,
        )
    }

    /// The address (`host:port`) of the master: the first sentinel (the one that answered
    /// last, then the others in turn) that names one which says it is a master (ROLE): a
    /// sentinel that has not seen a failover yet may name the old master, now a replica.
    /// `masked_url` names the sentinels in the error.
    pub async fn master(&self, masked_url: &str, options: &ServerOptions) -> CoreResult<String> {
        use std::sync::atomic::Ordering;
        let count = self.addresses.len();
        let first = self.last.load(Ordering::Relaxed) % count;
        let mut problems = Vec::new();
        for turn in 0..count {
            let index = (first + turn) % count;
            let address = &self.addresses[index];
            let named = match self.ask(address, options).await {
                Ok(Some(master)) => master,
                Ok(None) => {
                    problems.push(format!("{address} knows no master {:?}", self.name));
                    continue;
                }
                Err(e) => {
                    problems.push(e.to_string());
                    continue;
                }
            };
            match is_master(&*self.master_at(&named, options)?).await {
                Ok(true) => {
                    self.last.store(index, Ordering::Relaxed);
                    return Ok(named);
                }
                Ok(false) => problems.push(format!(
                    "{address} names {named}, which is not a master (yet)"
                )),
                Err(e) => problems.push(format!("{address} names {named}: {e}")),
            }
        }
        Err(CoreError::Connection(format!(
            "redis sentinel {}: no sentinel named a reachable master {:?}: {}",
            masked_url,
            self.name,
            problems.join("; ")
        )))
    }

    /// `SENTINEL get-master-addr-by-name` of sentinel `address`: the master's `host:port`,
    /// or none when it does not monitor that name.
    async fn ask(&self, address: &str, options: &ServerOptions) -> CoreResult<Option<String>> {
        let sentinel = self.sentinel_at(address, options)?;
        let reply: Option<(String, u16)> = sentinel
            .bounded("cannot ask the sentinel", async {
                let mut connection = sentinel.commands().await?;
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&self.name)
                    .query_async(&mut connection)
                    .await
                    .map_err(|e| sentinel.error(e))
            })
            .await?;
        Ok(reply.map(|(host, port)| {
            if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            }
        }))
    }
}

/// Whether `server` says it is a master (`ROLE`'s first element).
async fn is_master(server: &Server) -> CoreResult<bool> {
    let role: Value = server
        .bounded("cannot connect", async {
            let mut connection = server.commands().await?;
            redis::cmd("ROLE")
                .query_async(&mut connection)
                .await
                .map_err(|e| server.error(e))
        })
        .await?;
    Ok(match role {
        Value::Array(fields) => matches!(
            fields.first(),
            Some(Value::BulkString(kind)) if kind == b"master"
        ),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_urls_name_sentinels_master_and_database() {
        let url = "redis+sentinel://u:s3cret@h1:26380,h2/mymaster/2?sentinel_password=p4ss&x=1";
        let parsed = Sentinels::parse(url, "masked").unwrap();
        assert_eq!(parsed.addresses, ["h1:26380", "h2:26379"]);
        assert_eq!(parsed.name, "mymaster");
        assert_eq!(parsed.master_head, "redis://u:s3cret@");
        assert_eq!(parsed.master_tail, "/2?x=1");
        assert_eq!(parsed.sentinel_head, "redis://:p4ss@");
        let plain = Sentinels::parse("rediss+sentinel://h/m", "masked").unwrap();
        assert_eq!(
            (plain.master_head.as_str(), plain.master_tail.as_str()),
            ("rediss://", "/0")
        );
        for bad in [
            "redis+sentinel://h1:26379",
            "redis+sentinel://h1:26379/",
            "redis+sentinel:///m",
            "redis+sentinel://h/m/x",
        ] {
            assert!(Sentinels::parse(bad, bad).is_err(), "{bad}");
        }
    }
}
