//! The row steps the local store's operations share: the clock, the stored lanes, a lane's
//! front and back, wakes, outcomes and dead letters.

use rusqlite::{params, OptionalExtension, Transaction};

use super::schema::sql;
use super::spec::LaneSpec;
use crate::error::{CoreError, CoreResult};

/// The error a recovered command that ran twice fails with for good.
pub const LEASE_EXPIRED: &str =
    "LeaseExpiredError: the process running it stopped renewing its lease";

/// How many dead letters a recovery keeps when no `fail` said (LocalStorage's default).
const DEFAULT_LETTER_LIMIT: i64 = 1000;

/// The store's clock: the system's, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub fn setting(tx: &Transaction<'_>, key: &str) -> CoreResult<Option<String>> {
    tx.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
        r.get(0)
    })
    .optional()
    .map_err(sql)
}

pub fn set_setting(tx: &Transaction<'_>, key: &str, value: &str) -> CoreResult<()> {
    tx.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )
    .map_err(sql)?;
    Ok(())
}

/// The stored lanes and global cap; an error when `setup` has not run.
pub fn stored_lanes(tx: &Transaction<'_>) -> CoreResult<(Vec<LaneSpec>, Option<u32>)> {
    let Some(lanes) = setting(tx, "lanes")? else {
        return Err(CoreError::InvalidConfig(
            "the lanes store has no lanes yet: call setup first".into(),
        ));
    };
    let lanes: Vec<LaneSpec> =
        serde_json::from_str(&lanes).map_err(|e| CoreError::Storage(e.to_string()))?;
    let global_max = setting(tx, "global_max")?.and_then(|v| v.parse().ok());
    Ok((lanes, global_max))
}

/// The lane count, or 0 before `setup`.
pub fn lane_count(tx: &Transaction<'_>) -> CoreResult<usize> {
    Ok(match setting(tx, "lanes")? {
        Some(_) => stored_lanes(tx)?.0.len(),
        None => 0,
    })
}

/// A seq that puts a command at the back of every lane (seqs only order within a lane).
pub fn back_seq(tx: &Transaction<'_>) -> CoreResult<i64> {
    tx.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM commands", [], |r| {
        r.get(0)
    })
    .map_err(sql)
}

/// A seq before every pending command of `lane`.
pub fn front_seq(tx: &Transaction<'_>, lane: i64) -> CoreResult<i64> {
    tx.query_row(
        "SELECT COALESCE(MIN(seq), 0) - 1 FROM commands WHERE state = 'pending' AND lane = ?1",
        [lane],
        |r| r.get(0),
    )
    .map_err(sql)
}

/// Wakes every live process.
pub fn wake_all(tx: &Transaction<'_>) -> CoreResult<()> {
    tx.execute(
        "INSERT INTO wakes (pid, count) SELECT pid, 1 FROM processes WHERE true
         ON CONFLICT (pid) DO UPDATE SET count = count + 1",
        [],
    )
    .map_err(sql)?;
    Ok(())
}

pub fn wake(tx: &Transaction<'_>, pid: &str) -> CoreResult<()> {
    tx.execute(
        "INSERT INTO wakes (pid, count) VALUES (?1, 1)
         ON CONFLICT (pid) DO UPDATE SET count = count + 1",
        [pid],
    )
    .map_err(sql)?;
    Ok(())
}

/// The outcome of command `id` for `submitter` (who is woken).
pub fn push_outcome(
    tx: &Transaction<'_>,
    submitter: &str,
    id: i64,
    ok: bool,
    text: &str,
) -> CoreResult<()> {
    tx.execute(
        "INSERT INTO outcomes (submitter, id, ok, text) VALUES (?1, ?2, ?3, ?4)",
        params![submitter, id, ok, text],
    )
    .map_err(sql)?;
    wake(tx, submitter)
}

/// A dead letter, then the oldest dropped beyond `limit` (the last `fail`'s limit is kept
/// for recoveries, which are told none).
pub fn push_letter(
    tx: &Transaction<'_>,
    letter: (i64, &str, &str, &str, i64),
    limit: Option<i64>,
) -> CoreResult<()> {
    let limit = match limit {
        Some(limit) => {
            set_setting(tx, "letter_limit", &limit.to_string())?;
            limit
        }
        None => setting(tx, "letter_limit")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_LETTER_LIMIT),
    };
    let (id, command_type, lane_id, error, attempts) = letter;
    let failed_at = now_ms();
    tx.execute(
        "INSERT INTO letters (command_id, command_type, lane_id, error, attempts, failed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![id, command_type, lane_id, error, attempts, failed_at],
    )
    .map_err(sql)?;
    tx.execute(
        "DELETE FROM letters WHERE seq NOT IN
         (SELECT seq FROM letters ORDER BY seq DESC LIMIT ?1)",
        [limit],
    )
    .map_err(sql)?;
    Ok(())
}

/// The lane id of lane number `lane`.
pub fn lane_id(tx: &Transaction<'_>, lane: i64) -> CoreResult<String> {
    let (lanes, _) = stored_lanes(tx)?;
    Ok(usize::try_from(lane)
        .ok()
        .and_then(|i| lanes.get(i))
        .map_or_else(|| lane.to_string(), |spec| spec.lane_id.clone()))
}
