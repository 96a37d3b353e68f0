//! `RedisBackend`: the job contract on Redis, one Lua script per transition. This file holds the
//! connection, the script call and adding, claiming and completing; the other files of the
//! crate hold the rest, each concern of the contract in the file of its name (`lifecycle.rs`,
//! `reads.rs`, `admin.rs`, `events.rs`, ...) and the blocking waits in `waits.rs`.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lanemq_core::jobs::{Completion, Job, Millis, NewJob, JOB_STATES_COUNT};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;
use tokio::sync::OnceCell;

mod call;
mod ready;

pub(crate) use call::{function_missing, load_library};

use crate::decode::{self, items};
use crate::keys::{Keys, JOB_FIELDS};
use crate::replicas::ReplicaAck;
use crate::resp;
use crate::scripts;
use crate::topology::cluster::{is_cluster_url, Cluster};
use crate::topology::route::{Route, Target};
use crate::topology::server::{Server, ServerOptions};

pub struct RedisBackend {
    /// Where this queue's calls go: its server, or on a cluster its slot's master.
    pub(crate) target: Target,
    pub(crate) keys: Keys,
    /// The queue's name (flows name their jobs `<queue>:<id>`).
    pub(crate) queue: String,
    /// Every key a script may touch, in the order `lua/includes/common.lua` expects.
    script_keys: Vec<String>,
    /// The same as the RESP arguments of a request (`request`), packed once.
    packed_keys: Vec<u8>,
    pub(crate) max_events: usize,
    /// Queues linked to this one by flows: each name and its keys, which every script gets
    /// after this queue's (see `lua/includes/flows.lua`).
    linked: Mutex<Vec<(String, Vec<String>)>>,
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
        debug_assert_eq!(script_keys.len(), 16);
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

    /// Adds jobs (validated here first: all or nothing); returns each with whether it was created.
    pub async fn add_bulk(
        &self,
        jobs: Vec<NewJob>,
        now: Millis,
        max_payload_bytes: usize,
    ) -> CoreResult<Vec<(Job, bool)>> {
        let args = self.add_args(&jobs, now, max_payload_bytes)?;
        decode::added_jobs(self.run(&scripts::ADD, args).await?, jobs, now)
    }

    /// The add script's arguments; refuses the whole batch if one job is invalid.
    pub(crate) fn add_args(
        &self,
        jobs: &[NewJob],
        now: Millis,
        max_payload_bytes: usize,
    ) -> CoreResult<Vec<String>> {
        let mut args = vec![now.to_string(), self.max_events.to_string()];
        for (index, job) in jobs.iter().enumerate() {
            job.options
                .validate()
                .and_then(|()| lanemq_core::jobs::check_payload(&job.data, max_payload_bytes))
                .map_err(|e| match e {
                    CoreError::InvalidConfig(m) => {
                        CoreError::InvalidConfig(format!("job #{index}: {m}"))
                    }
                    other => other,
                })?;
            let options = serde_json::to_string(&job.options)
                .map_err(|e| CoreError::Storage(e.to_string()))?;
            args.extend([
                job.name.clone(),
                job.data.clone(),
                options,
                job.options.job_id.clone().unwrap_or_default(),
                job.options.priority.to_string(),
                if job.options.lifo { "1" } else { "0" }.to_owned(),
                job.options.delay.to_string(),
            ]);
        }
        Ok(args)
    }

