//! The local store's `claim` (due retries back to their lanes, then the shared plan over the
//! file's lanes) and the recovery of expired processes that `claim`, `renew` and `enqueue`
//! run first.

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Transaction};

use super::local_rows::{
    back_seq, front_seq, lane_id, now_ms, push_letter, push_outcome, stored_lanes, wake_all,
    LEASE_EXPIRED,
};
use super::local_store::LocalLaneStore;
use super::plan::{plan, Pending, PlanLane, Runner};
use super::schema::sql;
use super::spec::{configs, ms_to_micros};
use crate::error::{CoreError, CoreResult};
use crate::lanes::capacity::LocalCapacity;
use crate::lanes::rate::TokenBucket;
use crate::lanes::LaneConfig;

/// (id, lane index, name, payload, attempt, submitter): a command a claim gave its process.
pub type Claimed = (i64, i64, Option<String>, Option<String>, i64, String);

/// A live process as the plan needs it: its names and whether it is idle.
struct Live {
    names: HashSet<String>,
    idle: bool,
}

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
        recover_one(tx, pid)?;
    }
    if !expired.is_empty() {
        wake_all(tx)?;
    }
    Ok(())
}

fn recover_one(tx: &Transaction<'_>, pid: &str) -> CoreResult<()> {
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
            "INSERT INTO lost (pid, id) VALUES (?1, ?2)",
            params![pid, id],
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
    tx.execute("DELETE FROM processes WHERE pid = ?1", [pid])
        .map_err(sql)?;
    Ok(())
}

pub(super) fn delete(tx: &Transaction<'_>, id: i64) -> CoreResult<()> {
    tx.execute("DELETE FROM commands WHERE id = ?1", [id])
        .map_err(sql)?;
    Ok(())
}

/// Moves the retries due by `now` to the back of their lanes, oldest due first.
fn requeue_due(tx: &Transaction<'_>, now: i64) -> CoreResult<()> {
    let due: Vec<i64> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT id FROM commands WHERE state = 'retry' AND due_at <= ?1
                 ORDER BY due_at, id",
            )
            .map_err(sql)?;
        let ids = stmt.query_map([now], |r| r.get(0)).map_err(sql)?;
        ids.collect::<rusqlite::Result<_>>().map_err(sql)?
    };
    for id in due {
        // It waits in its lane again from now (its boost starts over).
        tx.execute(
            "UPDATE commands SET state = 'pending', seq = ?2, queued_at = ?3, due_at = NULL
             WHERE id = ?1",
            params![id, back_seq(tx)?, now],
        )
        .map_err(sql)?;
    }
    Ok(())
}

fn live_processes(tx: &Transaction<'_>) -> CoreResult<HashMap<String, Live>> {
    let mut stmt = tx
        .prepare_cached("SELECT pid, names, idle FROM processes")
        .map_err(sql)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, bool>(2)?,
            ))
        })
        .map_err(sql)?;
    let mut live = HashMap::new();
    for row in rows {
        let (pid, names, idle) = row.map_err(sql)?;
        let names: Vec<String> =
            serde_json::from_str(&names).map_err(|e| CoreError::Storage(e.to_string()))?;
        live.insert(
            pid,
            Live {
                names: names.into_iter().collect(),
                idle,
            },
        );
    }
    Ok(live)
}

/// Who can run a command of `name` or owned by `owner`, seen from `pid`.
fn runner(
    live: &HashMap<String, Live>,
    pid: &str,
    name: Option<&str>,
    owner: Option<&str>,
) -> Runner {
    if let Some(owner) = owner {
        return if owner == pid {
            Runner::Me { idle_other: false }
        } else if live.contains_key(owner) {
            Runner::Other
        } else {
            Runner::Nobody
        };
    }
    let name = name.unwrap_or_default();
    let registered = |p: &Live| p.names.contains(name);
    if live.get(pid).is_some_and(registered) {
        let idle_other = live
            .iter()
            .any(|(other, p)| other != pid && p.idle && registered(p));
        Runner::Me { idle_other }
    } else if live.values().any(registered) {
        Runner::Other
    } else {
        Runner::Nobody
    }
}

