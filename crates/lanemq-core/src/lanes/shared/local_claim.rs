//! The local store's `claim`: recovery of expired processes (`local_recover`), due retries back
//! to the back of their lanes, then the shared plan over what `local_inputs` loads, applied.

use rusqlite::{params, Transaction};

use super::local_inputs::{buckets, live_processes, pending, runner, running, spend};
use super::local_recover::recover;
use super::local_rows::{back_seq, now_ms, stored_lanes};
use super::local_store::LocalLaneStore;
use super::plan::{plan, PlanLane};
use super::schema::sql;
use super::spec::{configs, ms_to_micros};
use crate::error::{CoreError, CoreResult};
use crate::lanes::capacity::LocalCapacity;

/// (id, lane index, name, payload, attempt, submitter): a command a claim gave its process.
pub type Claimed = (i64, i64, Option<String>, Option<String>, i64, String);

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
            // Idle: it asked for work and got none. A claim of 0 is a busy process's: were it
            // idle, the turns would keep leaving it commands it does not come for.
            tx.execute(
                "UPDATE processes SET idle = ?2 WHERE pid = ?1",
                params![pid, claimed.is_empty() && max_n > 0],
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
