//! The SQLite file as the `GroupStorage` of `lifecycle::groups`: `GroupRows`, over the
//! connection alone (so a job's deletion, in `ops`, syncs its group too). Everything lives in
//! the file, read and written in the operation's transaction, so processes sharing the file
//! share the turns, the active counts and the rate windows. A group's waiting head is the
//! first row of `jobs_group_waiting`; its active count a count over `jobs_group` (bounded by
//! its concurrency when it has one); its settings a `group_settings` row; its turn and rate
//! window a `group_runs` row; the defaults the `group_defaults` meta value.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::contract::GroupLimits;
use crate::jobs::lifecycle::groups::merged;
use crate::jobs::lifecycle::{GroupSettings, GroupState, GroupStorage, UNGROUPED};
use crate::jobs::model::{Job, JobState, Millis};

use super::group_settings::{self, millis};
use super::rows::{self, count_delta, reserve, save_lifecycle, sql};

pub struct GroupRows<'a>(pub &'a Connection);

/// A job of `group` moved from `was` to `now` (`None`: made or deleted): the group's turn is
/// synced when the job entered or left waiting or active.
pub fn moved(
    conn: &Connection,
    group: &str,
    was: Option<JobState>,
    now: Option<JobState>,
) -> CoreResult<()> {
    let claims = |s: Option<JobState>| matches!(s, Some(JobState::Waiting | JobState::Active));
    if was != now && (claims(was) || claims(now)) {
        crate::jobs::lifecycle::groups::sync(&mut GroupRows(conn), group)?;
    }
    Ok(())
}

impl GroupRows<'_> {
    fn exists(&self, query: &str, params: impl rusqlite::Params) -> CoreResult<bool> {
        self.0
            .prepare_cached(query)
            .and_then(|mut stmt| stmt.exists(params))
            .map_err(sql)
    }

    fn number(&self, query: &str, params: impl rusqlite::Params) -> CoreResult<usize> {
        self.0
            .prepare_cached(query)
            .and_then(|mut stmt| stmt.query_row(params, |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as usize)
            .map_err(sql)
    }

    pub(super) fn names(
        &self,
        query: &str,
        params: impl rusqlite::Params,
    ) -> CoreResult<Vec<String>> {
        let mut stmt = self.0.prepare_cached(query).map_err(sql)?;
        let rows = stmt.query_map(params, |r| r.get(0)).map_err(sql)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql)
    }

    /// (turn, window, held_until) of `group`'s run row.
    fn run(&self, group: &str) -> CoreResult<(Option<i64>, (Millis, u64), Millis)> {
        let row = self
            .0
            .prepare_cached(
                "SELECT turn, window_start, window_used, held_until FROM group_runs WHERE grp = ?1",
            )
            .and_then(|mut stmt| {
                stmt.query_row([group], |r| {
                    Ok((
                        r.get::<_, Option<i64>>(0)?,
                        (
                            r.get::<_, i64>(1)?.max(0) as Millis,
                            r.get::<_, i64>(2)?.max(0) as u64,
                        ),
                        r.get::<_, i64>(3)?.max(0) as Millis,
                    ))
                })
                .optional()
            })
            .map_err(sql)?;
        Ok(row.unwrap_or((None, (0, 0), 0)))
    }

    /// Writes `group`'s run row; drops it when it keeps nothing.
    fn set_run(
        &self,
        group: &str,
        turn: Option<i64>,
        window: (Millis, u64),
        held: Millis,
    ) -> CoreResult<()> {
        let result = if turn.is_none() && window == (0, 0) && held == 0 {
            self.0
                .prepare_cached("DELETE FROM group_runs WHERE grp = ?1")
                .and_then(|mut stmt| stmt.execute([group]))
        } else {
            self.0
                .prepare_cached(
                    "INSERT OR REPLACE INTO group_runs (grp, turn, window_start, window_used, \
                     held_until) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        group,
                        turn,
                        window.0 as i64,
                        window.1 as i64,
                        held as i64
                    ])
                })
        };
        result.map(|_| ()).map_err(sql)
    }
}

