//! Enqueues on the local store: `enqueue_many` adds a batch of commands in one transaction
//! with one wake of every live process (a sender flushing its queue pays one commit, and its
//! peers one wake, for the whole batch); `enqueue` is a batch of one.

use rusqlite::params;

use super::local_recover::recover;
use super::local_rows::{self as rows, now_ms, wake_all};
use super::local_store::LocalLaneStore;
use super::schema::sql;
use crate::error::{CoreError, CoreResult};

/// (lane index, name, owner, payload): a command as `enqueue` takes it.
pub type NewCommand = (i64, Option<String>, Option<String>, Option<String>);

/// Refuses a command that is not a named command (name, no owner) or a callable (owner, no
/// name, no payload: only its owner runs it, from its own memory).
fn check_shape(name: Option<&str>, owner: Option<&str>, payload: Option<&str>) -> CoreResult<()> {
    match (name, owner) {
        (Some(_), None) | (None, Some(_)) => {}
        _ => {
            return Err(CoreError::InvalidConfig(format!(
                "a command has a name or an owner, exactly one (got name {name:?}, owner \
                 {owner:?})"
            )))
        }
    }
    if owner.is_some() && payload.is_some() {
        return Err(CoreError::InvalidConfig(
            "a callable has no payload (got one)".into(),
        ));
    }
    Ok(())
}

impl LocalLaneStore {
    /// Adds a pending command at the back of lane `lane`; returns its id.
    pub fn enqueue(
        &self,
        submitter: &str,
        lane: i64,
        name: Option<&str>,
        owner: Option<&str>,
        payload: Option<&str>,
    ) -> CoreResult<i64> {
        let command = (
            lane,
            name.map(str::to_owned),
            owner.map(str::to_owned),
            payload.map(str::to_owned),
        );
        let ids = self.enqueue_many(submitter, &[command])?;
        ids.first()
            .copied()
            .ok_or_else(|| CoreError::Storage("an enqueue stored no command".into()))
    }

    /// Adds `commands` at the back of their lanes, in order, atomically; returns their ids in
    /// that order. One bad command refuses the batch (nothing is written); an empty batch
    /// writes nothing.
    pub fn enqueue_many(&self, submitter: &str, commands: &[NewCommand]) -> CoreResult<Vec<i64>> {
        for (_, name, owner, payload) in commands {
            check_shape(name.as_deref(), owner.as_deref(), payload.as_deref())?;
        }
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        self.write(|tx| {
            let lanes = rows::lane_count(tx)?;
            if lanes == 0 {
                rows::stored_lanes(tx)?;
            }
            if let Some(&(lane, ..)) = commands
                .iter()
                .find(|(lane, ..)| usize::try_from(*lane).map_or(true, |l| l >= lanes))
            {
                return Err(CoreError::InvalidConfig(format!(
                    "invalid lane: {lane} (the store has lanes 0 to {})",
                    lanes - 1
                )));
            }
            let now = now_ms();
            recover(tx, now)?;
            // (seqs only order within a lane: consecutive ones keep the batch's order)
            let first_seq = rows::back_seq(tx)?;
            let mut ids = Vec::with_capacity(commands.len());
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO commands
                     (lane, name, owner, payload, submitter, state, seq, queued_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?7)",
                )
                .map_err(sql)?;
            for (seq, (lane, name, owner, payload)) in (first_seq..).zip(commands) {
                insert
                    .execute(params![lane, name, owner, payload, submitter, seq, now])
                    .map_err(sql)?;
                ids.push(tx.last_insert_rowid());
            }
            wake_all(tx)?;
            Ok(ids)
        })
    }
}
