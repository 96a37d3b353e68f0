//! The writer threads that every local queue of the process shares, and the connections they
//! keep open.
//!
//! A thread and an open file per queue stopped a process at about 330 queues (3 open files
//! each: the file, its `-wal` and `-shm`, against the usual limit of 1024). So a small fixed
//! pool of writer threads (one per core, at least two) serves all the queues, each queue on the
//! thread its file hashes to: the queues of one file share a thread, so they never wait for
//! each other's lock in this process. A thread runs the operations waiting for it file by file,
//! each file's in one transaction (group commit per file, as before), and answers once that
//! committed. It keeps at most `MAX_OPEN / threads` connections open, closing the least
//! recently used one when it must open another, and opens a file again on its next use.
//!
//! The price of sharing: a long transaction (or a wait for another process's lock) delays the
//! other queues of its thread. With a thread per core that is the queues on one core, the
//! compromise between that and a thread per queue.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rusqlite::config::DbConfig;
use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};

use super::checkpoint::{self, Checkpoints};
use super::env::Env;
use super::sync::LocalSync;
use super::writer::{self, Op, Shared};
use super::{relay, schema};

/// The connections (queue files and flow links to other queues' files) the process keeps
/// open, across its writer threads: 3 open files each, so well inside a limit of 1024.
const MAX_OPEN: usize = 96;
/// The most writer threads, whatever the number of cores.
const MAX_WRITERS: usize = 8;

/// A queue's slot, shared by its writer thread and its handle: the handle commits a lone
/// operation through it on the caller's thread (`Handle::try_alone`) when the writer has none
/// of the queue's operations; the lock keeps the two from using the connection at once.
type SharedSlot = Arc<Mutex<Slot>>;

fn lock(slot: &SharedSlot) -> MutexGuard<'_, Slot> {
    // (a panic inside an operation is caught before it unwinds past the lock; a poisoned
    // lock still guards a consistent slot)
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

enum Message {
    Open(u64, SharedSlot),
    Op(u64, Box<dyn Op>),
    Forget(u64),
    /// A checkpoint that fell due in a commit on a caller's thread (`checkpoint.rs`).
    Checkpoint(u64),
}

/// A queue as its writer thread keeps it.
pub struct Slot {
    /// Canonical, so a reopen does not depend on the working directory.
    path: PathBuf,
    sync: LocalSync,
    env: Env,
    shared: Arc<Shared>,
    conn: Option<Connection>,
    /// When it was last used, on its writer's clock (the least recently used closes first).
    used: u64,
    /// Whether the writer opened the file yet (it then delivers what the outbox holds).
    started: bool,
    /// The queue's operations sent to the writer and not answered yet (shared with its
    /// handle): an operation may run on the caller's thread only when none are, so a caller's
    /// operations still run in the order it made them.
    queued: Arc<AtomicUsize>,
    /// Where a `sync="normal"` file's checkpoints run (`checkpoint.rs`).
    checkpoints: Arc<Checkpoints>,
}

impl Slot {
    pub fn new(path: PathBuf, sync: LocalSync, env: Env, shared: Arc<Shared>) -> Self {
        Self {
            path,
            sync,
            env,
            shared,
            conn: None,
            used: 0,
            started: false,
            queued: Arc::new(AtomicUsize::new(0)),
            checkpoints: Arc::default(),
        }
    }

    fn open_connections(&self) -> usize {
        usize::from(self.conn.is_some()) + self.env.links.len()
    }

    fn close_connections(&mut self) {
        self.env.links.clear();
        self.conn = None;
    }

    /// Closes its connections to make room. Without the checkpoint that closing the last
    /// connection to a file makes: the file opens again soon, its `-wal` as it was, and a
    /// checkpoint per eviction (a sync of the file) made a process working through more
    /// queues than it keeps open several times slower. The next checkpoint comes with the
    /// `-wal`'s growth or the queue's `close()`.
    fn evict(&mut self) {
        if let Some(conn) = &self.conn {
            let _ = conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
        }
        self.close_connections();
    }
}

/// A queue's place on its writer thread. Dropping it (the last handle of the queue) frees the
/// queue's slot and closes its connection, after the operations sent before.
pub struct Handle {
    id: u64,
    writer: Sender<Message>,
    slot: SharedSlot,
    queued: Arc<AtomicUsize>,
    /// Only a `sync="normal"` queue commits on the caller's thread: a full sync's fsync (and
    /// its checkpoints') would stall the caller's loop.
    on_caller: bool,
}