    pub(crate) fn claim_args(
        &self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> Vec<String> {
        vec![
            now.to_string(),
            self.max_events.to_string(),
            worker_id.to_owned(),
            lease.to_string(),
            max_jobs.to_string(),
            self.token_seed(),
        ]
    }

    pub(crate) fn claimed(
        &self,
        reply: Value,
        worker_id: &str,
        lease: Millis,
        now: Millis,
    ) -> CoreResult<Vec<Job>> {
        items(reply)?
            .into_iter()
            .map(|job| decode::claimed(job, worker_id, lease, now))
            .collect()
    }

    pub(crate) fn completed(
        completions: &[Completion],
        reply: Value,
    ) -> CoreResult<Vec<CoreResult<()>>> {
        Ok(completions
            .iter()
            .zip(items(reply)?)
            .map(|(c, outcome)| decode::outcome(&c.id, outcome).map(|_| ()))
            .collect())
    }

    pub(crate) fn complete_args(&self, completions: &[Completion], now: Millis) -> Vec<String> {
        let mut args = vec![now.to_string(), self.max_events.to_string()];
        Self::push_completions(&mut args, completions);
        args
    }

    pub(crate) fn push_completions(args: &mut Vec<String>, completions: &[Completion]) {
        for c in completions {
            args.extend([c.id.clone(), c.token.clone(), c.result.clone()]);
        }
    }

    pub async fn claim(
        &self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<Vec<Job>> {
        let args = self.claim_args(worker_id, lease, max_jobs, now);
        let reply = self.run(&scripts::CLAIM, args).await?;
        let claimed = self.claimed(reply, worker_id, lease, now)?;
        self.after_claim(&claimed, now).await;
        Ok(claimed)
    }

    pub async fn complete_many(
        &self,
        completions: Vec<Completion>,
        now: Millis,
    ) -> CoreResult<Vec<CoreResult<()>>> {
        let args = self.complete_args(&completions, now);
        Self::completed(&completions, self.run(&scripts::COMPLETE, args).await?)
    }

    /// Completes jobs, then claims, in one script call.
    pub async fn complete_and_claim(
        &self,
        completions: Vec<Completion>,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<(Vec<CoreResult<()>>, Vec<Job>)> {
        let mut args = self.claim_args(worker_id, lease, max_jobs, now);
        Self::push_completions(&mut args, &completions);
        let reply = self.run(&scripts::COMPLETE_CLAIM, args).await?;
        let (outcomes, claimed) =
            self.completed_and_claimed(&completions, reply, worker_id, lease, now)?;
        self.after_claim(&claimed, now).await;
        Ok((outcomes, claimed))
    }

    pub(crate) fn completed_and_claimed(
        &self,
        completions: &[Completion],
        reply: Value,
        worker_id: &str,
        lease: Millis,
        now: Millis,
    ) -> CoreResult<(Vec<CoreResult<()>>, Vec<Job>)> {
        let mut reply = items(reply)?.into_iter();
        let short = || CoreError::Storage("redis: short complete_and_claim reply".into());
        let outcomes = Self::completed(completions, reply.next().ok_or_else(short)?)?;
        let claimed = self.claimed(reply.next().ok_or_else(short)?, worker_id, lease, now)?;
        Ok((outcomes, claimed))
    }

    pub async fn get_job(&self, id: &str) -> CoreResult<Option<Job>> {
        let mut connection = self.connection().await?;
        let values: Vec<Value> = redis::cmd("HMGET")
            .arg(self.keys.job(id))
            .arg(&JOB_FIELDS)
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        if matches!(values.get(3), None | Some(Value::Nil)) {
            return Ok(None);
        }
        let mut row = vec![Value::BulkString(id.as_bytes().to_vec())];
        row.extend(values);
        decode::job(Value::Array(row)).map(Some)
    }

    /// Counts per state (the jobs in each state's set), in `JobState::ALL` order.
    pub async fn counts(&self) -> CoreResult<[usize; JOB_STATES_COUNT]> {
        let mut pipe = redis::pipe();
        count_states(&mut pipe, &self.keys);
        let mut connection = self.connection().await?;
        let counts: Vec<usize> = pipe
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        Ok(state_counts(&counts))
    }
}

/// Counts the jobs of a state's sorted set: every score below +inf, which leaves out the
/// sentinel that keeps `active` a skiplist (see `ensure_layout` in `lua/includes/common.lua`).
pub(crate) fn count_jobs(pipe: &mut redis::Pipeline, set_key: String) {
    pipe.cmd("ZCOUNT").arg(set_key).arg("-inf").arg("(+inf");
}

/// Counts the jobs of every state, in `JobState::ALL` order, with `JOB_STATES_COUNT + 1`
/// commands: the list of waiting jobs of priority 0 first (`state_counts` adds it to the
/// waiting set's count).
pub(crate) fn count_states(pipe: &mut redis::Pipeline, keys: &Keys) {
    pipe.cmd("LLEN").arg(keys.key(crate::keys::WAITING_LIST));
    for set in crate::keys::STATE_SETS {
        count_jobs(pipe, keys.key(set));
    }
}

/// The counts per state from the replies of `count_states`.
pub(crate) fn state_counts(replies: &[usize]) -> [usize; JOB_STATES_COUNT] {
    let mut out = [0; JOB_STATES_COUNT];
    out.copy_from_slice(&replies[1..=JOB_STATES_COUNT]);
    out[0] += replies[0];
    out
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        self.close();
    }
}
