//! How hard a local queue's commits are pushed to disk (`LocalJobQueue(sync=...)`).
//!
//! The file is always in WAL mode. `Full` syncs the WAL at every commit: an acknowledged change
//! survives a power loss. `Normal` (SQLite's `synchronous=NORMAL`) leaves the commit in the OS
//! page cache and syncs only at checkpoints: a killed process loses nothing acknowledged (the
//! kernel still writes the page cache out), an OS crash or power loss may lose the newest
//! commits, whole ones, and the file stays consistent.
//!
//! The setting applies to the queue's own connection, the one every operation of this process
//! commits through. The steps of a flow across files stay fully synced whatever it says
//! (`relay`: in a file a `Normal` connection ever opened, the outbox's messages are made
//! durable before they are delivered, by whichever process delivers them; deliveries and id
//! reservations in other files are fully synced), because those steps pair commits of two
//! files, and a machine crash that kept one of a pair and lost the other would break a flow
//! for good (a parent waiting for a child that never comes, a message applied under a number
//! its sender then reuses), where losing a whole commit of one file only re-runs work.

use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LocalSync {
    #[default]
    Full,
    Normal,
}

impl LocalSync {
    /// `"full"` or `"normal"`; anything else is refused, named.
    pub fn parse(value: &str) -> CoreResult<Self> {
        match value {
            "full" => Ok(Self::Full),
            "normal" => Ok(Self::Normal),
            other => Err(CoreError::InvalidConfig(format!(
                "invalid sync: {other:?} (must be \"full\" or \"normal\")"
            ))),
        }
    }

    fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }

    /// Sets `conn`'s commits to this level (outside a transaction: SQLite refuses the change
    /// inside one).
    pub fn apply(self, conn: &Connection) -> rusqlite::Result<()> {
        conn.pragma_update(None, "synchronous", self.pragma())
    }
}

/// Set (once, fully synced) in a file that a `Normal` connection opened: from then on its
/// outbox may hold unsynced messages, whichever process delivers them.
pub const NORMAL_OPENED: &str = "normal_sync_opened";
/// The newest outbox message `sync_outbox` made durable.
const OUTBOX_SYNCED: &str = "flow_synced";

/// Records in `conn`'s file that a `Normal` connection opens it (a no-op when recorded).
pub fn mark_normal_opener(conn: &Connection) -> CoreResult<()> {
    if super::rows::meta(conn, NORMAL_OPENED)?.is_none() {
        super::rows::set_meta(conn, NORMAL_OPENED, Some("1"))?;
    }
    Ok(())
}

/// Before messages in `conn`'s outbox (the newest numbered `last`) are delivered: makes every
/// commit in the file so far durable, when a `Normal` connection may have written them (any
/// process's: the outbox is the file's). One fully synced commit of `last` under a meta key
/// does it, since syncing the WAL at a commit syncs the frames of every commit before it, by
/// any connection. An unchanged mark writes nothing (SQLite skips an identical row), and needs
/// nothing: the commits up to it were synced by the write that set it. `level` is the
/// connection's own level, restored afterwards.
pub fn sync_outbox(conn: &Connection, level: LocalSync, last: i64) -> CoreResult<()> {
    if super::rows::meta(conn, NORMAL_OPENED)?.is_none() {
        return Ok(()); // every commit in this file was fully synced
    }
    let storage =
        |e: rusqlite::Error| CoreError::Storage(format!("cannot sync the queue file: {e}"));
    LocalSync::Full.apply(conn).map_err(storage)?;
    let written = super::rows::set_meta(conn, OUTBOX_SYNCED, Some(&last.to_string()));
    let restored = level.apply(conn).map_err(storage);
    written.and(restored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_two_levels_and_names_a_bad_one() {
        assert_eq!(LocalSync::parse("full").unwrap(), LocalSync::Full);
        assert_eq!(LocalSync::parse("normal").unwrap(), LocalSync::Normal);
        let error = LocalSync::parse("fast").unwrap_err().to_string();
        assert!(error.contains("\"fast\""), "{error}");
        assert!(LocalSync::parse("FULL").is_err());
    }

    #[test]
    fn sync_outbox_leaves_the_connection_at_its_level() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            .unwrap();
        let mark = |conn: &Connection| -> Option<String> {
            super::super::rows::meta(conn, OUTBOX_SYNCED).unwrap()
        };
        sync_outbox(&conn, LocalSync::Full, 1).unwrap();
        assert_eq!(mark(&conn), None, "no normal opener: nothing to sync");
        mark_normal_opener(&conn).unwrap();
        LocalSync::Normal.apply(&conn).unwrap();
        sync_outbox(&conn, LocalSync::Normal, 7).unwrap();
        let level: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(level, 1, "NORMAL is 1");
        assert_eq!(mark(&conn).as_deref(), Some("7"));
    }
}