/// Lane `lane`'s pending commands in FIFO order, each marked by `runner`, up to the first
/// `free` that someone can run: no more can start in one claim, and nobody's are left out
/// (they block nothing), so a long lane costs a claim only what it can start.
fn pending(
    tx: &Transaction<'_>,
    lane: usize,
    free: u32,
    now: i64,
    runner: impl Fn(Option<&str>, Option<&str>) -> Runner,
) -> CoreResult<Vec<Pending>> {
    let mut found = Vec::new();
    if free == 0 {
        return Ok(found);
    }
    let mut stmt = tx
        .prepare_cached(
            "SELECT id, name, owner, queued_at FROM commands
             WHERE state = 'pending' AND lane = ?1 ORDER BY seq",
        )
        .map_err(sql)?;
    let mut rows = stmt.query([lane as i64]).map_err(sql)?;
    while let Some(row) = rows.next().map_err(sql)? {
        let name: Option<String> = row.get(1).map_err(sql)?;
        let owner: Option<String> = row.get(2).map_err(sql)?;
        let runner = runner(name.as_deref(), owner.as_deref());
        if runner == Runner::Nobody {
            continue;
        }
        let queued_at: i64 = row.get(3).map_err(sql)?;
        found.push(Pending {
            id: row.get(0).map_err(sql)?,
            waited: ms_to_micros(u64::try_from(now - queued_at).unwrap_or(0)),
            runner,
        });
        if found.len() >= free as usize {
            break;
        }
    }
    Ok(found)
}

/// Per lane: how many commands run (across processes) and how many `pid` holds.
fn running(tx: &Transaction<'_>, pid: &str, lanes: usize) -> CoreResult<(Vec<u32>, Vec<u32>)> {
    let mut active = vec![0; lanes];
    let mut mine = vec![0; lanes];
    let mut stmt = tx
        .prepare_cached("SELECT lane, holder FROM commands WHERE state = 'running'")
        .map_err(sql)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(sql)?;
    for row in rows {
        let (lane, holder) = row.map_err(sql)?;
        if let Some(lane) = usize::try_from(lane).ok().filter(|&l| l < lanes) {
            active[lane] += 1;
            if holder == pid {
                mine[lane] += 1;
            }
        }
    }
    Ok((active, mine))
}

/// Each rate-limited lane's bucket as saved (None: never saved, a full one).
fn buckets(tx: &Transaction<'_>, configs: &[LaneConfig]) -> CoreResult<Vec<Option<TokenBucket>>> {
    let mut saved = vec![None; configs.len()];
    let mut stmt = tx
        .prepare_cached("SELECT lane, units, updated FROM rates")
        .map_err(sql)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .map_err(sql)?;
    for row in rows {
        let (lane, units, updated) = row.map_err(sql)?;
        let Some(lane) = usize::try_from(lane).ok().filter(|&l| l < configs.len()) else {
            continue;
        };
        if let (Some(limit), Ok(units)) = (&configs[lane].rate_limit, units.parse::<u128>()) {
            saved[lane] = Some(TokenBucket::restored(
                limit,
                units,
                u64::try_from(updated).unwrap_or(0),
            ));
        }
    }
    Ok(saved)
}

/// Spends `count` tokens of lane `lane`'s saved bucket at `now` (microseconds) and saves it.
fn spend(
    tx: &Transaction<'_>,
    lane: usize,
    config: &LaneConfig,
    saved: Option<TokenBucket>,
    count: usize,
    now: u64,
) -> CoreResult<()> {
    let Some(limit) = &config.rate_limit else {
        return Ok(());
    };
    let mut bucket = saved.unwrap_or_else(|| TokenBucket::new(limit, now));
    for _ in 0..count {
        bucket.take(now);
    }
    let (units, updated) = bucket.saved();
    tx.execute(
        "INSERT INTO rates (lane, units, updated) VALUES (?1, ?2, ?3)
         ON CONFLICT (lane) DO UPDATE SET units = excluded.units, updated = excluded.updated",
        params![lane as i64, units.to_string(), updated as i64],
    )
    .map_err(sql)?;
    Ok(())
}

