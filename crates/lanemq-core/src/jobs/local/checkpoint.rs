//! Checkpoints of a `sync="normal"` file, kept on its writer thread.
//!
//! A `sync="normal"` queue commits gathered adds on the caller's thread (an asyncio loop's,
//! `pool::Handle::try_alone`). SQLite's auto-checkpoint runs in the commit that passes its
//! threshold, on whichever thread commits, and syncs the file: 0.2-2 s stalls of the loop on a
//! shared disk (benches/history/18.md). So its hook is replaced by this one: past the same
//! threshold, a writer-thread commit checkpoints at once, as SQLite would; a caller-thread
//! commit only marks the checkpoint due, and the caller asks the writer for it.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::hooks::Wal;
use rusqlite::Connection;

use crate::error::CoreResult;

use super::rows::sql;

/// SQLite's own auto-checkpoint threshold, in WAL pages.
const PAGES: c_int = 1000;

/// Shared by a queue's connection hook, its handle and its writer.
#[derive(Default)]
pub struct Checkpoints {
    /// Set while a commit runs on the caller's thread: the hook must not checkpoint then.
    pub on_caller: AtomicBool,
    /// The WAL passed the threshold in a caller-thread commit: the writer checkpoints next.
    due: AtomicBool,
    /// A checkpoint asked of the writer and not run yet. One at a time: the hook reports the
    /// WAL past the threshold at every commit until the log starts over, and a request per add
    /// woke the writer (and held the slot) once per add.
    requested: AtomicBool,
}

impl Checkpoints {
    /// Whether a checkpoint fell due and none is asked for yet: the caller then asks the
    /// writer for it (and `ran` says when it did).
    pub fn take_due(&self) -> bool {
        self.due.swap(false, Ordering::AcqRel) && !self.requested.swap(true, Ordering::AcqRel)
    }

    /// The checkpoint asked for ran.
    pub fn ran(&self) {
        self.requested.store(false, Ordering::Release);
    }
}

/// Replaces `conn`'s auto-checkpoint by the hook above.
pub fn install(conn: &mut Connection, checkpoints: Arc<Checkpoints>) -> CoreResult<()> {
    conn.wal_hook(Some(move |wal: &mut Wal, pages: c_int| {
        if pages < PAGES {
            return Ok(());
        }
        if checkpoints.on_caller.load(Ordering::Acquire) {
            checkpoints.due.store(true, Ordering::Release);
            return Ok(());
        }
        checkpoints.due.store(false, Ordering::Release);
        // Passive, as SQLite's own; its failure (a reader in the way) is not the commit's:
        // an error returned here would fail a COMMIT that succeeded.
        let _ = wal.checkpoint();
        Ok(())
    }))
    .map_err(sql)
}

/// A passive checkpoint, outside any transaction (the writer's, when a caller asked for it).
pub fn run(conn: &Connection, checkpoints: &Checkpoints) {
    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
    checkpoints.ran();
}
