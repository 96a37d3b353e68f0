//! The recovery of the processes whose lease expired, which the local store's `claim`, `renew`
//! and `enqueue` run first: a held named command goes back to the front of its lane once (the
//! second time it fails for good), the process's callables are dropped, the process is
//! forgotten and every live process woken.

use rusqlite::{params, Transaction};

use super::local_rows::{front_seq, lane_id, push_letter, push_outcome, wake_all, LEASE_EXPIRED};
use super::schema::sql;
use crate::error::CoreResult;

/// How long a recovered process's lost ids wait for its `renew` (one that renews later is
/// told nothing, but its outcomes are refused all the same: the ids are advice).
const LOST_KEPT_MS: i64 = 3_600_000;

/// Recovers every process whose lease ended by `now`: a held named command goes back to the
/// front of its lane once, the second time it fails for good; its callables are dropped.
pub fn recover(tx: &Transaction<'_>, now: i64) -> CoreResult<()> {
    let expired: Vec<String> = {
        let mut stmt = tx
            .prepare_cached("SELECT pid FROM processes WHERE lease_until <= ?1")
            .map_err(sql)?;
        let pids = stmt.query_map([now], |r| r.get(0)).map_err(sql)?;
        pids.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    for pid in &expired {
        recover_one(tx, pid, now)?;
    }
    // A process that never renews again (it crashed) would leave its lost ids for ever.
    tx.execute(
        "DELETE FROM lost WHERE lost_at < ?1",
        [now.saturating_sub(LOST_KEPT_MS)],
    )
    .map_err(sql)?;
    if !expired.is_empty() {
        wake_all(tx)?;
    }
    Ok(())
}

fn recover_one(tx: &Transaction<'_>, pid: &str, now: i64) -> CoreResult<()> {
    type Held = (i64, i64, Option<String>, String, i64, bool);
    let held: Vec<Held> = {
        // Newest first, so that each going to the front leaves the oldest in front.
        let mut stmt = tx
            .prepare_cached(
                "SELECT id, lane, name, submitter, attempts, recovered FROM commands
                 WHERE holder = ?1 AND state = 'running' ORDER BY id DESC",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map([pid], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    for (id, lane, name, submitter, attempts, recovered) in held {
        tx.execute(
            "INSERT INTO lost (pid, id, lost_at) VALUES (?1, ?2, ?3)",
            params![pid, id, now],
        )
        .map_err(sql)?;
        match name {
            Some(name) if recovered => {
                delete(tx, id)?;
                push_outcome(tx, &submitter, id, false, LEASE_EXPIRED)?;
                let lane_id = lane_id(tx, lane)?;
                push_letter(tx, (id, &name, &lane_id, LEASE_EXPIRED, attempts), None)?;
            }
            Some(_) => {
                tx.execute(
                    "UPDATE commands SET state = 'pending', holder = NULL, recovered = 1,
                         seq = ?2 WHERE id = ?1",
                    params![id, front_seq(tx, lane)?],
                )
                .map_err(sql)?;
            }
            None => delete(tx, id)?,
        }
    }
    tx.execute("DELETE FROM commands WHERE owner = ?1", [pid])
        .map_err(sql)?;
    // Forgotten, wake counter and all (a `renew` that joins it again starts a new one).
    for table in ["processes", "wakes"] {
        tx.execute(&format!("DELETE FROM {table} WHERE pid = ?1"), [pid])
            .map_err(sql)?;
    }
    Ok(())
}

pub(super) fn delete(tx: &Transaction<'_>, id: i64) -> CoreResult<()> {
    tx.execute("DELETE FROM commands WHERE id = ?1", [id])
        .map_err(sql)?;
    Ok(())
}
