//! A durable, append-only key/value journal: what makes queued work survive a crash.
//!
//! The file format lives in `journal/format.rs`: one CRC-32-checked JSON line per record, a
//! header line first. A record is a batch of puts/deletes, so [`Journal::apply`] is atomic.
//!
//! Locking: the exclusive advisory lock is taken on a sibling `<path>.lock` file, never on the
//! journal itself. Compaction replaces the journal's inode by renaming `<path>.tmp` over it; a
//! lock on the journal inode would leave a window in which another opener locks the old,
//! about-to-be-unlinked inode and then appends to a file nobody will read again. The lock file
//! is never renamed or deleted (deleting it would reopen the same race), so it is stable.
//!
//! Durability: every `put`/`delete`/`apply` returns only after its line is written and
//! `sync_data` returned. Concurrent callers share fsyncs (group commit): each enqueues its line
//! under the state mutex and takes a sequence number; whoever finds no leader becomes one,
//! writes everything queued so far with one `write_all` + `sync_data`, publishes the highest
//! sequence number made durable and wakes the rest. While it syncs, new lines pile up for the
//! next leader, so N concurrent writers cost about one fsync per round, with no extra thread.
//!
//! Compaction: once the file holds more than max(1000, 4 × live) ops, the leader that just
//! committed (and [`Journal::open`]) rewrites header + live entries to `<path>.tmp`, syncs it,
//! renames it over the journal, syncs the directory and keeps appending through the tmp handle.
//! It stays leader meanwhile, so the snapshot equals the file; other writers keep queueing.
//!
//! Failure: after a failed append or fsync the file's tail is unknown (the kernel may even have
//! dropped the dirty pages), so the journal refuses all further writes; reopening it replays
//! what reached the disk and trims any torn tail.

mod format;
#[cfg(test)]
mod tests;

use std::fmt::Display;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, BufWriter, Read, Write};
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};
use format::Live;

/// Below this many records a journal is never compacted: rewriting small files buys nothing.
const MIN_COMPACT_RECORDS: u64 = 1000;

/// One change in a [`Journal::apply`] batch. Its serde form is the on-disk op format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum JournalOp {
    Put { key: String, value: String },
    Delete { key: String },
}

impl JournalOp {
    fn key(&self) -> &str {
        match self {
            JournalOp::Put { key, .. } | JournalOp::Delete { key } => key,
        }
    }
}

/// A durable key/value journal. `Send + Sync`: share it through an `Arc`.
pub struct Journal {
    path: PathBuf,
    namespace: String,
    state: Mutex<State>,
    committed: Condvar,
    /// Only the current leader touches the file, so this lock is never contended; it exists
    /// because compaction swaps the handle.
    file: Mutex<File>,
    /// Held for the lifetime of the journal; dropping it releases the advisory lock.
    _lock: File,
}

struct State {
    /// Encoded lines not yet taken by a leader, in sequence order.
    queue: Vec<u8>,
    queued_ops: Vec<JournalOp>,
    enqueued_seq: u64,
    durable_seq: u64,
    leader: bool,
    /// Set once a write fails; see the module docs.
    failed: Option<String>,
    /// Only ops that are durable: compaction snapshots this, so it must match the file.
    live: Live,
    /// Ops in the file (a batch counts each of its ops), for the compaction threshold.
    records: u64,
    /// Raised after a compaction that failed harmlessly, so we do not retry on every commit.
    compact_floor: u64,
}

impl State {
    fn needs_compaction(&self) -> bool {
        let live = self.live.len() as u64;
        self.records
            > MIN_COMPACT_RECORDS
                .max(live.saturating_mul(4))
                .max(self.compact_floor)
    }

    /// Records a compaction's outcome and returns the error if the journal must stop. After a
    /// harmless failure the old file stays in use and the retry waits until it doubles.
    fn compacted(&mut self, live: u64, result: Result<(), CompactError>) -> Option<CoreError> {
        match result {
            Ok(()) => {
                self.records = live;
                self.compact_floor = 0;
                None
            }
            Err(CompactError::Harmless) => {
                self.compact_floor = self.records.saturating_mul(2);
                None
            }
            Err(CompactError::Fatal(e)) => {
                self.failed = Some(e.to_string());
                Some(e)
            }
        }
    }
}

