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
//! (`relay`: a message is made durable in its sender before it is delivered; deliveries and
//! id reservations in other files are fully synced), because those steps pair commits of two
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

    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Normal => "normal",
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

/// Makes every commit `conn` made so far durable, when it runs with `Normal` (a `Full`
/// connection's commits are already): one fully synced commit of `mark` under the meta key
/// `key`, since syncing the WAL at that commit syncs the frames of the commits before it.
/// `mark` must differ from the value last written there whenever there is something new to
/// sync (SQLite writes nothing, so syncs nothing, for an unchanged row); an unchanged mark
/// means the commits up to it were synced by the write that set it.
pub fn make_durable(conn: &Connection, sync: LocalSync, key: &str, mark: &str) -> CoreResult<()> {
    if sync == LocalSync::Full {
        return Ok(());
    }
    let storage =
        |e: rusqlite::Error| CoreError::Storage(format!("cannot sync the queue file: {e}"));
    LocalSync::Full.apply(conn).map_err(storage)?;
    let written = super::rows::set_meta(conn, key, Some(mark));
    let restored = sync.apply(conn).map_err(storage);
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
    fn make_durable_leaves_the_connection_at_its_level() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            .unwrap();
        LocalSync::Normal.apply(&conn).unwrap();
        make_durable(&conn, LocalSync::Normal, "synced", "1").unwrap();
        let level: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(level, 1, "NORMAL is 1");
        let mark: String = conn
            .query_row("SELECT value FROM meta WHERE key = 'synced'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(mark, "1");
    }
}
