//! What a writer thread (`pool`) does with a queue's waiting operations (it is the only user
//! of the queue's connection): it runs them in one transaction (each in its own savepoint, so
//! a refused operation changes nothing while the others stand), commits once, and only then
//! answers: a batch of operations shares one sync, and an answer means the change is
//! committed (on disk with full sync; in the OS's cache, on disk by the next checkpoint, with
//! normal sync).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::{oneshot, Notify};

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::FinishedResult;

use super::env::Env;
use super::rows::sql;

/// The most operations one transaction takes.
pub const BATCH: usize = 1024;

pub trait Op: Send {
    fn run(&mut self, conn: &Connection, env: &mut Env);
    fn finish(self: Box<Self>, committed: &CoreResult<()>);
}

pub struct Call<T, F> {
    f: Option<F>,
    out: Option<CoreResult<T>>,
    reply: oneshot::Sender<CoreResult<T>>,
    /// Whether a failure must undo what the operation wrote before it failed. Reads, and
    /// operations that check everything before their first write, skip the savepoint.
    guarded: bool,
}

impl<T, F> Call<T, F> {
    pub fn new(f: F, reply: oneshot::Sender<CoreResult<T>>, guarded: bool) -> Self {
        Self {
            f: Some(f),
            out: None,
            reply,
            guarded,
        }
    }
}

/// Runs a statement through the statement cache (parsed once per connection).
fn exec(conn: &Connection, statement: &str) -> CoreResult<()> {
    conn.prepare_cached(statement)
        .and_then(|mut stmt| stmt.execute([]))
        .map(|_| ())
        .map_err(sql)
}

impl<T, F> Op for Call<T, F>
where
    T: Send,
    F: FnOnce(&Connection, &mut Env) -> CoreResult<T> + Send,
{
    fn run(&mut self, conn: &Connection, env: &mut Env) {
        let Some(f) = self.f.take() else { return };
        let finished_before = env.finished.len();
        let result = if self.guarded {
            exec(conn, "SAVEPOINT op").and_then(|()| {
                let result = f(conn, env);
                if result.is_err() {
                    exec(conn, "ROLLBACK TO op")?;
                }
                exec(conn, "RELEASE op")?;
                result
            })
        } else {
            f(conn, env)
        };
        if result.is_err() {
            env.finished.truncate(finished_before);
        }
        // Settled by the operations that remove jobs; nothing may outlive its operation.
        debug_assert!(result.is_err() || env.flow_removed.is_empty());
        env.flow_removed.clear();
        self.out = Some(result);
    }

    fn finish(self: Box<Self>, committed: &CoreResult<()>) {
        let result = match committed {
            Ok(()) => self
                .out
                .unwrap_or_else(|| Err(CoreError::Storage("operation did not run".into()))),
            Err(error) => Err(error.clone()),
        };
        let _ = self.reply.send(result);
    }
}

pub type Waiters = Mutex<std::collections::HashMap<String, Vec<oneshot::Sender<FinishedResult>>>>;

/// Shared between the backend handle and its writer thread's slot.
pub struct Shared {
    /// Woken when the file changed: by this process's writer after a batch that wrote, and by
    /// the doorbell for every process's commits.
    pub changed: Arc<Notify>,
    pub waiters: Waiters,
    /// The queue file (canonical), for the doorbell.
    file: PathBuf,
    /// The file's registration with the doorbell, made by the first wait (`listen`); None
    /// inside when the OS gave no watch (waiters then poll for other processes). Not made at
    /// open: a process that only adds never waits, and a watch would wake the doorbell's
    /// thread for each of its own `-wal` writes (about 14 a lone add: 15 % of its CPU,
    /// benches/history/18.md).
    ring: OnceLock<Option<super::doorbell::Ring>>,
}

impl Shared {
    pub fn new(file: PathBuf, changed: Arc<Notify>) -> Self {
        Self {
            changed,
            waiters: Mutex::new(Default::default()),
            file,
            ring: OnceLock::new(),
        }
    }

