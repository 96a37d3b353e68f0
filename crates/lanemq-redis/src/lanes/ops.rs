//! The contract's operations, each one call of the store's script (`lua/lanes-1.lua` says
//! what each does), with their arguments checked first and their replies read. Enqueues and
//! completes, batches, are in `batch.rs`.

use lanemq_core::lanes::shared::LaneSpec;
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use super::script::optional;
use super::spec::{lanes_json, Claimed, Letter, Outcome};
use super::store::RedisLaneStore;
use crate::decode::{text, unexpected};

pub(super) fn args(op: &str, rest: impl IntoIterator<Item = String>) -> Vec<String> {
    std::iter::once(op.to_owned()).chain(rest).collect()
}

/// A script's `true` (1) or `false` (nil).
pub(super) fn truth(value: &Value) -> bool {
    matches!(value, Value::Int(1))
}

fn number(value: &Value) -> CoreResult<u64> {
    match value {
        Value::Int(n) if *n >= 0 => Ok(*n as u64),
        _ => Err(unexpected("a number of the lanes' store")),
    }
}

fn optional_text(value: &Value) -> Option<String> {
    match value {
        Value::Nil => None,
        other => text(other),
    }
}

/// Refuses a lease the store could not keep exactly: its end (now, about 2^41 ms, plus the
/// lease) is a sorted set's score, a double, exact below 2^53.
fn refuse_lease(lease_ms: u64) -> CoreResult<()> {
    if lease_ms >= 1 << 50 {
        return Err(CoreError::InvalidConfig(format!(
            "invalid lease_ms: {lease_ms} (must be below 2^50)"
        )));
    }
    Ok(())
}

impl RedisLaneStore {
    /// Stores the lanes and `config` unless the store has some; returns the stored config.
    pub async fn setup(
        &self,
        config: &str,
        lanes: &[LaneSpec],
        global_max: Option<i64>,
    ) -> CoreResult<String> {
        let lanes = lanes_json(lanes, global_max)?;
        let global = global_max.map(|cap| cap.to_string());
        let rest = [config.to_owned(), lanes, optional(global.as_deref())];
        let reply: Value = self.run(&args("setup", rest)).await?;
        text(&reply).ok_or_else(|| unexpected("setup's config"))
    }

    pub async fn join(&self, pid: &str, names: &[String], lease_ms: u64) -> CoreResult<()> {
        refuse_lease(lease_ms)?;
        let rest = [pid.to_owned(), lease_ms.to_string()];
        self.run::<Value>(&args("join", rest.into_iter().chain(names.iter().cloned())))
            .await?;
        Ok(())
    }

    pub async fn renew(&self, pid: &str, names: &[String], lease_ms: u64) -> CoreResult<Vec<u64>> {
        refuse_lease(lease_ms)?;
        let rest = [pid.to_owned(), lease_ms.to_string()];
        self.run(&args(
            "renew",
            rest.into_iter().chain(names.iter().cloned()),
        ))
        .await
    }

    pub async fn leave(&self, pid: &str) -> CoreResult<()> {
        self.run::<Value>(&args("leave", [pid.to_owned()])).await?;
        Ok(())
    }

    /// Claims at most `max_n` commands; also the ms until something timed falls due.
    pub async fn claim(&self, pid: &str, max_n: u32) -> CoreResult<(Vec<Claimed>, Option<u64>)> {
        let reply: Vec<Value> = self
            .run(&args("claim", [pid.to_owned(), max_n.to_string()]))
            .await?;
        let (wait, rest) = reply
            .split_first()
            .ok_or_else(|| unexpected("an empty claim"))?;
        let wait = match wait {
            Value::Int(ms) if *ms >= 0 => Some(*ms as u64),
            Value::Int(_) => None,
            _ => return Err(unexpected("claim's wait")),
        };
        let mut claimed = Vec::with_capacity(rest.len() / 6);
        for fields in rest.chunks(6) {
            let [id, lane, name, payload, attempt, submitter] = fields else {
                return Err(unexpected("a claimed command"));
            };
            claimed.push((
                number(id)?,
                u32::try_from(number(lane)?).map_err(|_| unexpected("a lane index"))?,
                optional_text(name),
                optional_text(payload),
                number(attempt)?,
                text(submitter).ok_or_else(|| unexpected("a submitter"))?,
            ));
        }
        Ok((claimed, wait))
    }

    pub async fn fail(
        &self,
        pid: &str,
        command_id: u64,
        error: &str,
        retry_in_ms: Option<u64>,
        command_type: &str,
        letter_limit: u64,
    ) -> CoreResult<bool> {
        let retry = retry_in_ms.map(|ms| ms.to_string());
        let rest = [
            pid.to_owned(),
            command_id.to_string(),
            error.to_owned(),
            optional(retry.as_deref()),
            command_type.to_owned(),
            letter_limit.to_string(),
        ];
        Ok(truth(&self.run(&args("fail", rest)).await?))
    }

    pub async fn release(&self, pid: &str, command_id: u64) -> CoreResult<bool> {
        let rest = [pid.to_owned(), command_id.to_string()];
        Ok(truth(&self.run(&args("release", rest)).await?))
    }

    pub async fn cancel(&self, command_id: u64) -> CoreResult<bool> {
        Ok(truth(
            &self.run(&args("cancel", [command_id.to_string()])).await?,
        ))
    }

    /// Takes the outcomes for `pid`'s commands, oldest first.
    pub async fn outcomes(&self, pid: &str) -> CoreResult<Vec<Outcome>> {
        let stored: Vec<String> = self.run(&args("outcomes", [pid.to_owned()])).await?;
        stored
            .iter()
            .map(|json| {
                serde_json::from_str::<Outcome>(json)
                    .map_err(|e| unexpected(&format!("an outcome {json:?}: {e}")))
            })
            .collect()
    }

    /// Per lane, in lane order: (pending, active, retrying).
    pub async fn stats(&self) -> CoreResult<Vec<(u64, u64, u64)>> {
        self.run(&args("stats", [])).await
    }

    /// The dead letters kept, oldest first.
    pub async fn dead_letters(&self) -> CoreResult<Vec<Letter>> {
        let stored: Vec<String> = self.run(&args("dead_letters", [])).await?;
        stored
            .iter()
            .map(|json| {
                serde_json::from_str::<Letter>(json)
                    .map_err(|e| unexpected(&format!("a dead letter {json:?}: {e}")))
            })
            .collect()
    }

    pub async fn clear_all(&self) -> CoreResult<()> {
        self.run::<Value>(&args("clear_all", [])).await?;
        Ok(())
    }
}
