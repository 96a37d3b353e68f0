//! What the local store gives back: a submitter's outcomes (taken), the lanes' counts and the
//! dead letters.

use super::local_rows::lane_count;
use super::local_store::{LetterRecord, LocalLaneStore, Outcome};
use super::schema::sql;
use crate::error::CoreResult;

impl LocalLaneStore {
    /// Takes the outcomes for commands `pid` submitted, oldest first.
    pub fn outcomes(&self, pid: &str) -> CoreResult<Vec<Outcome>> {
        self.write(|tx| {
            let mut stmt = tx
                .prepare_cached(
                    "DELETE FROM outcomes WHERE submitter = ?1 RETURNING seq, id, ok, text",
                )
                .map_err(sql)?;
            let mut taken = stmt
                .query_map([pid], |r| {
                    Ok((r.get::<_, i64>(0)?, (r.get(1)?, r.get(2)?, r.get(3)?)))
                })
                .map_err(sql)?
                .collect::<rusqlite::Result<Vec<(i64, Outcome)>>>()
                .map_err(sql)?;
            taken.sort_by_key(|(seq, _)| *seq);
            Ok(taken.into_iter().map(|(_, outcome)| outcome).collect())
        })
    }

    /// Per lane: (pending, active, retrying).
    pub fn stats(&self) -> CoreResult<Vec<(i64, i64, i64)>> {
        self.read(|tx| {
            let mut stats = vec![(0, 0, 0); lane_count(tx)?];
            let mut stmt = tx
                .prepare_cached("SELECT lane, state, COUNT(*) FROM commands GROUP BY lane, state")
                .map_err(sql)?;
            let counts = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(sql)?;
            for count in counts {
                let (lane, state, n) = count.map_err(sql)?;
                let Some(entry) = usize::try_from(lane).ok().and_then(|l| stats.get_mut(l)) else {
                    continue;
                };
                match state.as_str() {
                    "pending" => entry.0 = n,
                    "running" => entry.1 = n,
                    _ => entry.2 = n,
                }
            }
            Ok(stats)
        })
    }

    /// The dead letters kept, oldest first.
    pub fn dead_letters(&self) -> CoreResult<Vec<LetterRecord>> {
        self.read(|tx| {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT command_id, command_type, lane_id, error, attempts, failed_at
                     FROM letters ORDER BY seq",
                )
                .map_err(sql)?;
            let letters = stmt
                .query_map([], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })
                .map_err(sql)?
                .collect::<rusqlite::Result<Vec<LetterRecord>>>()
                .map_err(sql)?;
            Ok(letters)
        })
    }
}
