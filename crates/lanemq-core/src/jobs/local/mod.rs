//! `LocalBackend`: the job contract in a local SQLite file (WAL mode; full sync unless the queue
//! was opened with `LocalSync::Normal`, see `sync.rs`), shared safely by several processes. A
//! queue's operations run on one of the process's writer threads (`pool`, shared by all its
//! local queues), which commits them in batches (group commit); answers come after the
//! commit, so an acknowledged change survives the process being killed (and, with full sync,
//! a power loss). Waits wake at once for changes made in this
//! process, and through the doorbell (`doorbell`, a watch on the file's directory) for commits
//! of other processes.

mod admin;
mod cancels;
mod checkpoint;
mod dedup;
mod dedup_keys;
pub(crate) mod doorbell;
mod env;
mod events;
mod flow_dedup;
mod flow_deps;
mod flow_files;
mod flow_sets;
mod flows;
mod group_rows;
mod group_settings;
mod group_storage;
mod groups;
mod job_storage;
mod lifecycle;
mod links;
mod manage;
mod observe;
mod ops;
mod pool;
mod reads;
mod relay;
mod remote;
mod rows;
mod schedulers;
mod schema;
mod storage;
mod sync;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{CoreError, CoreResult};

use super::contract::BoxFuture;
use super::flow::FlowNode;
use super::model::wall_clock_ms;
use super::model::Millis;
use super::options::StoreConfig;
use env::Env;
use storage::SqlStore;
pub use sync::LocalSync;
use writer::{Call, Shared};

/// How often a waiter re-reads the file for changes made by other processes when the doorbell
/// could not be set up.
const CROSS_PROCESS_POLL: Duration = Duration::from_millis(50);
/// How often it re-reads the file anyway with the doorbell: a backstop for a watch that misses
/// a commit (say, one made over a network filesystem), cheap enough to cost nothing idle.
const DOORBELL_BACKSTOP: Duration = Duration::from_secs(1);

#[derive(Clone)]
pub struct LocalBackend {
    slot: Arc<pool::Handle>,
    shared: Arc<Shared>,
    path: Arc<PathBuf>,
    queue: Arc<str>,
    /// The directory of this queue's file when it is `<dir>/<queue>.sqlite3` (flows may then
    /// span the queues whose files are beside it).
    dir: Option<Arc<PathBuf>>,
    max_payload_bytes: usize,
}

impl LocalBackend {
    /// Opens the queue file `path` for queue `queue` (see `schema::open` for what is refused),
    /// with full syncs.
    pub fn open(path: &Path, queue: &str, config: StoreConfig) -> CoreResult<Self> {
        Self::open_synced(path, queue, config, LocalSync::Full)
    }

