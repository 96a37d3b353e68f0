//! `RedisBackend`: the job contract on Redis, one Lua script per transition. This file holds
//! the queue itself: its fields, opening it (on a server, a cluster or behind sentinels) and
//! closing it. Its folder holds what every call needs: the first call's checks (`ready.rs`),
//! the call machinery (`call.rs`) and the hot path's arguments and replies (`hot_path.rs`).
//! The files of the crate hold the rest, each concern of the contract in the file of its name
//! (`lifecycle.rs`, `reads.rs`, `admin.rs`, `events.rs`, ...) and the blocking waits in
//! `waits.rs`.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lanemq_core::CoreResult;
use tokio::sync::OnceCell;

use crate::keys::Keys;
use crate::replicas::ReplicaAck;
use crate::resp;
use crate::topology::cluster::{is_cluster_url, Cluster};
use crate::topology::route::{Route, Target};
use crate::topology::server::{Server, ServerOptions};

mod call;
mod hot_path;
mod ready;

pub(crate) use call::{function_missing, load_library};

pub struct RedisBackend {
    /// Where this queue's calls go: its server, or on a cluster its slot's master.
    pub(crate) target: Target,
    pub(crate) keys: Keys,
    /// The queue's name (flows name their jobs `<queue>:<id>`).
    pub(crate) queue: String,
    /// The keys a script is given: META, from whose name it builds the others, and the guard
    /// (`Keys::script_keys`).
    script_keys: [String; 2],
    /// The same as the RESP arguments of a request (`request`), packed once.
    packed_keys: Vec<u8>,
    pub(crate) max_events: usize,
    /// Queues linked to this one by flows: each name and its keys, which every script that
    /// follows flows gets after this queue's (see `lua/includes/flows.lua`).
    linked: Mutex<Vec<(String, [String; 2])>>,
    prefix: String,
    random: RandomState,
    calls: AtomicU64,
    allow_eviction: bool,
    /// Set once this queue's first call connected and checked the server (`ready`).
    ready: OnceCell<()>,
    /// Runs scripts by EVALSHA even where the server has functions (`without_functions`).
    evalsha_only: bool,
    /// Waits for replicas to acknowledge the writes that add jobs (`with_replica_ack`).
    replica_ack: Option<ReplicaAck>,
    /// Set when `ready` found an existing queue whose name the rule refuses (kept, with a
    /// warning, `take_name_warning`).
    name_warning: AtomicBool,
}

impl RedisBackend {
    /// A queue of the server `url` names, without I/O: it connects on its first call (or
    /// `ready`). Queues of one URL and options share their connections (`Server`).
    pub fn open(
        url: &str,
        options: &ServerOptions,
        prefix: &str,
        queue: &str,
        max_events: usize,
        allow_eviction: bool,
    ) -> CoreResult<Self> {
        if is_cluster_url(url) || crate::topology::sentinel::is_sentinel_url(url) {
            let cluster = Cluster::shared(url, options)?;
            return Self::in_cluster(cluster, prefix, queue, max_events, allow_eviction);
        }
        Ok(Self::on(
            Server::shared(url, options)?,
            prefix,
            queue,
            max_events,
            allow_eviction,
        ))
    }

    /// A queue of `cluster`, without I/O: its first call finds its slot's master.
    pub fn in_cluster(
        cluster: Arc<Cluster>,
        prefix: &str,
        queue: &str,
        max_events: usize,
        allow_eviction: bool,
    ) -> CoreResult<Self> {
        let seed = cluster.first_seed()?;
        let route = Route::new(cluster, &Keys::new(prefix, queue));
        Ok(Self::with_target(
            Target::new(seed, Some(route)),
            prefix,
            queue,
            max_events,
            allow_eviction,
        ))
    }

    /// The cluster this queue is in, if it is.
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.target.cluster()
    }

    /// A queue on `server` (shared with the queues already there).
    pub fn on(
        server: Arc<Server>,
        prefix: &str,
        queue: &str,
        max_events: usize,
        allow_eviction: bool,
    ) -> Self {
        let target = Target::new(server, None);
        Self::with_target(target, prefix, queue, max_events, allow_eviction)
    }

    fn with_target(
        target: Target,
        prefix: &str,
        queue: &str,
        max_events: usize,
        allow_eviction: bool,
    ) -> Self {
        let keys = Keys::new(prefix, queue);
        let script_keys = keys.script_keys();
        let mut packed_keys = Vec::new();
        for key in &script_keys {
            resp::bulk(&mut packed_keys, key.as_bytes());
        }
        Self {
            target,
            keys,
            queue: queue.to_owned(),
            script_keys,
            packed_keys,
            max_events,
            linked: Mutex::new(Vec::new()),
            prefix: prefix.to_owned(),
            random: RandomState::new(),
            calls: AtomicU64::new(0),
            allow_eviction,
            ready: OnceCell::new(),
            evalsha_only: false,
            replica_ack: None,
            name_warning: AtomicBool::new(false),
        }
    }

    /// Opens a queue and connects it at once (`open`, then `ready`).
    pub async fn connect(
        url: &str,
        prefix: &str,
        queue: &str,
        max_events: usize,
        allow_eviction: bool,
    ) -> CoreResult<Self> {
        let backend = Self::open(
            url,
            &ServerOptions::default(),
            prefix,
            queue,
            max_events,
            allow_eviction,
        )?;
        backend.ready().await?;
        Ok(backend)
    }

    /// The server of this queue's calls (on a cluster, its master as last routed).
    pub fn server(&self) -> Arc<Server> {
        self.target.server()
    }

    /// Waits until the server answers (`Target::wait_reachable`): on a cluster, the master
    /// of this queue's slot.
    pub async fn wait_reachable(&self, timeout: std::time::Duration) -> bool {
        self.target.wait_reachable(timeout).await
    }

    /// This queue is done with the server (the last queue's close closes the connections).
    pub fn close(&self) {
        self.target.close();
    }

    /// Makes every call that adds jobs (`add`, `add_bulk`, flows) wait until `replicas`
    /// replicas have its write (`WAIT`, for at most `timeout`), and fail if fewer have. It
    /// narrows what a failover can lose (replication stays asynchronous: it is no guarantee);
    /// the call's script then runs on a connection of its own, as WAIT holds the connection it
    /// is sent on until the replicas answer.
    pub fn with_replica_ack(mut self, replicas: usize, timeout: std::time::Duration) -> Self {
        self.replica_ack = (replicas > 0).then_some(ReplicaAck { replicas, timeout });
        self
    }

    /// Runs every script by EVALSHA, as on a server without functions (for tests of that path).
    pub fn without_functions(mut self) -> Self {
        self.evalsha_only = true;
        self
    }

    /// The key prefix its queues share.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub(crate) fn token_seed(&self) -> String {
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(self.calls.fetch_add(1, Ordering::Relaxed));
        format!("{:016x}", hasher.finish())
    }
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        self.close();
    }
}