/// Why a compaction failed: before the rename the old file is intact and still ours to append
/// to; after it, our handle and the name on disk may disagree, so the journal must stop.
/// The harmless case carries no error: no caller is waiting on the compaction itself (its own
/// op is already durable) and the uncompacted file is still correct, so a retry is all we need.
enum CompactError {
    Harmless,
    Fatal(CoreError),
}

fn storage(path: &Path, what: &str, err: impl Display) -> CoreError {
    CoreError::Storage(format!("{}: {what}: {err}", path.display()))
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// A rename or file creation is durable only once its directory entry is synced.
fn sync_parent_dir(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn lock_exclusive(path: &Path) -> CoreResult<File> {
    let lock_path = sibling(path, ".lock");
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .map_err(|e| storage(&lock_path, "cannot open lock file", e))?;
    // File::try_lock (std, since 1.89) is why the workspace's rust-version is 1.89.
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(TryLockError::WouldBlock) => Err(CoreError::Storage(format!(
            "{}: journal is in use by another open Journal (lock {} is held)",
            path.display(),
            lock_path.display()
        ))),
        Err(TryLockError::Error(e)) => Err(storage(&lock_path, "cannot lock", e)),
    }
}

impl Journal {
    /// Opens or creates the journal at `path` and returns it with its live entries in the
    /// order each key was first put. Trims a torn tail; refuses mid-file corruption, another
    /// namespace's journal, and a journal another `Journal` holds open.
    pub fn open(path: &Path, namespace: &str) -> CoreResult<(Journal, Vec<(String, String)>)> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|e| storage(dir, "cannot create directory", e))?;
        }
        let lock = lock_exclusive(path)?;
        let err = |what: &'static str| move |e: io::Error| storage(path, what, e);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(err("cannot open"))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(err("cannot read"))?;
        let replay = format::replay(&bytes).map_err(|c| {
            CoreError::Storage(format!(
                "{}: journal corrupt at byte offset {}: {}",
                path.display(),
                c.offset,
                c.reason
            ))
        })?;
        if let Some(found) = replay.namespace.as_deref().filter(|ns| *ns != namespace) {
            return Err(CoreError::InvalidConfig(format!(
                "journal {} belongs to namespace {found:?}, not {namespace:?}",
                path.display()
            )));
        }
        if replay.good_len < bytes.len() as u64 {
            file.set_len(replay.good_len)
                .map_err(err("cannot truncate torn tail"))?;
            file.sync_all().map_err(err("fsync failed"))?;
        }
        if replay.namespace.is_none() {
            file.write_all(&format::header_line(namespace))
                .map_err(err("cannot write header"))?;
            file.sync_all().map_err(err("fsync failed"))?;
            sync_parent_dir(path).map_err(err("cannot fsync parent directory"))?;
        }

        let entries = replay.live.entries();
        let state = State {
            queue: Vec::new(),
            queued_ops: Vec::new(),
            enqueued_seq: 0,
            durable_seq: 0,
            leader: false,
            failed: None,
            live: replay.live,
            records: replay.records,
            compact_floor: 0,
        };
        let compact = state.needs_compaction();
        let journal = Journal {
            path: path.to_owned(),
            namespace: namespace.to_owned(),
            state: Mutex::new(state),
            committed: Condvar::new(),
            file: Mutex::new(file),
            _lock: lock,
        };
        if compact {
            let live = entries.len() as u64;
            let result = journal.rewrite(entries.clone());
            if let Some(e) = journal.lock_state().compacted(live, result) {
                return Err(e);
            }
        }
        Ok((journal, entries))
    }

    /// Sets `key` to `value`; durable when it returns. A new key goes last in the order.
    pub fn put(&self, key: &str, value: &str) -> CoreResult<()> {
        self.commit(vec![JournalOp::Put {
            key: key.to_owned(),
            value: value.to_owned(),
        }])
    }

    /// Removes `key` (a missing key is fine); durable when it returns.
    pub fn delete(&self, key: &str) -> CoreResult<()> {
        self.commit(vec![JournalOp::Delete {
            key: key.to_owned(),
        }])
    }

    /// Applies `ops` in order as one record: after a crash, either all or none are visible.
    pub fn apply(&self, ops: Vec<JournalOp>) -> CoreResult<()> {
        self.commit(ops)
    }

    /// Number of live keys.
    pub fn len(&self) -> usize {
        self.lock_state().live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn unusable(&self, cause: &str) -> CoreError {
        CoreError::Storage(format!(
            "{}: journal unusable after an earlier failure, reopen it ({cause})",
            self.path.display()
        ))
    }

    fn commit(&self, ops: Vec<JournalOp>) -> CoreResult<()> {
        if ops.is_empty() {
            return Ok(());
        }
        if ops.iter().any(|op| op.key().is_empty()) {
            return Err(CoreError::InvalidConfig(
                "journal keys must be non-empty".to_owned(),
            ));
        }
        let line = format::ops_line(&ops);

        let mut st = self.lock_state();
        if let Some(cause) = &st.failed {
            return Err(self.unusable(cause));
        }
        st.queue.extend_from_slice(&line);
        st.queued_ops.extend(ops);
        st.enqueued_seq += 1;
        let seq = st.enqueued_seq;
        loop {
            if st.durable_seq >= seq {
                return Ok(());
            }
            if let Some(cause) = &st.failed {
                return Err(self.unusable(cause));
            }
            if !st.leader {
                break;
            }
            st = self
                .committed
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }

        // Leader: take everything queued so far, including lines of callers still waiting.
        st.leader = true;
        let batch = mem::take(&mut st.queue);
        let batch_ops = mem::take(&mut st.queued_ops);
        let target = st.enqueued_seq;
        drop(st);

        let written = self.append_durably(&batch);
        let mut st = self.lock_state();
        if let Err(e) = written {
            st.failed = Some(e.to_string());
            st.leader = false;
            self.committed.notify_all();
            return Err(e);
        }
        st.records += batch_ops.len() as u64;
        batch_ops.into_iter().for_each(|op| st.live.apply(op));
        st.durable_seq = target;
        // Release this batch's followers now rather than after a possible compaction.
        self.committed.notify_all();

        if st.needs_compaction() {
            // Still leader, so nothing else writes the file while we rewrite it; new lines
            // queue up and go to the new file. The snapshot is exactly the file's content.
            let entries = st.live.entries();
            let live = entries.len() as u64;
            drop(st);
            let result = self.rewrite(entries);
            st = self.lock_state();
            // Our own op is durable, so the caller still gets Ok; after a fatal failure
            // later writes fail instead.
            st.compacted(live, result);
        }
        st.leader = false;
        self.committed.notify_all();
        Ok(())
    }

    fn append_durably(&self, bytes: &[u8]) -> CoreResult<()> {
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(bytes)
            .map_err(|e| storage(&self.path, "append failed", e))?;
        file.sync_data()
            .map_err(|e| storage(&self.path, "fsync failed", e))
    }

    /// Writes header + `entries` to `<path>.tmp`, syncs it, renames it over the journal and
    /// syncs the directory. The tmp handle becomes the append handle: after the rename it is
    /// the journal, and its position is at the end, so no reopen is needed.
    fn rewrite(&self, entries: Vec<(String, String)>) -> Result<(), CompactError> {
        let tmp = sibling(&self.path, ".tmp");
        let write_tmp = || -> io::Result<File> {
            // A crash mid-compaction can leave a stale tmp; we hold the lock, so it is ours.
            match fs::remove_file(&tmp) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create_new(true)
                .open(&tmp)?;
            let mut out = BufWriter::new(&file);
            out.write_all(&format::header_line(&self.namespace))?;
            for (key, value) in entries {
                out.write_all(&format::ops_line(&[JournalOp::Put { key, value }]))?;
            }
            out.flush()?;
            drop(out);
            file.sync_all()?;
            Ok(file)
        };
        let harmless = |_: io::Error| {
            let _ = fs::remove_file(&tmp);
            CompactError::Harmless
        };
        let file = write_tmp().map_err(harmless)?;
        fs::rename(&tmp, &self.path).map_err(harmless)?;
        *self.file.lock().unwrap_or_else(PoisonError::into_inner) = file;
        sync_parent_dir(&self.path).map_err(|e| {
            CompactError::Fatal(storage(
                &self.path,
                "cannot fsync directory after compaction",
                e,
            ))
        })
    }
}