    /// `open`, this process's commits to the file synced as `sync` says (see `sync.rs`).
    pub fn open_synced(
        path: &Path,
        queue: &str,
        config: StoreConfig,
        sync: LocalSync,
    ) -> CoreResult<Self> {
        // Checked (and made, if new) here; the writer opens it again on first use and closes
        // it when other files need the room.
        schema::check(path, queue, sync)?;
        let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let changed = Arc::new(tokio::sync::Notify::new());
        let shared = Arc::new(Shared::new(file.clone(), changed));
        let mut env = Env::new(queue, config.max_payload_bytes, config.max_events);
        let dir = path
            .file_name()
            .filter(|name| name.to_string_lossy() == format!("{queue}.sqlite3"))
            .map(|_| path.parent().unwrap_or(Path::new("")).to_path_buf());
        env.dir = dir.clone();
        env.sync = sync;
        let slot = pool::register(pool::Slot::new(file, sync, env, Arc::clone(&shared)))?;
        Ok(Self {
            slot: Arc::new(slot),
            shared,
            path: Arc::new(path.to_path_buf()),
            queue: Arc::from(queue),
            dir: dir.map(Arc::new),
            max_payload_bytes: config.max_payload_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long a waiter may go without re-reading the file (`Shared::listen`: the first call
    /// registers the file with the doorbell).
    fn poll_period(&self) -> Duration {
        if self.shared.listen() {
            DOORBELL_BACKSTOP
        } else {
            CROSS_PROCESS_POLL
        }
    }

    /// Queues `f` for the writer thread, in a savepoint so a failure undoes what it wrote;
    /// resolves after the batch it ran in is committed.
    fn call<T, F>(&self, f: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        self.send(f, true)
    }

    /// Like `call`, for reads and for operations that check everything before they write.
    fn direct<T, F>(&self, f: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        self.send(f, false)
    }

    /// `call` of `op` on the file as one operation's `SqlStore` (the shared `lifecycle` and
    /// `lifecycle::manage` run over it), which then writes what it kept back.
    fn call_store<T, F>(&self, op: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqlStore<'_>) -> CoreResult<T> + Send + 'static,
    {
        self.call(move |conn, env| storage::run(conn, env, op))
    }

    /// `direct` of `op` on the file as one operation's `SqlStore`.
    fn direct_store<T, F>(&self, op: F) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqlStore<'_>) -> CoreResult<T> + Send + 'static,
    {
        self.direct(move |conn, env| storage::run(conn, env, op))
    }

    /// `call_store` of each of `ops`, all committed in one transaction on the caller's
    /// thread when the writer has none of this queue's operations, the file is open and its
    /// lock is free (`pool::Handle::try_alone`): their futures are then ready at once, without
    /// the two thread hand-offs of the writer (about 100 us from an asyncio loop). Otherwise
    /// (or with `sync="full"`, whose fsync must not run on the caller's thread) they all go to
    /// the writer, which groups them as it groups any burst. Each answers on its own: a refused
    /// one (its own savepoint) changes nothing while the others stand.
    fn call_store_gathered<T, F>(&self, ops: Vec<F>) -> Vec<BoxFuture<T>>
    where
        T: Send + 'static,
        F: FnOnce(&mut SqlStore<'_>) -> CoreResult<T> + Send + 'static,
    {
        let mut answers = Vec::with_capacity(ops.len());
        let mut calls: Vec<Box<dyn writer::Op>> = Vec::with_capacity(ops.len());
        for op in ops {
            let f = move |conn: &Connection, env: &mut Env| storage::run(conn, env, op);
            let (reply, answer) = oneshot::channel();
            calls.push(Box::new(Call::new(f, reply, true)));
            answers.push(answer);
        }
        let sent = match self.slot.try_alone(calls) {
            Ok(()) => true,
            Err(calls) => calls.into_iter().all(|call| self.slot.send(call)),
        };
        answers
            .into_iter()
            .map(|answer| Self::answered(sent, answer))
            .collect()
    }

    fn send<T, F>(&self, f: F, guarded: bool) -> BoxFuture<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let sent = self.slot.send(Box::new(Call::new(f, reply, guarded)));
        Self::answered(sent, answer)
    }

    /// The answer of an operation given to the writer (or run at once), as a future.
    fn answered<T: Send + 'static>(
        sent: bool,
        answer: oneshot::Receiver<CoreResult<T>>,
    ) -> BoxFuture<T> {
        Box::pin(async move {
            if !sent {
                return Err(CoreError::Storage("the local queue is closed".into()));
            }
            answer
                .await
                .map_err(|_| CoreError::Storage("the local queue is closed".into()))?
        })
    }

    /// Reserves, in their files, the ids of a flow's jobs in other queues (`flow_files::reserve_remote`),
    /// on a thread of its own: before this queue's transaction, which must not hold its lock
    /// while waiting for another file's.
    fn reserve_remote(
        &self,
        nodes: &[&FlowNode],
        path: &'static str,
        now: Millis,
    ) -> BoxFuture<flow_files::Reserved> {
        if !flow_files::spans_queues(nodes, &self.queue) {
            return Box::pin(async { Ok(flow_files::Reserved::new()) });
        }
        let owned: Vec<FlowNode> = nodes.iter().map(|n| (*n).clone()).collect();
        let (dir, home, max) = (self.dir.clone(), self.queue.clone(), self.max_payload_bytes);
        let (reply, answer) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("lanemq-local-flow".into())
            .spawn(move || {
                let refs: Vec<&FlowNode> = owned.iter().collect();
                let dir = dir.as_deref();
                let _ = reply.send(flow_files::reserve_remote(
                    dir, &home, &refs, path, max, now,
                ));
            });
        Box::pin(async move {
            spawned.map_err(|e| CoreError::Storage(format!("cannot start a thread: {e}")))?;
            answer
                .await
                .map_err(|_| CoreError::Storage("the flow reservation stopped".into()))?
        })
    }

    /// Resolves `true` once `check` says so, `false` after `timeout` ms. `check` returns
    /// (done, when to check again at the latest, in ms since the epoch).
    fn wait_until<C>(&self, timeout: Option<Millis>, check: C) -> BoxFuture<bool>
    where
        C: Fn(&LocalBackend) -> BoxFuture<(bool, Option<Millis>)> + Send + Sync + 'static,
    {
        let backend = self.clone();
        Box::pin(async move {
            let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
            backend.shared.listen(); // (before the first look)
            loop {
                let notified = backend.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let (done, recheck_at) = check(&backend).await?;
                if done {
                    return Ok(true);
                }
                let now = tokio::time::Instant::now();
                let mut until = now + backend.poll_period();
                if let Some(at) = recheck_at {
                    let wait = Duration::from_millis(at.saturating_sub(wall_clock_ms()));
                    until = until.min(now + wait);
                }
                if let Some(deadline) = deadline {
                    if now >= deadline {
                        return Ok(false);
                    }
                    until = until.min(deadline);
                }
                let _ = tokio::time::timeout_at(until, notified).await;
            }
        })
    }
}
