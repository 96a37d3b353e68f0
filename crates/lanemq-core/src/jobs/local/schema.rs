//! The local backend's SQLite file: its schema, its format version and the checks made when it
//! is opened. One file holds one queue; its name is recorded so the file cannot be reopened as
//! another queue.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{CoreError, CoreResult};

use super::sync::LocalSync;

/// Bumped when the schema changes incompatibly; a file with a newer version is refused.
pub const FORMAT_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    options TEXT NOT NULL,
    state INTEGER NOT NULL,
    priority INTEGER NOT NULL,
    ord INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    delay_until INTEGER NOT NULL,
    processed_on INTEGER,
    finished_on INTEGER,
    attempts_made INTEGER NOT NULL,
    stalled_count INTEGER NOT NULL,
    progress TEXT NOT NULL,
    return_value TEXT,
    failed_reason TEXT,
    stacktrace TEXT NOT NULL,
    lock_token TEXT,
    lock_worker TEXT,
    lock_expires INTEGER
);
-- One partial index per state, in the order that state is read (claim order, due time, lease
-- expiry, finish time), so every transition is O(log n).
CREATE INDEX IF NOT EXISTS jobs_delayed ON jobs (delay_until, seq) WHERE state = 1;
CREATE INDEX IF NOT EXISTS jobs_active ON jobs (lock_expires, seq) WHERE state = 2;
CREATE INDEX IF NOT EXISTS jobs_children ON jobs (seq) WHERE state = 3;
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (state, finished_on, seq) WHERE state >= 4;
-- Jobs per state, kept with every transition: counts (and count-based retention) stay O(1).
CREATE TABLE IF NOT EXISTS counts (state INTEGER PRIMARY KEY, n INTEGER NOT NULL);
INSERT OR IGNORE INTO counts (state, n) VALUES (0, 0), (1, 0), (2, 0), (3, 0), (4, 0), (5, 0);
CREATE TABLE IF NOT EXISTS logs (
    job_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    line TEXT NOT NULL,
    at INTEGER,
    PRIMARY KEY (job_id, n)
) WITHOUT ROWID;
-- AUTOINCREMENT: ids are never reused, even after the stream is emptied.
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    event TEXT NOT NULL,
    job_id TEXT,
    field_key TEXT,
    field_value TEXT,
    extra_key TEXT,
    extra_value TEXT
);
-- Dedup keys: dedup id -> the job holding it, an optional expiry, and (keep_last) the latest
-- duplicate to add once that job finishes.
CREATE TABLE IF NOT EXISTS dedup (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    expires_at INTEGER,
    next_name TEXT,
    next_data TEXT,
    next_options TEXT
);
CREATE INDEX IF NOT EXISTS dedup_job ON dedup (job_id);
CREATE INDEX IF NOT EXISTS dedup_expiry ON dedup (expires_at) WHERE expires_at IS NOT NULL;
-- Job schedulers: key -> schedule (ScheduleSpec JSON), template (name, data JSON, options JSON),
-- occurrences produced, and the run time of the latest (the pending occurrence's id is
-- 'repeat:' || key || ':' || next_run).
CREATE TABLE IF NOT EXISTS schedulers (
    key TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    options TEXT NOT NULL,
    count INTEGER NOT NULL,
    next_run INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS schedulers_next ON schedulers (next_run, key);
-- Flows: a parent's children (child_key is '<queue>:<id>') in one of four buckets (0 processed,
-- 1 unprocessed, 2 failed, 3 ignored) with the child's return value (processed) or failure
-- reason (failed, ignored). Children may be in other queues (other files: see relay.rs).
CREATE TABLE IF NOT EXISTS flow_deps (
    parent_id TEXT NOT NULL,
    child_key TEXT NOT NULL,
    child_id TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    value TEXT,
    PRIMARY KEY (parent_id, child_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS flow_deps_bucket ON flow_deps (parent_id, bucket, child_key);
-- Flows across queues (relay.rs): messages to the files of other queues, written with the
-- change that causes them and deleted once delivered; and, per sender file, the last message
-- applied here (sender = '<queue>#<its flow_epoch>'), so each is applied exactly once.
CREATE TABLE IF NOT EXISTS flow_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flow_inbox (
    source TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL
) WITHOUT ROWID;
-- Per-minute metrics (jobs/metrics.rs), per kind (0 completed, 1 failed): the series' head
-- (the total, the start of its newest minute, how many minutes it holds) and the minutes that
-- have a count; the series' other minutes are 0.
CREATE TABLE IF NOT EXISTS metric_series (
    kind INTEGER PRIMARY KEY,
    count INTEGER NOT NULL,
    newest INTEGER,
    len INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS metric_minutes (
    kind INTEGER NOT NULL,
    minute INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (kind, minute)
) WITHOUT ROWID;
-- Cancel requests (cancels.rs): each active job's request, against the token of the lock it
-- was made under, and the log the workers listen to (seq ascending, pruned after a minute).
CREATE TABLE IF NOT EXISTS cancel_requests (
    job_id TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    reason TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cancel_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    job_id TEXT NOT NULL,
    reason TEXT NOT NULL
);
-- Running workers (jobs/workers.rs): each one's description (JSON), when it last heartbeated
-- and when its entry expires.
CREATE TABLE IF NOT EXISTS workers (
    id TEXT PRIMARY KEY,
    info TEXT NOT NULL,
    last_heartbeat INTEGER NOT NULL,
    expires INTEGER NOT NULL
);
";

/// Columns added since format 1 was first written, with their types (added to older files
/// when they are opened; older readers ignore them). `logs.at` is when a line was written:
/// NULL for the lines of an older file, whose time is unknown.
const ADDED_COLUMNS: [(&str, &str, &str); 4] = [
    ("events", "extra_key", "TEXT"),
    ("events", "extra_value", "TEXT"),
    ("jobs", "grp", "TEXT"),
    ("logs", "at", "INTEGER"),
];

/// Groups (`lifecycle::groups`), made after `ADDED_COLUMNS` (their indexes need `jobs.grp`, the
/// job's group, copied out of its options so it can be indexed). Ungrouped waiting jobs have
/// an index of their own, so an ungrouped claim never steps over grouped jobs; a group's
/// settings and its run state (turn, rate window) are rows keyed by its name (`''`: the
/// ungrouped jobs' turn).
const GROUP_SCHEMA: &str = "
-- Waiting jobs in claim order, the ungrouped ones first (`grp IS NOT NULL` is 0 for them): one
-- index serves the plain claim, the ungrouped jobs' turn (an equality on its first column, so
-- it never steps over grouped jobs) and the listings. It replaced `jobs_waiting` (priority,
-- ord) and a second index of the ungrouped ones: each waiting job now updates one index, as
-- before groups (benches/history/15.md).
DROP INDEX IF EXISTS jobs_waiting;
DROP INDEX IF EXISTS jobs_plain_waiting;
CREATE INDEX IF NOT EXISTS jobs_waiting_first ON jobs ((grp IS NOT NULL), priority, ord) WHERE state = 0;
CREATE INDEX IF NOT EXISTS jobs_group_waiting ON jobs (grp, priority, ord) WHERE state = 0 AND grp IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_group ON jobs (grp, state) WHERE grp IS NOT NULL;
CREATE TABLE IF NOT EXISTS group_settings (
    grp TEXT PRIMARY KEY, paused INTEGER NOT NULL, concurrency INTEGER, rate_max INTEGER,
    rate_ms INTEGER, max_size INTEGER
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_runs (
    grp TEXT PRIMARY KEY, turn INTEGER, window_start INTEGER NOT NULL DEFAULT 0,
    window_used INTEGER NOT NULL DEFAULT 0, held_until INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS group_runs_turn ON group_runs (turn) WHERE turn IS NOT NULL;
CREATE INDEX IF NOT EXISTS group_runs_held ON group_runs (held_until) WHERE held_until > 0;
";

fn storage(path: &Path, what: &str, error: impl std::fmt::Display) -> CoreError {
    CoreError::Storage(format!("{}: {what}: {error}", path.display()))
}

/// Opens (creating it if needed) the queue file at `path` for queue `queue`, in WAL mode with
/// full syncs (`open_synced` for another level). Refuses a file that is empty (0 bytes),
/// belongs to another queue, has a newer or unknown format, or fails SQLite's integrity check;
/// nothing is written in those cases.
///
/// SQLite cannot detect everything: a `-wal` that was deleted (or came from another copy of
/// the file) loses the commits it held since the last checkpoint without an error.
pub fn open(path: &Path, queue: &str) -> CoreResult<Connection> {
    open_waiting(path, queue, BUSY)
}

/// How long `open`'s connections wait for another connection's lock.
pub const BUSY: std::time::Duration = std::time::Duration::from_secs(30);

/// `open`, waiting at most `busy` for another connection's lock (here and afterwards).
pub fn open_waiting(path: &Path, queue: &str, busy: std::time::Duration) -> CoreResult<Connection> {
    open_synced(path, queue, busy, LocalSync::Full)
}

/// `open_waiting`, the connection's commits then synced as `sync` says. The schema and
/// metadata of a new or older file are written with full syncs whatever it says.
pub fn open_synced(
    path: &Path,
    queue: &str,
    busy: std::time::Duration,
    sync: LocalSync,
) -> CoreResult<Connection> {
    let conn = open_checked(path, queue, busy, sync, true)?;
    Ok(conn.expect("kept"))
}

/// What `open_synced` checks and makes, for a queue whose writer opens the file later
/// (`reopen`): a file this call made needs no second look.
pub fn check(path: &Path, queue: &str, sync: LocalSync) -> CoreResult<()> {
    open_checked(path, queue, BUSY, sync, false).map(drop)
}

/// `open_synced`; without `keep`, None when this call made the file.
fn open_checked(
    path: &Path,
    queue: &str,
    busy: std::time::Duration,
    sync: LocalSync,
    keep: bool,
) -> CoreResult<Option<Connection>> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Some(file) = dir.ancestors().find(|a| a.is_file()) {
            return Err(CoreError::InvalidConfig(format!(
                "{}: not a directory (the data directory of queue {queue:?} must be one)",
                file.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| storage(dir, "cannot create the directory", e))?;
    }
    refuse_dangling_link(path)?;
    match std::fs::metadata(path) {
        // SQLite would take an empty file for a new database and make it a new, empty queue:
        // a file that lost its contents must be refused, not silently started over.
        Ok(found) if found.len() == 0 => {
            return Err(storage(
                path,
                "refused",
                "the file is empty (0 bytes), so it is not a queue file; remove it to start a new queue",
            ))
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if create(path, queue, busy, sync)? && !keep {
                return Ok(None);
            }
        }
        Err(error) => return Err(storage(path, "cannot read", error)),
    }
    let conn = Connection::open(path).map_err(|e| unopenable(path, "cannot open", e))?;
    conn.busy_timeout(busy)
        .map_err(|e| storage(path, "cannot set busy timeout", e))?;
    // quick_check reads every page: a truncated or corrupted file is reported here, at open,
    // rather than emptied or half-read later.
    let check: String = conn
        .query_row("PRAGMA quick_check(1)", [], |row| row.get(0))
        .map_err(|e| unopenable(path, "not a readable lanemq queue file (corrupted?)", e))?;
    if check != "ok" {
        return Err(storage(path, "the queue file is corrupted", check));
    }
    check_identity(&conn, path, queue)?;
    initialise(&conn, path, queue)?;
    if sync == LocalSync::Normal {
        // Still fully synced here: every deliverer of this file's messages learns at once
        // that they may need a sync first.
        super::sync::mark_normal_opener(&conn)?;
    }
    sync.apply(&conn)
        .map_err(|e| storage(path, "cannot set synchronous", e))?;
    Ok(Some(conn))
}

/// Opens again the file of queue `queue` that `open_synced` checked and made before (its
/// writer closed it to make room): without the integrity check, which reads every page, but
/// refusing a file that is gone (no new empty database in its place) or no longer this
/// queue's.
pub fn reopen(path: &Path, queue: &str, sync: LocalSync) -> CoreResult<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn =
        Connection::open_with_flags(path, flags).map_err(|e| storage(path, "cannot open", e))?;
    conn.busy_timeout(BUSY)
        .map_err(|e| storage(path, "cannot set busy timeout", e))?;
    let name: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'queue'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| storage(path, "no longer a lanemq queue file", e))?;
    if name.as_deref() != Some(queue) {
        return Err(storage(
            path,
            "no longer this queue's file",
            format!("it holds {name:?}, not {queue:?}"),
        ));
    }
    sync.apply(&conn)
        .map_err(|e| storage(path, "cannot set synchronous", e))?;
    Ok(conn)
}

/// Refuses a queue file that is a symbolic link to nothing: opening it would create the queue
/// file wherever the link points.
fn refuse_dangling_link(path: &Path) -> CoreResult<()> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link || path.exists() {
        return Ok(());
    }
    let target = std::fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
    Err(CoreError::InvalidConfig(format!(
        "{}: a symbolic link to {target:?}, which does not exist: refused (opening it would \
         create the queue file there); remove the link or restore its target",
        path.display()
    )))
}

/// The refusal of a file SQLite could not open or read (`what`): one lanemq cannot write (a
/// read-only file, directory or filesystem: SQLite needs to write the file and its `-wal`
/// and `-shm` beside it) says so, rather than suggesting a corrupted file.
fn unopenable(path: &Path, what: &str, error: rusqlite::Error) -> CoreError {
    use rusqlite::ErrorCode::{CannotOpen, ReadOnly};
    let code = error.sqlite_error_code();
    let refused = matches!(code, Some(ReadOnly))
        || (matches!(code, Some(CannotOpen)) && !writable(path))
        || std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .is_err_and(|e| {
                e.kind() == std::io::ErrorKind::ReadOnlyFilesystem
                    || e.kind() == std::io::ErrorKind::PermissionDenied
            });
    if refused {
        return storage(
            path,
            "the queue file cannot be written (a read-only filesystem, or no write permission \
             on the file or its directory; lanemq writes the file, its -wal and its -shm)",
            error,
        );
    }
    storage(path, what, error)
}

/// Whether the directory of `path` takes new files (SQLite makes `-wal` and `-shm` there).
fn writable(path: &Path) -> bool {
    let Some(dir) = path.parent() else {
        return true;
    };
    let probe = dir.join(format!(
        ".lanemq-probe-{}-{}",
        std::process::id(),
        draft_counter()
    ));
    match std::fs::File::create(&probe) {
        Ok(_) => std::fs::remove_file(&probe).is_ok(),
        Err(_) => false,
    }
}

/// Puts the file in WAL mode with full syncs and writes the schema and metadata that are
/// missing (all of them in a new file).
fn initialise(conn: &Connection, path: &Path, queue: &str) -> CoreResult<()> {
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| storage(path, "cannot enable WAL", e))?;
    // FULL: a commit is on disk when it returns, so the schema and metadata survive even a
    // power loss (`open_synced` then sets the level the queue's own commits run at).
    LocalSync::Full
        .apply(conn)
        .map_err(|e| storage(path, "cannot set synchronous", e))?;
    // One transaction: what a file of an older version lacks is added together, one sync
    // (and an up-to-date file, which gains nothing, is not synced at all).
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| storage(path, "cannot start a transaction", e))?;
    let written = write_schema(conn, path, queue).and_then(|()| {
        conn.execute_batch("COMMIT")
            .map_err(|e| storage(path, "cannot commit the schema", e))
    });
    if written.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    written
}