impl LocalLaneStore {
    /// Recovers, requeues due retries, then claims at most `max_n` commands for `pid`; also
    /// the milliseconds until a retry falls due or a rate token comes (None: nothing timed).
    pub fn claim(&self, pid: &str, max_n: i64) -> CoreResult<(Vec<Claimed>, Option<i64>)> {
        let max_n = usize::try_from(max_n).map_err(|_| {
            CoreError::InvalidConfig(format!("invalid max_n: {max_n} (must be at least 0)"))
        })?;
        self.write(|tx| {
            let now = now_ms();
            recover(tx, now)?;
            requeue_due(tx, now)?;
            let (specs, global_max) = stored_lanes(tx)?;
            let configs = configs(&specs)?;
            let live = live_processes(tx)?;
            if !live.contains_key(pid) {
                return Ok((Vec::new(), None));
            }
            let now_us = ms_to_micros(u64::try_from(now).unwrap_or(0));
            let (active, mine) = running(tx, pid, configs.len())?;
            let mut lanes: Vec<PlanLane> = configs
                .iter()
                .zip(&mine)
                .map(|(config, &held_by_me)| PlanLane {
                    config: config.clone(),
                    pending: Vec::new(),
                    held_by_me,
                })
                .collect();
            for (index, lane) in lanes.iter_mut().enumerate() {
                let free = lane.config.max_concurrency.saturating_sub(active[index]);
                lane.pending = pending(tx, index, free, now, |name, owner| {
                    runner(&live, pid, name, owner)
                })?;
            }
            let saved = buckets(tx, &configs)?;
            let mut capacity =
                LocalCapacity::loaded(&configs, global_max, &active, saved.clone(), now_us);
            let decided = plan(lanes, &mut capacity, max_n, now_us);
            let mut spent = vec![0; configs.len()];
            let mut claimed = Vec::with_capacity(decided.claimed.len());
            for &(lane, id) in &decided.claimed {
                spent[lane] += 1;
                claimed.push(
                    tx.query_row(
                        "UPDATE commands SET state = 'running', holder = ?2,
                             attempts = attempts + 1 WHERE id = ?1
                         RETURNING id, lane, name, payload, attempts, submitter",
                        params![id, pid],
                        |r| {
                            Ok((
                                r.get(0)?,
                                r.get(1)?,
                                r.get(2)?,
                                r.get(3)?,
                                r.get(4)?,
                                r.get(5)?,
                            ))
                        },
                    )
                    .map_err(sql)?,
                );
            }
            for (lane, ((config, bucket), count)) in
                configs.iter().zip(saved).zip(spent).enumerate()
            {
                if count > 0 {
                    spend(tx, lane, config, bucket, count, now_us)?;
                }
            }
            tx.execute(
                "UPDATE processes SET idle = ?2 WHERE pid = ?1",
                params![pid, claimed.is_empty()],
            )
            .map_err(sql)?;
            Ok((claimed, timed_wait(tx, now, decided.token_wait)?))
        })
    }
}

/// The milliseconds until the next retry falls due or `token_wait` (microseconds) passes.
fn timed_wait(tx: &Transaction<'_>, now: i64, token_wait: Option<u64>) -> CoreResult<Option<i64>> {
    let next_due: Option<i64> = tx
        .query_row(
            "SELECT MIN(due_at) FROM commands WHERE state = 'retry'",
            [],
            |r| r.get(0),
        )
        .map_err(sql)?;
    let retry = next_due.map(|due| (due - now).max(1));
    let token = token_wait.map(|us| i64::try_from(us.div_ceil(1_000)).unwrap_or(i64::MAX));
    Ok(match (retry, token) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}
