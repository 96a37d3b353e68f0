//! The local store's live processes: `join`, `renew` (which recovers first, and tells a
//! recovered process the ids it lost) and `leave`. A process's lease covers every command it
//! holds; `idle` feeds the turns of the shared plan.

use rusqlite::{params, Transaction};

use super::local_recover::recover;
use super::local_rows::{now_ms, wake_all};
use super::local_store::{wake_count, LocalLaneStore};
use super::schema::sql;
use crate::error::{CoreError, CoreResult};

impl LocalLaneStore {
    /// Makes `pid` a live process running `names`, idle until a claim takes something.
    pub fn join(&self, pid: &str, names: &[String], lease_ms: i64) -> CoreResult<()> {
        check_lease(lease_ms)?;
        let names = names_json(names)?;
        let count = self.write(|tx| {
            upsert(tx, pid, &names, lease_ms)?;
            wake_count(tx, pid)
        })?;
        // Wakes from before it joined are not for this process's first wait.
        self.saw(pid, count);
        Ok(())
    }

    /// Extends `pid`'s lease (joining it again if it was recovered); returns the ids a
    /// recovery took from it since its previous renewal.
    pub fn renew(&self, pid: &str, names: &[String], lease_ms: i64) -> CoreResult<Vec<i64>> {
        check_lease(lease_ms)?;
        let names = names_json(names)?;
        let (lost, rejoined) = self.write(|tx| {
            recover(tx, now_ms())?;
            let rejoined = upsert(tx, pid, &names, lease_ms)?.then(|| wake_count(tx, pid));
            let mut stmt = tx
                .prepare_cached("DELETE FROM lost WHERE pid = ?1 RETURNING id")
                .map_err(sql)?;
            let mut lost = stmt
                .query_map([pid], |r| r.get::<_, i64>(0))
                .map_err(sql)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sql)?;
            lost.sort_unstable();
            Ok((lost, rejoined.transpose()?))
        })?;
        // Its recovery deleted its wake counter: the new one starts afresh.
        if let Some(count) = rejoined {
            self.saw(pid, count);
        }
        Ok(lost)
    }

    /// Forgets `pid` and drops its pending callables.
    pub fn leave(&self, pid: &str) -> CoreResult<()> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM commands WHERE owner = ?1 AND state != 'running'",
                [pid],
            )
            .map_err(sql)?;
            for table in ["processes", "lost", "wakes"] {
                tx.execute(&format!("DELETE FROM {table} WHERE pid = ?1"), [pid])
                    .map_err(sql)?;
            }
            // Commands owed to it (by turns, or its names) may now be another's to run.
            wake_all(tx)
        })?;
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(pid);
        Ok(())
    }
}

/// Makes `pid` live with `names` (JSON) and a lease of `lease_ms` from now; true when it was
/// not live (a new process, or one recovered since: idle, as it has claimed nothing yet).
fn upsert(tx: &Transaction<'_>, pid: &str, names: &str, lease_ms: i64) -> CoreResult<bool> {
    let lease_until = now_ms().saturating_add(lease_ms);
    let renewed = tx
        .execute(
            "UPDATE processes SET names = ?2, lease_until = ?3 WHERE pid = ?1",
            params![pid, names, lease_until],
        )
        .map_err(sql)?;
    if renewed > 0 {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO processes (pid, names, lease_until, idle) VALUES (?1, ?2, ?3, 1)",
        params![pid, names, lease_until],
    )
    .map_err(sql)?;
    Ok(true)
}

fn names_json(names: &[String]) -> CoreResult<String> {
    serde_json::to_string(names).map_err(|e| CoreError::Storage(e.to_string()))
}

fn check_lease(lease_ms: i64) -> CoreResult<()> {
    if lease_ms < 1 {
        return Err(CoreError::InvalidConfig(format!(
            "invalid lease_ms: {lease_ms} (must be at least 1)"
        )));
    }
    Ok(())
}