/// The schema and metadata that are missing, inside `initialise`'s transaction.
fn write_schema(conn: &Connection, path: &Path, queue: &str) -> CoreResult<()> {
    conn.execute_batch(SCHEMA)
        .map_err(|e| storage(path, "cannot create the schema", e))?;
    add_columns(conn, path)?;
    for (key, value) in [
        ("format", FORMAT_VERSION.to_string()),
        ("queue", queue.to_owned()),
    ] {
        conn.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES (?1, ?2)",
            (key, value),
        )
        .map_err(|e| storage(path, "cannot write metadata", e))?;
    }
    Ok(())
}

/// Creates a new queue file at `path` whole: the file is made under another name beside it and
/// linked into place, which fails if `path` appeared meanwhile. So no process ever sees the
/// file empty, and of two processes creating it at the same moment one wins and the other
/// opens the winner's file. Returns whether this call made it (a file made for a `Normal`
/// connection is marked so, see `sync::mark_normal_opener`).
fn create(
    path: &Path,
    queue: &str,
    busy: std::time::Duration,
    sync: LocalSync,
) -> CoreResult<bool> {
    let mut draft = path.as_os_str().to_owned();
    draft.push(format!(".new-{}-{}", std::process::id(), draft_counter()));
    let draft = PathBuf::from(draft);
    let made = (|| {
        let conn = Connection::open(&draft).map_err(|e| storage(&draft, "cannot create", e))?;
        conn.busy_timeout(busy)
            .map_err(|e| storage(&draft, "cannot set busy timeout", e))?;
        // No process sees the draft, so it is written without a journal or syncs, then
        // synced once, whole, before it is linked into place: a new file took some ten
        // syncs (journal, directory, WAL, checkpoint), most of the time a new queue took.
        conn.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            .map_err(|e| storage(&draft, "cannot create", e))?;
        conn.execute_batch("BEGIN")
            .map_err(|e| storage(&draft, "cannot start a transaction", e))?;
        write_schema(&conn, &draft, queue)?;
        if sync == LocalSync::Normal {
            super::sync::mark_normal_opener(&conn)?;
        }
        conn.execute_batch("COMMIT")
            .map_err(|e| storage(&draft, "cannot commit the schema", e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| storage(&draft, "cannot enable WAL", e))?;
        // Its WAL is empty: closing leaves the file alone, the whole queue.
        conn.close()
            .map_err(|(_, e)| storage(&draft, "cannot close", e))?;
        std::fs::File::open(&draft)
            .and_then(|file| file.sync_all())
            .map_err(|e| storage(&draft, "cannot sync", e))
    })();
    let linked = made.and_then(|()| match std::fs::hard_link(&draft, path) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(storage(path, "cannot create", error)),
    });
    for leftover in ["", "-wal", "-shm"] {
        let mut file = draft.clone().into_os_string();
        file.push(leftover);
        let _ = std::fs::remove_file(file);
    }
    linked
}