impl GroupStorage for GroupRows<'_> {
    fn groups_waiting(&mut self) -> CoreResult<bool> {
        self.exists(
            "SELECT 1 FROM jobs WHERE state = 0 AND grp IS NOT NULL LIMIT 1",
            [],
        )
    }

    fn group_state(&mut self, group: &str) -> CoreResult<GroupState> {
        let (turn, window, held_until) = self.run(group)?;
        if group == UNGROUPED {
            let waiting = self.exists(
                "SELECT 1 FROM jobs WHERE state = 0 AND (grp IS NOT NULL) = 0 LIMIT 1",
                [],
            )?;
            return Ok(GroupState {
                waiting,
                in_turns: turn.is_some(),
                ..GroupState::default()
            });
        }
        let settings = self.group_settings(group)?;
        let limits = merged(&settings.limits, &self.group_defaults()?);
        let waiting = self.exists(
            "SELECT 1 FROM jobs WHERE state = 0 AND grp = ?1 LIMIT 1",
            [group],
        )?;
        // Counted up to the concurrency only: that is all the claim asks of it.
        let active = match limits.concurrency {
            Some(max) => self.number(
                "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE grp = ?1 AND state = 2 LIMIT ?2)",
                params![group, i64::from(max)],
            )?,
            None => 0,
        };
        Ok(GroupState {
            waiting,
            active,
            paused: settings.paused,
            limits,
            window,
            held_until,
            in_turns: turn.is_some(),
        })
    }

    fn first_turn(&mut self) -> CoreResult<Option<String>> {
        Ok(self
            .names(
                "SELECT grp FROM group_runs WHERE turn IS NOT NULL ORDER BY turn LIMIT 1",
                [],
            )?
            .pop())
    }

    fn set_turn(&mut self, group: &str, on: bool) -> CoreResult<()> {
        let (_, window, held) = self.run(group)?;
        let turn = if on {
            Some(reserve(self.0, "group_turn", 1)? as i64)
        } else {
            None
        };
        self.set_run(group, turn, window, held)
    }

    fn take_group_head(
        &mut self,
        group: &str,
        change: &mut dyn FnMut(&mut Job),
    ) -> CoreResult<Option<Job>> {
        // Each its own partial index (`grp = ?1` implies the `grp IS NOT NULL` of
        // `jobs_group_waiting` for SQLite's planner; `grp IS ?1` would not).
        let head = if group == UNGROUPED {
            let query = format!(
                "SELECT {} FROM jobs WHERE state = 0 AND (grp IS NOT NULL) = 0 ORDER BY priority, ord LIMIT 1",
                rows::COLUMNS
            );
            self.0
                .prepare_cached(&query)
                .and_then(|mut stmt| stmt.query_row([], rows::job).optional())
        } else {
            let query = format!(
                "SELECT {} FROM jobs WHERE state = 0 AND grp = ?1 ORDER BY priority, ord LIMIT 1",
                rows::COLUMNS
            );
            self.0
                .prepare_cached(&query)
                .and_then(|mut stmt| stmt.query_row([group], rows::job).optional())
        }
        .map_err(sql)?;
        let Some(mut job) = head else {
            return Ok(None);
        };
        change(&mut job);
        save_lifecycle(self.0, &job)?;
        count_delta(self.0, JobState::Waiting, -1)?;
        count_delta(self.0, job.state, 1)?;
        Ok(Some(job))
    }

    fn set_group_rate(
        &mut self,
        group: &str,
        window: (Millis, u64),
        held: Millis,
    ) -> CoreResult<()> {
        let (turn, _, _) = self.run(group)?;
        self.set_run(group, turn, window, held)
    }

    fn rate_held_due(&mut self, now: Millis) -> CoreResult<Vec<String>> {
        let now = now.min(i64::MAX as Millis) as i64;
        self.names(
            "SELECT grp FROM group_runs WHERE held_until > 0 AND held_until <= ?1 \
             ORDER BY held_until, grp",
            [now],
        )
    }

    fn next_rate_release(&mut self) -> CoreResult<Option<Millis>> {
        next_rate_release(self.0)
    }

    fn group_queued(&mut self, group: &str) -> CoreResult<usize> {
        self.number(
            "SELECT count(*) FROM jobs WHERE grp = ?1 AND state IN (0, 1)",
            [group],
        )
    }

    fn group_settings(&mut self, group: &str) -> CoreResult<GroupSettings> {
        group_settings::settings(self.0, group)
    }

    fn set_group_settings(&mut self, group: &str, settings: GroupSettings) -> CoreResult<()> {
        group_settings::set_settings(self.0, group, settings)
    }

    fn group_defaults(&mut self) -> CoreResult<GroupLimits> {
        group_settings::defaults(self.0)
    }

    fn set_group_defaults(&mut self, limits: GroupLimits) -> CoreResult<()> {
        group_settings::set_defaults(self.0, limits)
    }

    fn group_names(&mut self) -> CoreResult<Vec<String>> {
        group_settings::names(self.0)
    }

    fn group_counts(&mut self, group: &str) -> CoreResult<Vec<(JobState, usize)>> {
        group_settings::counts(self.0, group)
    }

    fn group_ids(&mut self, group: &str, states: &[JobState]) -> CoreResult<Vec<String>> {
        group_settings::ids(self.0, group, states)
    }
}

/// The earliest end of a rate window holding a group back.
pub fn next_rate_release(conn: &Connection) -> CoreResult<Option<Millis>> {
    conn.prepare_cached("SELECT min(held_until) FROM group_runs WHERE held_until > 0")
        .and_then(|mut stmt| stmt.query_row([], |r| r.get::<_, Option<i64>>(0)))
        .map(millis)
        .map_err(sql)
}

/// Whether a claim may take a waiting job: an ungrouped one, or one of a group in the turns
/// (the ungrouped jobs' own entry there may be stale: not asked).
pub fn claimable_waiting(conn: &Connection) -> CoreResult<bool> {
    let rows = GroupRows(conn);
    Ok(rows.exists(
        "SELECT 1 FROM jobs WHERE state = 0 AND (grp IS NOT NULL) = 0 LIMIT 1",
        [],
    )? || rows.exists(
        "SELECT 1 FROM group_runs WHERE turn IS NOT NULL AND grp != '' LIMIT 1",
        [],
    )?)
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
