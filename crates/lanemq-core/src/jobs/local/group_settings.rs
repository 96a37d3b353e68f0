//! A group's settings (`group_settings` rows: paused, overrides), the queue's group defaults
//! (the `group_defaults` meta value) and the reads of groups for their management (names,
//! counts, ids), for `GroupRows`.

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::CoreResult;
use crate::jobs::contract::GroupLimits;
use crate::jobs::lifecycle::GroupSettings;
use crate::jobs::model::{JobState, Millis};

use super::rows::{code, meta, set_meta, sql};

pub fn millis(v: Option<i64>) -> Option<Millis> {
    v.map(|v| v.max(0) as Millis)
}

fn small(v: Option<i64>) -> Option<u32> {
    v.map(|v| v.clamp(0, u32::MAX.into()) as u32)
}

pub fn settings(conn: &Connection, group: &str) -> CoreResult<GroupSettings> {
    let row = conn
        .prepare_cached(
            "SELECT paused, concurrency, rate_max, rate_ms, max_size FROM group_settings \
             WHERE grp = ?1",
        )
        .and_then(|mut stmt| {
            stmt.query_row([group], |r| {
                let rate = small(r.get(2)?).zip(millis(r.get(3)?));
                Ok(GroupSettings {
                    paused: r.get::<_, i64>(0)? != 0,
                    limits: GroupLimits {
                        concurrency: small(r.get(1)?),
                        rate,
                        max_size: small(r.get(4)?),
                    },
                })
            })
            .optional()
        })
        .map_err(sql)?;
    Ok(row.unwrap_or_default())
}

pub fn set_settings(conn: &Connection, group: &str, settings: GroupSettings) -> CoreResult<()> {
    let result = if settings == GroupSettings::default() {
        conn.prepare_cached("DELETE FROM group_settings WHERE grp = ?1")
            .and_then(|mut stmt| stmt.execute([group]))
    } else {
        let limits = &settings.limits;
        conn.prepare_cached(
            "INSERT OR REPLACE INTO group_settings (grp, paused, concurrency, rate_max, \
                 rate_ms, max_size) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                group,
                i64::from(settings.paused),
                limits.concurrency,
                limits.rate.map(|r| r.0),
                limits.rate.map(|r| r.1.min(i64::MAX as Millis) as i64),
                limits.max_size,
            ])
        })
    };
    result.map(|_| ()).map_err(sql)
}

pub fn defaults(conn: &Connection) -> CoreResult<GroupLimits> {
    // "concurrency,rate_max,rate_ms,max_size", an empty field for none.
    let Some(text) = meta(conn, "group_defaults")? else {
        return Ok(GroupLimits::default());
    };
    let fields: Vec<Option<u64>> = text.split(',').map(|f| f.parse().ok()).collect();
    let field = |i: usize| fields.get(i).copied().flatten();
    let small = |i: usize| field(i).map(|v| v.min(u32::MAX.into()) as u32);
    Ok(GroupLimits {
        concurrency: small(0),
        rate: small(1).zip(field(2)),
        max_size: small(3),
    })
}

pub fn set_defaults(conn: &Connection, limits: GroupLimits) -> CoreResult<()> {
    if limits == GroupLimits::default() {
        return set_meta(conn, "group_defaults", None);
    }
    let show = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let text = [
        show(limits.concurrency.map(u64::from)),
        show(limits.rate.map(|r| u64::from(r.0))),
        show(limits.rate.map(|r| r.1)),
        show(limits.max_size.map(u64::from)),
    ]
    .join(",");
    set_meta(conn, "group_defaults", Some(&text))
}

pub fn names(conn: &Connection) -> CoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT grp FROM group_settings UNION SELECT grp FROM group_runs WHERE grp != '' \
             UNION SELECT DISTINCT grp FROM jobs WHERE grp IS NOT NULL ORDER BY 1",
        )
        .map_err(sql)?;
    let rows = stmt.query_map([], |r| r.get(0)).map_err(sql)?;
    rows.collect::<rusqlite::Result<_>>().map_err(sql)
}

pub fn counts(conn: &Connection, group: &str) -> CoreResult<Vec<(JobState, usize)>> {
    let mut stmt = conn
        .prepare_cached("SELECT state, count(*) FROM jobs WHERE grp = ?1 GROUP BY state")
        .map_err(sql)?;
    let found = stmt
        .query_map([group], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
        .map_err(sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql)?;
    Ok(JobState::ALL
        .into_iter()
        .map(|state| {
            let n = found
                .iter()
                .find(|(c, _)| *c == code(state))
                .map_or(0, |(_, n)| *n);
            (state, n.max(0) as usize)
        })
        .collect())
}

pub fn ids(conn: &Connection, group: &str, states: &[JobState]) -> CoreResult<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT id, state FROM jobs WHERE grp = ?1")
        .map_err(sql)?;
    let rows = stmt
        .query_map([group], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .map_err(sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql)?;
    Ok(rows
        .into_iter()
        .filter(|(_, state)| states.iter().any(|s| code(*s) == *state))
        .map(|(id, _)| id)
        .collect())
}
