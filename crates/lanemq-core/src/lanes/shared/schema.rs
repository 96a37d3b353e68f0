//! The tables of a local lanes' store file (`<directory>/<name>.lanes.db`, SQLite in WAL mode
//! so every process's connection reads while one writes).

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};

/// How long an operation waits for another process's write lock: every operation is short.
const BUSY: Duration = Duration::from_secs(30);

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- state: 'pending' (in its lane, ordered by seq), 'retry' (until due_at), 'running' (holder).
CREATE TABLE IF NOT EXISTS commands (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    lane INTEGER NOT NULL,
    name TEXT,
    owner TEXT,
    payload TEXT,
    submitter TEXT NOT NULL,
    state TEXT NOT NULL,
    seq INTEGER NOT NULL,
    queued_at INTEGER NOT NULL,
    due_at INTEGER,
    holder TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    recovered INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS commands_by_lane ON commands (state, lane, seq);
CREATE INDEX IF NOT EXISTS commands_by_holder ON commands (holder);
CREATE INDEX IF NOT EXISTS commands_by_owner ON commands (owner);
-- A lane's back is past every seq (MAX over this index).
CREATE INDEX IF NOT EXISTS commands_by_seq ON commands (seq);
-- names: JSON list; idle: its latest claim took nothing (or it has not claimed yet).
CREATE TABLE IF NOT EXISTS processes (
    pid TEXT PRIMARY KEY,
    names TEXT NOT NULL,
    lease_until INTEGER NOT NULL,
    idle INTEGER NOT NULL
);
-- Commands a recovery took (at lost_at) from a process that may still believe it holds them:
-- its next `renew` takes them.
CREATE TABLE IF NOT EXISTS lost (pid TEXT NOT NULL, id INTEGER NOT NULL, lost_at INTEGER NOT NULL);
-- units: decimal text (a u128); updated: microseconds.
CREATE TABLE IF NOT EXISTS rates (lane INTEGER PRIMARY KEY, units TEXT NOT NULL, updated INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS outcomes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    submitter TEXT NOT NULL,
    id INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_by_submitter ON outcomes (submitter, seq);
CREATE TABLE IF NOT EXISTS letters (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    command_id INTEGER NOT NULL,
    command_type TEXT NOT NULL,
    lane_id TEXT NOT NULL,
    error TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    failed_at INTEGER NOT NULL
);
-- A counter per process, raised by every wake; `wait` compares it with the one it saw last.
CREATE TABLE IF NOT EXISTS wakes (pid TEXT PRIMARY KEY, count INTEGER NOT NULL);
";

/// Every table, in the order `clear_all` empties them.
pub const ALL_TABLES: [&str; 8] = [
    "settings",
    "commands",
    "processes",
    "lost",
    "rates",
    "outcomes",
    "letters",
    "wakes",
];

pub fn sql(error: rusqlite::Error) -> CoreError {
    CoreError::Storage(format!("lanes store: sqlite: {error}"))
}

/// Refuses names that would not be one file of the directory.
pub fn check_name(name: &str) -> CoreResult<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(CoreError::InvalidConfig(format!(
            "invalid lanes store name: {name:?} (not empty, no '/', not '.' or '..')"
        )));
    }
    Ok(())
}

/// Opens (creating it and its directory if needed) the store file at `path`.
pub fn open(path: &Path) -> CoreResult<Connection> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            CoreError::Storage(format!(
                "{}: cannot create the directory: {e}",
                dir.display()
            ))
        })?;
    }
    let conn = Connection::open(path)
        .map_err(|e| CoreError::Storage(format!("{}: cannot open: {e}", path.display())))?;
    conn.busy_timeout(BUSY).map_err(sql)?;
    // Processes that open a new file at once meet here: switching it to WAL takes a lock that
    // SQLite refuses at once (SQLITE_BUSY, no busy handler) while another connection holds
    // it, so the set-up is tried again until it goes through.
    let deadline = Instant::now() + BUSY;
    let mut pause = Duration::from_millis(2);
    loop {
        match initialise(&conn) {
            Ok(()) => return Ok(conn),
            Err(error) if is_busy(&error) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(error) => return Err(sql(error)),
        }
    }
}

/// WAL mode and the tables (each idempotent).
fn initialise(conn: &Connection) -> rusqlite::Result<()> {
    // WAL persists in the file; NORMAL syncs at checkpoints only: a lane's commands are work
    // in flight whose processes hold them in memory too, not the durable journal.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(TABLES)
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