impl Handle {
    /// Queues `op`; false when the writer thread is gone.
    pub fn send(&self, op: Box<dyn Op>) -> bool {
        self.queued.fetch_add(1, Ordering::AcqRel);
        let sent = self.writer.send(Message::Op(self.id, op)).is_ok();
        if !sent {
            self.queued.fetch_sub(1, Ordering::AcqRel);
        }
        sent
    }

    /// Runs `batch` in one transaction and commits it on this thread, answering each
    /// operation before returning, if the queue syncs `normal`, the writer has none of its
    /// operations, nobody holds the slot, its file is open and no process holds the file's
    /// write lock (`writer::try_commit_alone`); otherwise gives it back untouched for `send`.
    /// It saves the two thread hand-offs of a call through the writer (about 100 us from an
    /// asyncio loop). A checkpoint the commit made due is the writer's (`checkpoint.rs`).
    pub fn try_alone(&self, batch: Vec<Box<dyn Op>>) -> Result<(), Vec<Box<dyn Op>>> {
        if !self.on_caller || self.queued.load(Ordering::Acquire) != 0 {
            return Err(batch);
        }
        let Ok(mut guard) = self.slot.try_lock() else {
            return Err(batch);
        };
        let slot = &mut *guard;
        let Some(conn) = slot.conn.as_ref() else {
            return Err(batch); // closed, or evicted: the writer (re)opens it
        };
        if slot.env.closing {
            return Err(batch);
        }
        let (env, shared, checkpoints) = (&mut slot.env, &slot.shared, &slot.checkpoints);
        checkpoints.on_caller.store(true, Ordering::Release);
        // Caught here, as the writer catches it: a bug in an operation must not unwind
        // through the caller (its reply is dropped, so the caller hears the queue closed).
        let done = catch_unwind(AssertUnwindSafe(|| {
            writer::try_commit_alone(conn, env, shared, batch)
        }))
        .unwrap_or(Ok(()));
        checkpoints.on_caller.store(false, Ordering::Release);
        if checkpoints.take_due() {
            let _ = self.writer.send(Message::Checkpoint(self.id));
        }
        done
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.writer.send(Message::Forget(self.id));
    }
}

/// Hands `slot` to the writer thread of its file.
pub fn register(slot: Slot) -> CoreResult<Handle> {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let writers = writers()?;
    let mut hasher = DefaultHasher::new();
    slot.path.hash(&mut hasher);
    let writer = writers[(hasher.finish() % writers.len() as u64) as usize].clone();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let queued = Arc::clone(&slot.queued);
    let on_caller = slot.sync == LocalSync::Normal;
    let slot = Arc::new(Mutex::new(slot));
    writer
        .send(Message::Open(id, Arc::clone(&slot)))
        .map_err(|_| CoreError::Storage("the local writer thread stopped".into()))?;
    Ok(Handle {
        id,
        writer,
        slot,
        queued,
        on_caller,
    })
}

fn writers() -> CoreResult<&'static [Sender<Message>]> {
    static WRITERS: OnceLock<Result<Vec<Sender<Message>>, String>> = OnceLock::new();
    WRITERS
        .get_or_init(start)
        .as_deref()
        .map_err(|e| CoreError::Storage(format!("cannot start the writer threads: {e}")))
}

fn start() -> Result<Vec<Sender<Message>>, String> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, MAX_WRITERS);
    let budget = (MAX_OPEN / threads).max(4);
    (0..threads)
        .map(|i| {
            let (sender, receiver) = channel();
            std::thread::Builder::new()
                .name(format!("lanemq-local-{i}"))
                .spawn(move || Writer::new(budget).run(receiver))
                .map(|_| sender)
                .map_err(|e| e.to_string())
        })
        .collect()
}

fn closed() -> CoreError {
    CoreError::Storage("the local queue is closed".into())
}

struct Writer {
    slots: HashMap<u64, SharedSlot>,
    /// The most connections this thread keeps open.
    budget: usize,
    clock: u64,
}

impl Writer {
    fn new(budget: usize) -> Self {
        Self {
            slots: HashMap::new(),
            budget,
            clock: 0,
        }
    }