    /// Whether other processes' commits ring `changed` (else a waiter polls), registering the
    /// file with the doorbell on the first call. A waiter calls it before its first look at
    /// the file, so a commit made after that look is heard.
    pub fn listen(&self) -> bool {
        self.ring
            .get_or_init(|| super::doorbell::Ring::start(&self.file, Arc::clone(&self.changed)))
            .is_some()
    }
}

/// Runs `batch` in one transaction on `conn` and commits it, then delivers the flow messages
/// it wrote (before answering: a caller then sees what the batch changed in other queues).
/// Returns whether it committed and whether it wrote anything.
pub fn commit(
    conn: &Connection,
    env: &mut Env,
    batch: &mut [Box<dyn Op>],
) -> (CoreResult<()>, bool) {
    let changes_before = conn.total_changes();
    let began = exec(conn, "BEGIN IMMEDIATE");
    finish_transaction(conn, env, batch, began, changes_before)
}

/// `commit` and `answer` of `batch`, on the caller's thread, if the file's write lock is free
/// at once; if another process holds it, gives `batch` back untouched (the writer waits for
/// the lock, the caller's thread must not). The commit is the same transaction, synced the
/// same way, answered after it, as the writer's.
pub fn try_commit_alone(
    conn: &Connection,
    env: &mut Env,
    shared: &Shared,
    mut batch: Vec<Box<dyn Op>>,
) -> Result<(), Vec<Box<dyn Op>>> {
    let changes_before = conn.total_changes();
    if conn.busy_timeout(Duration::ZERO).is_err() {
        return Err(batch);
    }
    let began = exec(conn, "BEGIN IMMEDIATE");
    // Restored before anything else runs: once the transaction holds the write lock, the
    // commit waits only for readers that a checkpoint may wait for, as the writer's does.
    let restored = conn.busy_timeout(super::schema::BUSY);
    if began.is_err() || restored.is_err() {
        if began.is_ok() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        return Err(batch);
    }
    let (committed, wrote) = finish_transaction(conn, env, &mut batch, began, changes_before);
    answer(batch, &committed, env, shared, wrote);
    Ok(())
}

/// Runs `batch` in the transaction `began` opened (if it did) and commits it; then delivers
/// the flow messages it wrote. See `commit`.
fn finish_transaction(
    conn: &Connection,
    env: &mut Env,
    batch: &mut [Box<dyn Op>],
    began: CoreResult<()>,
    changes_before: u64,
) -> (CoreResult<()>, bool) {
    let committed = began.and_then(|()| {
        for op in batch.iter_mut() {
            op.run(conn, env);
        }
        super::rows::trim_events(conn, env.max_events)?;
        exec(conn, "COMMIT")
    });
    if committed.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
        env.outbox_pending = false;
    }
    super::relay::deliver_all(conn, env);
    let wrote = conn.total_changes() != changes_before;
    (committed, wrote)
}

/// Answers a batch's operations, then its job waiters, then (if it wrote) whoever waits for a
/// change. Only a batch that wrote wakes those: their checks are reads, and a check that woke
/// every waiter, itself included, kept an idle worker spinning.
pub fn answer(
    batch: Vec<Box<dyn Op>>,
    committed: &CoreResult<()>,
    env: &mut Env,
    shared: &Shared,
    wrote: bool,
) {
    for op in batch {
        op.finish(committed);
    }
    let finished = std::mem::take(&mut env.finished);
    if committed.is_ok() && !finished.is_empty() {
        let mut waiters = shared.waiters.lock().unwrap_or_else(|e| e.into_inner());
        for (id, result) in finished {
            for waiter in waiters.remove(&id).unwrap_or_default() {
                let _ = waiter.send(result.clone());
            }
        }
    }
    if wrote {
        shared.changed.notify_waiters();
    }
}
