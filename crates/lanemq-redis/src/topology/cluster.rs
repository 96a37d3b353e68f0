//! Redis Cluster, routed per queue. Every key of a queue carries the queue's hash tag, so a
//! queue lives in one slot, and so on one master: a queue's calls (scripts, reads, waits) all
//! go to that master's `Server`, as they would to a single server. `Cluster` knows the seed
//! nodes of a `redis+cluster://` URL and the slot map it last read (CLUSTER SLOTS); a queue
//! asks it for its slot's master, and asks again when a reply says the slot moved (MOVED), the
//! cluster is changing (TRYAGAIN, CLUSTERDOWN) or its master's connection was lost.
//!
//! redis-rs's cluster client routes each command by its first key; a blocking wait with the
//! claim pipelined behind it, a wire an event loop drives and a function library loaded per
//! server fit a whole queue on one connection of one node better, so routing is done here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use super::connect::{host_list, mask_url};
use super::sentinel::{is_sentinel_url, Sentinels};
use super::server::{Server, ServerOptions};

/// The number of hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// The slot of `key`, as Redis computes it: CRC16 (XMODEM) of the key's hash tag (the text
/// between its first `{` and the next `}`, if not empty), else of the whole key.
pub fn slot_of(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = bytes.iter().position(|&b| b == b'{').and_then(|open| {
        let close = bytes[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &bytes[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(bytes)) % SLOTS
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Whether `url` names a cluster (`redis+cluster://`, `rediss+cluster://`, and the valkey
/// spellings).
pub fn is_cluster_url(url: &str) -> bool {
    url.split_once("://").is_some_and(|(scheme, _)| {
        let scheme = scheme.to_ascii_lowercase();
        matches!(
            scheme.as_str(),
            "redis+cluster" | "rediss+cluster" | "valkey+cluster" | "valkeys+cluster"
        )
    })
}

/// One range of slots and the address (`host:port`) of the master serving it.
#[derive(Debug, Clone)]
struct Range {
    start: u16,
    end: u16,
    master: String,
}

pub struct Cluster {
    /// Unique in this process while the cluster lives, apart from every `Server::id`.
    id: u64,
    /// `redis://` or `rediss://`, then the user info with its `@` (holds the password).
    head: String,
    /// `?...` of the URL, for every node (or empty); behind sentinels, the master's `/<db>`
    /// and query.
    query: String,
    masked_url: String,
    options: ServerOptions,
    seeds: Vec<String>,
    map: Mutex<Vec<Range>>,
    /// Every node the last map named (masters and replicas): asked for the map when the
    /// seeds do not answer.
    nodes: Mutex<Vec<String>>,
    refreshing: tokio::sync::Mutex<()>,
    /// Maps read so far.
    reads: AtomicU64,
    /// Behind Redis Sentinel (`redis+sentinel://`): the map is one range, every slot, served
    /// by the master the sentinels name (`sentinel.rs`).
    sentinels: Option<Sentinels>,
}

/// Cluster ids start far above server ids (both name shared connections to Python).
static NEXT_ID: AtomicU64 = AtomicU64::new(1 << 48);

static CLUSTERS: LazyLock<Mutex<HashMap<String, Weak<Cluster>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cluster {
    /// The cluster `url` names (`redis+cluster://[user:password@]host:port[,host:port...]
    /// [/][?query]`), parsed without I/O and shared by the queues of one URL and options.
    pub fn shared(url: &str, options: &ServerOptions) -> CoreResult<Arc<Self>> {
        let key = format!("{url}|{options:?}");
        let mut clusters = lock(&CLUSTERS);
        clusters.retain(|_, cluster| cluster.strong_count() > 0);
        if let Some(cluster) = clusters.get(&key).and_then(Weak::upgrade) {
            return Ok(cluster);
        }
        let cluster = Arc::new(Self::parse(url, options)?);
        // Every seed must make a server (a bad port, a bad TLS file), refused now.
        for seed in &cluster.seeds {
            cluster.server_at(seed)?;
        }
        if let Some(sentinels) = &cluster.sentinels {
            sentinels.check(options)?;
        }
        clusters.insert(key, Arc::downgrade(&cluster));
        Ok(cluster)
    }

    fn parse(url: &str, options: &ServerOptions) -> CoreResult<Self> {
        let masked_url = mask_url(url);
        if is_sentinel_url(url) {
            let sentinels = Sentinels::parse(url, &masked_url)?;
            return Ok(Self {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                head: sentinels.master_head.clone(),
                query: sentinels.master_tail.clone(),
                masked_url,
                options: options.clone(),
                // (a queue's server until its first call asks the sentinels)
                seeds: sentinels.addresses.clone(),
                map: Mutex::new(Vec::new()),
                nodes: Mutex::new(Vec::new()),
                refreshing: tokio::sync::Mutex::new(()),
                reads: AtomicU64::new(0),
                sentinels: Some(sentinels),
            });
        }
        let refuse = |why: &str| {
            CoreError::InvalidConfig(format!("invalid Redis Cluster URL {masked_url}: {why}"))
        };
        let (scheme, rest) = url
            .split_once("://")
            .filter(|_| is_cluster_url(url))
            .ok_or_else(|| refuse("expected redis+cluster://host:port,host:port"))?;
        let tls = scheme.to_ascii_lowercase().starts_with("rediss")
            || scheme.to_ascii_lowercase().starts_with("valkeys");
        let query_at = rest.find('?').unwrap_or(rest.len());
        let (before_query, query) = rest.split_at(query_at);
        let (user_info, hosts_path) = match before_query.rfind('@') {
            Some(at) => before_query.split_at(at + 1),
            None => ("", before_query),
        };
        let (hosts, path) = match hosts_path.find('/') {
            Some(at) => hosts_path.split_at(at),
            None => (hosts_path, ""),
        };
        if !matches!(path, "" | "/" | "/0") {
            return Err(refuse(
                "a cluster has database 0 only (no other database in the path)",
            ));
        }
        let seeds = host_list(hosts, 6379);
        if seeds.is_empty() {
            return Err(refuse("no seed node (host:port)"));
        }
        Ok(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            head: format!("{}://{user_info}", if tls { "rediss" } else { "redis" }),
            query: query.to_owned(),
            masked_url,
            options: options.clone(),
            seeds,
            map: Mutex::new(Vec::new()),
            nodes: Mutex::new(Vec::new()),
            refreshing: tokio::sync::Mutex::new(()),
            reads: AtomicU64::new(0),
            sentinels: None,
        })
    }

    /// Whether one master serves every queue (behind sentinels): queues of any hash tag may
    /// then share a call, as on a single server.
    pub(crate) fn one_master(&self) -> bool {
        self.sentinels.is_some()
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The URL with its password masked.
    pub fn masked_url(&self) -> &str {
        &self.masked_url
    }

    /// The server of node `address` (`host:port`), with the URL's credentials and options.
    pub(crate) fn server_at(&self, address: &str) -> CoreResult<Arc<Server>> {
        Server::shared(
            &format!("{}{address}{}", self.head, self.query),
            &self.options,
        )
    }

    /// The first seed's server: a queue's until its first call routes it.
    pub(crate) fn first_seed(&self) -> CoreResult<Arc<Server>> {
        self.server_at(&self.seeds[0])
    }

    /// The master serving `slot`, from the map last read, or from a new one if there is none
    /// yet or `fresh` (a reply said the slot moved, or its master was lost).
    pub(crate) async fn master_of(&self, slot: u16, fresh: bool) -> CoreResult<Arc<Server>> {
        if !fresh {
            if let Some(address) = self.owner(slot) {
                return self.server_at(&address);
            }
        }
        self.refresh().await?;
        match self.owner(slot) {
            Some(address) => self.server_at(&address),
            None => Err(CoreError::Connection(format!(
                "redis cluster {}: no master serves slot {slot} (CLUSTER SLOTS)",
                self.masked_url
            ))),
        }
    }

    fn owner(&self, slot: u16) -> Option<String> {
        lock(&self.map)
            .iter()
            .find(|range| range.start <= slot && slot <= range.end)
            .map(|range| range.master.clone())
    }

    /// Every master, from a map read now (for reads that span the whole keyspace).
    pub(crate) async fn masters(&self) -> CoreResult<Vec<Arc<Server>>> {
        self.refresh().await?;
        let mut addresses: Vec<String> = lock(&self.map).iter().map(|r| r.master.clone()).collect();
        addresses.sort();
        addresses.dedup();
        addresses.iter().map(|a| self.server_at(a)).collect()
    }

    /// Reads the slot map from the first node that answers: the masters of the last map, then
    /// the seeds, then the other nodes it named. Callers at the same time share one read.
    async fn refresh(&self) -> CoreResult<()> {
        let before = self.reads.load(Ordering::Acquire);
        let _one = self.refreshing.lock().await;
        // A read that ended while this one waited for the lock is as fresh as one now.
        if self.reads.load(Ordering::Acquire) != before {
            return Ok(());
        }
        if let Some(sentinels) = &self.sentinels {
            let master = sentinels.master(&self.masked_url, &self.options).await?;
            *lock(&self.map) = vec![Range {
                start: 0,
                end: SLOTS - 1,
                master,
            }];
            self.reads.fetch_add(1, Ordering::AcqRel);
            return Ok(());
        }
        let mut candidates: Vec<String> =
            lock(&self.map).iter().map(|r| r.master.clone()).collect();
        candidates.extend(self.seeds.iter().cloned());
        candidates.extend(lock(&self.nodes).iter().cloned());
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|c| seen.insert(c.clone()));
        let mut last = None;
        for address in &candidates {
            match self.read_map(address).await {
                Ok((ranges, nodes)) if !ranges.is_empty() => {
                    *lock(&self.map) = ranges;
                    *lock(&self.nodes) = nodes;
                    self.reads.fetch_add(1, Ordering::AcqRel);
                    return Ok(());
                }
                Ok(_) => last = Some(format!("{address} serves no slot")),
                Err(e) => last = Some(e.to_string()),
            }
        }
        Err(CoreError::Connection(format!(
            "redis cluster {}: no node gave the slot map (tried {}): {}",
            self.masked_url,
            candidates.join(", "),
            last.unwrap_or_default()
        )))
    }

    async fn read_map(&self, address: &str) -> CoreResult<(Vec<Range>, Vec<String>)> {
        let server = self.server_at(address)?;
        let reply: Value = server
            .bounded("cannot read the slot map", async {
                let mut connection = server.commands().await?;
                redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query_async(&mut connection)
                    .await
                    .map_err(|e| server.error(e))
            })
            .await?;
        let asked_host = address
            .rsplit_once(':')
            .map_or(address, |(host, _)| host)
            .to_owned();
        parse_slots(reply, &asked_host).ok_or_else(|| {
            CoreError::Storage(format!(
                "redis at {}: unexpected CLUSTER SLOTS reply",
                server.address()
            ))
        })
    }
}

/// The ranges and every node of a CLUSTER SLOTS reply: `[[start, end, [ip, port, id, ...],
/// replicas...], ...]`; an empty ip is the host that was asked.
fn parse_slots(reply: Value, asked_host: &str) -> Option<(Vec<Range>, Vec<String>)> {
    let Value::Array(entries) = reply else {
        return None;
    };
    let mut ranges = Vec::new();
    let mut nodes = Vec::new();
    for entry in entries {
        let Value::Array(fields) = entry else {
            return None;
        };
        let number = |value: &Value| match value {
            Value::Int(n) => u16::try_from(*n).ok(),
            _ => None,
        };
        let start = number(fields.first()?)?;
        let end = number(fields.get(1)?)?;
        let mut addresses = fields[2..].iter().filter_map(|node| {
            let Value::Array(node) = node else {
                return None;
            };
            let host = match node.first()? {
                Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok()?,
                Value::SimpleString(text) => text.clone(),
                _ => return None,
            };
            let host = if host.is_empty() {
                asked_host.to_owned()
            } else {
                host
            };
            let port = number(node.get(1)?)?;
            Some(if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            })
        });
        let master = addresses.next()?;
        nodes.push(master.clone());
        nodes.extend(addresses);
        ranges.push(Range { start, end, master });
    }
    nodes.sort();
    nodes.dedup();
    Some((ranges, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_those_redis_computes() {
        // CLUSTER KEYSLOT of each, on Redis 7.
        assert_eq!(slot_of("foo"), 12182);
        assert_eq!(slot_of("123456789"), 12739);
        assert_eq!(slot_of("{user1000}.following"), slot_of("user1000"));
        assert_eq!(slot_of("foo{}{bar}"), slot_of("foo{}{bar}"));
        assert_eq!(slot_of("foo{{bar}}zap"), slot_of("{bar"));
        assert_eq!(slot_of("lanemq:{q}:meta"), slot_of("q"));
    }

    #[test]
    fn cluster_urls_name_their_seeds_and_keep_the_password_out_of_messages() {
        let options = ServerOptions::default();
        let cluster =
            Cluster::parse("redis+cluster://u:s3cret@h1:7000,h2:7001/?x=1", &options).unwrap();
        assert_eq!(cluster.seeds, ["h1:7000", "h2:7001"]);
        assert_eq!(
            cluster.masked_url(),
            "redis+cluster://u:***@h1:7000,h2:7001/?x=1"
        );
        assert_eq!(
            Cluster::parse("redis+cluster://h1", &options)
                .unwrap()
                .seeds,
            ["h1:6379"]
        );
        let error = Cluster::parse("redis+cluster://:s3cret@h1:7000/2", &options)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("database 0 only") && !error.contains("s3cret"),
            "{error}"
        );
        assert!(Cluster::parse("redis+cluster://", &options).is_err());
    }
}