    fn run(mut self, messages: Receiver<Message>) {
        while let Ok(first) = messages.recv() {
            // What waits, by queue in the order the queues first appear: each queue's
            // operations run in the order they came.
            let mut batches: Vec<(u64, Vec<Box<dyn Op>>)> = Vec::new();
            let mut index: HashMap<u64, usize> = HashMap::new();
            let mut forgotten = Vec::new();
            let mut checkpoints = Vec::new();
            let mut taken = 0;
            let mut next = Some(first);
            while let Some(message) = next {
                match message {
                    Message::Open(id, slot) => {
                        self.slots.insert(id, slot);
                    }
                    Message::Op(id, op) => {
                        let at = *index.entry(id).or_insert_with(|| {
                            batches.push((id, Vec::new()));
                            batches.len() - 1
                        });
                        batches[at].1.push(op);
                        taken += 1;
                    }
                    // After the batches: the queue's last operations may be among them.
                    Message::Forget(id) => forgotten.push(id),
                    Message::Checkpoint(id) => checkpoints.push(id),
                }
                if taken >= writer::BATCH {
                    break;
                }
                next = messages.try_recv().ok();
            }
            for (id, batch) in batches {
                let count = batch.len();
                let queued = self
                    .slots
                    .get(&id)
                    .map(|slot| Arc::clone(&lock(slot).queued));
                let ran = catch_unwind(AssertUnwindSafe(|| self.run_batch(id, batch)));
                if ran.is_err() {
                    // A bug in one queue's operation must not stop the other queues of the
                    // thread: that queue is closed (its callers hear so), the rest go on.
                    if let Some(slot) = self.slots.remove(&id) {
                        lock(&slot).close_connections();
                    }
                }
                // After the answers: until then the queue's next operation goes behind these.
                if let Some(queued) = queued {
                    queued.fetch_sub(count, Ordering::AcqRel);
                }
            }
            for id in checkpoints {
                if let Some(slot) = self.slots.get(&id) {
                    let slot = lock(slot);
                    match &slot.conn {
                        Some(conn) => checkpoint::run(conn, &slot.checkpoints),
                        // (evicted meanwhile: SQLite's next commit past the threshold asks again)
                        None => slot.checkpoints.ran(),
                    }
                }
            }
            for id in forgotten {
                self.slots.remove(&id);
            }
        }
    }

    fn run_batch(&mut self, id: u64, mut batch: Vec<Box<dyn Op>>) {
        if let Err(error) = self.connect(id) {
            let failed = Err(error);
            for op in batch {
                op.finish(&failed);
            }
            return;
        }
        let shared_slot = Arc::clone(self.slots.get(&id).expect("connected"));
        let mut guard = lock(&shared_slot);
        let slot = &mut *guard;
        let conn = slot.conn.as_ref().expect("connected");
        let (committed, wrote) = writer::commit(conn, &mut slot.env, &mut batch);
        if slot.env.closing {
            // Closing the connection checkpoints the WAL and removes it; `close()` answers
            // only after that, so the file is whole and alone when it returns.
            self.slots.remove(&id);
            slot.close_connections();
        }
        writer::answer(batch, &committed, &mut slot.env, &slot.shared, wrote);
    }

    /// Makes sure queue `id`'s file is open, closing others first if the budget is spent.
    fn connect(&mut self, id: u64) -> CoreResult<()> {
        self.clock += 1;
        let shared_slot = Arc::clone(self.slots.get(&id).ok_or_else(closed)?);
        {
            let mut slot = lock(&shared_slot);
            slot.used = self.clock;
            if slot.conn.is_some() {
                return Ok(());
            }
        }
        self.make_room(id);
        let mut guard = lock(&shared_slot);
        let slot = &mut *guard;
        let mut conn = schema::reopen(&slot.path, &slot.env.queue, slot.sync)?;
        if slot.sync == LocalSync::Normal {
            checkpoint::install(&mut conn, Arc::clone(&slot.checkpoints))?;
        }
        if !slot.started {
            slot.started = true;
            // Flow messages an earlier writer of this file left undelivered.
            slot.env.outbox_pending = true;
            relay::deliver_all(&conn, &mut slot.env);
        }
        slot.conn = Some(conn);
        Ok(())
    }

    /// Closes the least recently used connections (not `keep`'s) until one more fits. (It
    /// locks one slot at a time: a caller committing through its slot holds no other lock.)
    fn make_room(&mut self, keep: u64) {
        loop {
            let open: usize = self
                .slots
                .values()
                .map(|slot| lock(slot).open_connections())
                .sum();
            if open < self.budget {
                return;
            }
            let oldest = self
                .slots
                .iter()
                .filter(|(id, _)| **id != keep)
                .filter_map(|(_, slot)| {
                    let used = {
                        let guard = lock(slot);
                        (guard.open_connections() > 0).then_some(guard.used)
                    };
                    used.map(|used| (used, slot))
                })
                .min_by_key(|(used, _)| *used)
                .map(|(_, slot)| Arc::clone(slot));
            match oldest {
                Some(slot) => lock(&slot).evict(),
                None => return,
            }
        }
    }
}
