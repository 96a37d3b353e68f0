//! A command's end on the local store: `complete`, `fail`, `release` (fenced: only the process
//! holding it may end it), `complete_many` (a batch of completes in one transaction) and
//! `cancel` (of a command not running). Each wakes every live process (once per batch), as a
//! freed slot may let any of them start something.

use rusqlite::{params, OptionalExtension, Transaction};

use super::local_recover::delete;
use super::local_rows::{front_seq, lane_id, now_ms, push_letter, push_outcome, wake_all};
use super::local_store::LocalLaneStore;
use super::schema::sql;
use crate::error::{CoreError, CoreResult};

/// The outcome a cancelled command's submitter gets.
const CANCELLED: &str = "CancelledError: the command was cancelled before it ran";

/// A held command as its end needs it.
struct Held {
    lane: i64,
    name: Option<String>,
    submitter: String,
    attempts: i64,
}

/// Command `id` if `pid` holds it (running).
fn held(tx: &Transaction<'_>, pid: &str, id: i64) -> CoreResult<Option<Held>> {
    tx.query_row(
        "SELECT lane, name, submitter, attempts FROM commands
         WHERE id = ?1 AND state = 'running' AND holder = ?2",
        params![id, pid],
        |r| {
            Ok(Held {
                lane: r.get(0)?,
                name: r.get(1)?,
                submitter: r.get(2)?,
                attempts: r.get(3)?,
            })
        },
    )
    .optional()
    .map_err(sql)
}

/// Ends held command `id` with `result` (no wake: the caller wakes once for its batch).
fn complete_one(tx: &Transaction<'_>, pid: &str, id: i64, result: &str) -> CoreResult<bool> {
    let Some(command) = held(tx, pid, id)? else {
        return Ok(false);
    };
    delete(tx, id)?;
    if command.name.is_some() {
        push_outcome(tx, &command.submitter, id, true, result)?;
    }
    Ok(true)
}

impl LocalLaneStore {
    /// Ends held command `id` with `result` (its submitter's outcome, for a named command).
    pub fn complete(&self, pid: &str, id: i64, result: &str) -> CoreResult<bool> {
        let done = self.complete_many(pid, &[(id, result.to_owned())])?;
        Ok(done.first().copied().unwrap_or(false))
    }

    /// `complete` of each (id, result), in order, in one transaction with one wake of every
    /// live process (if any ended): per command, whether `pid` held it (the others still end).
    pub fn complete_many(&self, pid: &str, results: &[(i64, String)]) -> CoreResult<Vec<bool>> {
        if results.is_empty() {
            return Ok(Vec::new());
        }
        self.write(|tx| {
            let mut done = Vec::with_capacity(results.len());
            for (id, result) in results {
                done.push(complete_one(tx, pid, *id, result)?);
            }
            if done.contains(&true) {
                wake_all(tx)?;
            }
            Ok(done)
        })
    }

    /// Ends held command `id`'s attempt with `error`: a retry in `retry_in_ms`, or for good
    /// (its submitter's outcome for a named command, and a dead letter).
    pub fn fail(
        &self,
        pid: &str,
        id: i64,
        error: &str,
        retry_in_ms: Option<i64>,
        command_type: &str,
        letter_limit: i64,
    ) -> CoreResult<bool> {
        if let Some(delay) = retry_in_ms.filter(|&d| d < 0) {
            return Err(CoreError::InvalidConfig(format!(
                "invalid retry_in_ms: {delay} (must be at least 0)"
            )));
        }
        if letter_limit < 0 {
            return Err(CoreError::InvalidConfig(format!(
                "invalid letter_limit: {letter_limit} (must be at least 0)"
            )));
        }
        self.write(|tx| {
            let Some(command) = held(tx, pid, id)? else {
                return Ok(false);
            };
            match retry_in_ms {
                Some(delay) => {
                    tx.execute(
                        "UPDATE commands SET state = 'retry', holder = NULL, due_at = ?2
                         WHERE id = ?1",
                        params![id, now_ms().saturating_add(delay)],
                    )
                    .map_err(sql)?;
                }
                None => {
                    delete(tx, id)?;
                    if command.name.is_some() {
                        push_outcome(tx, &command.submitter, id, false, error)?;
                    }
                    let lane_id = lane_id(tx, command.lane)?;
                    let letter = (id, command_type, lane_id.as_str(), error, command.attempts);
                    push_letter(tx, letter, Some(letter_limit))?;
                }
            }
            wake_all(tx)?;
            Ok(true)
        })
    }

    /// Gives held command `id` back unfinished: to the front of its lane (a callable is
    /// dropped). Its attempt did not count.
    pub fn release(&self, pid: &str, id: i64) -> CoreResult<bool> {
        self.write(|tx| {
            let Some(command) = held(tx, pid, id)? else {
                return Ok(false);
            };
            if command.name.is_some() {
                tx.execute(
                    "UPDATE commands SET state = 'pending', holder = NULL, seq = ?2,
                         attempts = attempts - 1 WHERE id = ?1",
                    params![id, front_seq(tx, command.lane)?],
                )
                .map_err(sql)?;
            } else {
                delete(tx, id)?;
            }
            wake_all(tx)?;
            Ok(true)
        })
    }

    /// Withdraws command `id` if it is pending or waiting to retry.
    pub fn cancel(&self, id: i64) -> CoreResult<bool> {
        self.write(|tx| {
            let found: Option<(Option<String>, String)> = tx
                .query_row(
                    "SELECT name, submitter FROM commands WHERE id = ?1 AND state != 'running'",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(sql)?;
            let Some((name, submitter)) = found else {
                return Ok(false);
            };
            delete(tx, id)?;
            if name.is_some() {
                push_outcome(tx, &submitter, id, false, CANCELLED)?;
            }
            wake_all(tx)?;
            Ok(true)
        })
    }
}