/// Tells apart the drafts of one process.
fn draft_counter() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Adds the `ADDED_COLUMNS` that a file written before them lacks.
fn add_columns(conn: &Connection, path: &Path) -> CoreResult<()> {
    for (table, column, kind) in ADDED_COLUMNS {
        let present: i64 = conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2",
                [table, column],
                |r| r.get(0),
            )
            .map_err(|e| storage(path, "cannot read the schema", e))?;
        if present == 0 {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}"))
                .map_err(|e| storage(path, "cannot upgrade the schema", e))?;
            if column == "grp" {
                // Jobs written before the column carry their group in their options only.
                conn.execute_batch(
                    "UPDATE jobs SET grp = json_extract(options, '$.group') \
                     WHERE json_extract(options, '$.group') IS NOT NULL",
                )
                .map_err(|e| storage(path, "cannot upgrade the schema", e))?;
            }
        }
    }
    conn.execute_batch(GROUP_SCHEMA)
        .map_err(|e| storage(path, "cannot create the schema", e))?;
    Ok(())
}

/// Refuses a file made for another queue or by a newer (or unknown) lanemq format.
fn check_identity(conn: &Connection, path: &Path, queue: &str) -> CoreResult<()> {
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| storage(path, "cannot read the schema", e))?
        > 0;
    if !has_meta {
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| storage(path, "cannot read the schema", e))?;
        if tables > 0 {
            return Err(storage(
                path,
                "not a lanemq queue file",
                "it holds other tables",
            ));
        }
        return Ok(());
    }
    let read = |key: &str| -> CoreResult<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| storage(path, "cannot read metadata", e))
    };
    let format = read("format")?;
    match format.as_deref().map(str::parse::<i64>) {
        Some(Ok(version)) if version == FORMAT_VERSION => {}
        Some(Ok(version)) if version > FORMAT_VERSION => {
            return Err(CoreError::InvalidConfig(format!(
                "{}: written by a newer lanemq (format {version}; this one reads {FORMAT_VERSION})",
                path.display()
            )))
        }
        _ => {
            return Err(CoreError::InvalidConfig(format!(
                "{}: unknown queue file format {} (expected {FORMAT_VERSION})",
                path.display(),
                format.map_or("(none)".to_owned(), |f| format!("{f:?}"))
            )))
        }
    }
    match read("queue")? {
        Some(name) if name == queue => Ok(()),
        Some(name) => Err(CoreError::InvalidConfig(format!(
            "{}: holds queue {name:?}, not {queue:?}",
            path.display()
        ))),
        None => Err(storage(path, "metadata without a queue name", "corrupted?")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_from_before_dedup_and_flows_gets_the_new_columns_and_tables() {
        let path = std::env::temp_dir().join(format!(
            "lanemq-schema-{}-{:?}.sqlite3",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
                 INSERT INTO meta VALUES ('format', '1'), ('queue', 'q');
                 CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, ts INTEGER NOT NULL,
                     event TEXT NOT NULL, job_id TEXT, field_key TEXT, field_value TEXT);
                 INSERT INTO events (ts, event, job_id) VALUES (1, 'waiting', '1');",
            )
            .unwrap();
        }
        let conn = open(&path, "q").unwrap();
        let columns: i64 = conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info('events') \
                 WHERE name IN ('extra_key', 'extra_value')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(columns, 2);
        let kept: i64 = conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1, "existing events are kept");
        conn.execute("INSERT INTO dedup (id, job_id) VALUES ('d', '1')", [])
            .unwrap();
        conn.execute(
            "INSERT INTO schedulers (key, spec, name, data, options, count, next_run) \
             VALUES ('k', '{\"every\":1000}', 'n', 'null', '{}', 1, 5)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO flow_deps (parent_id, child_key, child_id, bucket) \
             VALUES ('p', 'q:c', 'c', 1)",
            [],
        )
        .unwrap();
        drop(conn);
        open(&path, "q").expect("reopening an upgraded file");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }

    #[test]
    fn the_queue_connection_takes_its_sync_level_and_other_openers_stay_full() {
        let path = std::env::temp_dir().join(format!(
            "lanemq-sync-{}-{:?}.sqlite3",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        let level = |conn: &Connection| -> i64 {
            conn.query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap()
        };
        let normal = open_synced(&path, "q", BUSY, LocalSync::Normal).unwrap();
        assert_eq!(level(&normal), 1, "NORMAL");
        // A flow's link or reservation in this file, opened by another queue's writer.
        let link = open(&path, "q").unwrap();
        assert_eq!(level(&link), 2, "FULL");
        drop((normal, link));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    }
}
