//! What a local claim loads for the shared plan: the live processes and who can run each
//! pending command (`runner`), each lane's pending commands (`pending`), the running counts
//! and the rate buckets; and how the claimed commands' tokens are saved (`spend`).

use std::collections::{HashMap, HashSet};

use rusqlite::{params, Transaction};

use super::plan::{Pending, Runner};
use super::schema::sql;
use super::spec::ms_to_micros;
use crate::error::{CoreError, CoreResult};
use crate::lanes::rate::TokenBucket;
use crate::lanes::LaneConfig;

/// A live process as the plan needs it: its names and whether it is idle.
pub(super) struct Live {
    names: HashSet<String>,
    idle: bool,
}

pub(super) fn live_processes(tx: &Transaction<'_>) -> CoreResult<HashMap<String, Live>> {
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
pub(super) fn runner(
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
pub(super) fn pending(
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
pub(super) fn running(
    tx: &Transaction<'_>,
    pid: &str,
    lanes: usize,
) -> CoreResult<(Vec<u32>, Vec<u32>)> {
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
pub(super) fn buckets(
    tx: &Transaction<'_>,
    configs: &[LaneConfig],
) -> CoreResult<Vec<Option<TokenBucket>>> {
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
pub(super) fn spend(
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
