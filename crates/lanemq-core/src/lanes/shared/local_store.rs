//! `LocalLaneStore`: the shared lanes' store in a SQLite file that every process on the host
//! opens (`<directory>/<name>.lanes.db`). Every operation is one `BEGIN IMMEDIATE` transaction,
//! so what one process decides holds against every other; the semantics are the contract's
//! (python/lanemq/lanes/_store.py). Here: opening, the transactions, setup, clear_all.
//! Enqueues are in `local_enqueue.rs`, processes in `local_processes.rs`, claims in
//! `local_claim.rs` (over `local_inputs.rs`, after `local_recover.rs`), a command's end in
//! `local_ends.rs`, outcomes and counts in `local_reads.rs`, waits in `local_wait.rs`.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, Transaction, TransactionBehavior};
use tokio::sync::Notify;

use super::local_rows::{set_setting, setting};
use super::schema::{self, sql, ALL_TABLES};
use super::spec::{configs, LaneSpec};
use crate::error::{CoreError, CoreResult};
use crate::jobs::local::doorbell::Ring;

/// (id, ok, text): an outcome for a command's submitter.
pub type Outcome = (i64, bool, String);
/// (command_id, command_type, lane_id, error, attempts, failed_at in unix milliseconds).
pub type LetterRecord = (i64, String, String, String, i64, i64);

pub struct LocalLaneStore {
    /// None once closed.
    conn: Mutex<Option<Connection>>,
    path: PathBuf,
    /// Per process id, the wake counter its previous `wait` returned at.
    pub(super) seen: Mutex<HashMap<String, i64>>,
    /// Rung when any process commits to the file (None: no watch could be set; waits poll).
    pub(super) doorbell: Arc<Notify>,
    pub(super) ring: Option<Ring>,
}

impl LocalLaneStore {
    /// Opens (creating it and `directory` if needed) the store `name` of `directory`.
    pub fn open(directory: &Path, name: &str) -> CoreResult<Self> {
        schema::check_name(name)?;
        let path = directory.join(format!("{name}.lanes.db"));
        let conn = schema::open(&path)?;
        let doorbell = Arc::new(Notify::new());
        let ring = Ring::start(&path, Arc::clone(&doorbell));
        Ok(Self {
            conn: Mutex::new(Some(conn)),
            path,
            seen: Mutex::default(),
            doorbell,
            ring,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `op` in one `BEGIN IMMEDIATE` transaction, committed when it succeeds.
    pub(super) fn write<T>(
        &self,
        op: impl FnOnce(&Transaction<'_>) -> CoreResult<T>,
    ) -> CoreResult<T> {
        self.transaction(TransactionBehavior::Immediate, true, op)
    }

    /// Runs `op` in a read transaction (it writes nothing, so it rings no doorbell).
    pub(super) fn read<T>(
        &self,
        op: impl FnOnce(&Transaction<'_>) -> CoreResult<T>,
    ) -> CoreResult<T> {
        self.transaction(TransactionBehavior::Deferred, false, op)
    }

    /// Runs `op` in a transaction of the store's one connection; with `commit`, commits it
    /// when `op` succeeds (else it rolls back as it is dropped).
    fn transaction<T>(
        &self,
        behavior: TransactionBehavior,
        commit: bool,
        op: impl FnOnce(&Transaction<'_>) -> CoreResult<T>,
    ) -> CoreResult<T> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let conn = guard
            .as_mut()
            .ok_or_else(|| CoreError::Storage("the lanes store is closed".into()))?;
        let tx = conn.transaction_with_behavior(behavior).map_err(sql)?;
        let out = op(&tx)?;
        if commit {
            tx.commit().map_err(sql)?;
        }
        Ok(out)
    }

    /// Stores the lanes and `config` unless some are stored; returns the stored config.
    pub fn setup(
        &self,
        config: &str,
        lanes: &[LaneSpec],
        global_max: Option<i64>,
    ) -> CoreResult<String> {
        let reserved: i64 = configs(lanes)?
            .iter()
            .map(|c| i64::from(c.min_concurrency))
            .sum();
        // As the in-process scheduler: a cap below the reservations could start nothing.
        if let Some(cap) =
            global_max.filter(|&cap| cap < reserved.max(1) || cap > i64::from(u32::MAX))
        {
            return Err(CoreError::InvalidConfig(format!(
                "invalid global_max: {cap} (must be at least 1 and at least the sum of the \
                 lanes' min_concurrency ({reserved}))"
            )));
        }
        let lanes_json =
            serde_json::to_string(lanes).map_err(|e| CoreError::Storage(e.to_string()))?;
        self.write(|tx| {
            if let Some(stored) = setting(tx, "config")? {
                return Ok(stored);
            }
            set_setting(tx, "config", config)?;
            set_setting(tx, "lanes", &lanes_json)?;
            if let Some(cap) = global_max {
                set_setting(tx, "global_max", &cap.to_string())?;
            }
            Ok(config.to_owned())
        })
    }

    /// Deletes everything the store holds.
    pub fn clear_all(&self) -> CoreResult<()> {
        self.write(|tx| {
            for table in ALL_TABLES {
                tx.execute(&format!("DELETE FROM {table}"), [])
                    .map_err(sql)?;
            }
            Ok(())
        })?;
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).clear();
        Ok(())
    }

    /// Closes the file (operations after it fail with a clear error).
    pub fn close(&self) {
        self.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// `pid`'s wake counter (0 before any wake).
pub(super) fn wake_count(tx: &Transaction<'_>, pid: &str) -> CoreResult<i64> {
    use rusqlite::OptionalExtension;
    Ok(tx
        .query_row("SELECT count FROM wakes WHERE pid = ?1", [pid], |r| {
            r.get(0)
        })
        .optional()
        .map_err(sql)?
        .unwrap_or(0))
}
