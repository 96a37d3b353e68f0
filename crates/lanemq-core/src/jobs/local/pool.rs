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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, OnceLock};

use rusqlite::config::DbConfig;
use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};

use super::env::Env;
use super::sync::LocalSync;
use super::writer::{self, Op, Shared};
use super::{relay, schema};

/// The connections (queue files and flow links to other queues' files) the process keeps
/// open, across its writer threads: 3 open files each, so well inside a limit of 1024.
const MAX_OPEN: usize = 96;
/// The most writer threads, whatever the number of cores.
const MAX_WRITERS: usize = 8;

enum Message {
    Open(u64, Box<Slot>),
    Op(u64, Box<dyn Op>),
    Forget(u64),
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
}

impl Handle {
    /// Queues `op`; false when the writer thread is gone.
    pub fn send(&self, op: Box<dyn Op>) -> bool {
        self.writer.send(Message::Op(self.id, op)).is_ok()
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
    writer
        .send(Message::Open(id, Box::new(slot)))
        .map_err(|_| CoreError::Storage("the local writer thread stopped".into()))?;
    Ok(Handle { id, writer })
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
    slots: HashMap<u64, Slot>,
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
            let mut taken = 0;
            let mut next = Some(first);
            while let Some(message) = next {
                match message {
                    Message::Open(id, slot) => {
                        self.slots.insert(id, *slot);
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
                }
                if taken >= writer::BATCH {
                    break;
                }
                next = messages.try_recv().ok();
            }
            for (id, batch) in batches {
                let ran = catch_unwind(AssertUnwindSafe(|| self.run_batch(id, batch)));
                if ran.is_err() {
                    // A bug in one queue's operation must not stop the other queues of the
                    // thread: that queue is closed (its callers hear so), the rest go on.
                    self.slots.remove(&id);
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
        let slot = self.slots.get_mut(&id).expect("connected");
        let conn = slot.conn.as_ref().expect("connected");
        let (committed, wrote) = writer::commit(conn, &mut slot.env, &mut batch);
        if slot.env.closing {
            // Closing the connection checkpoints the WAL and removes it; `close()` answers
            // only after that, so the file is whole and alone when it returns.
            let mut slot = self.slots.remove(&id).expect("present");
            slot.close_connections();
            writer::answer(batch, &committed, &mut slot.env, &slot.shared, wrote);
        } else {
            writer::answer(batch, &committed, &mut slot.env, &slot.shared, wrote);
        }
    }

    /// Makes sure queue `id`'s file is open, closing others first if the budget is spent.
    fn connect(&mut self, id: u64) -> CoreResult<()> {
        self.clock += 1;
        let slot = self.slots.get_mut(&id).ok_or_else(closed)?;
        slot.used = self.clock;
        if slot.conn.is_some() {
            return Ok(());
        }
        self.make_room(id);
        let slot = self.slots.get_mut(&id).expect("present");
        let conn = schema::reopen(&slot.path, &slot.env.queue, slot.sync)?;
        if !slot.started {
            slot.started = true;
            // Flow messages an earlier writer of this file left undelivered.
            slot.env.outbox_pending = true;
            relay::deliver_all(&conn, &mut slot.env);
        }
        slot.conn = Some(conn);
        Ok(())
    }

    /// Closes the least recently used connections (not `keep`'s) until one more fits.
    fn make_room(&mut self, keep: u64) {
        loop {
            let open: usize = self.slots.values().map(Slot::open_connections).sum();
            if open < self.budget {
                return;
            }
            let oldest = self
                .slots
                .iter_mut()
                .filter(|(id, slot)| **id != keep && slot.open_connections() > 0)
                .min_by_key(|(_, slot)| slot.used);
            match oldest {
                Some((_, slot)) => slot.evict(),
                None => return,
            }
        }
    }
}
