//! Batches of the store's operations, each one call of its script: `enqueue_many` adds
//! commands and `complete_many` ends them, with one wake of every live process per batch (a
//! process flushing its queue, or reporting what ended together, pays one round trip and its
//! peers one wake). `enqueue` and `complete` are batches of one.

use lanemq_core::{CoreError, CoreResult};

use super::ops::{args, truth};
use super::script::optional;
use super::spec::NewCommand;
use super::store::RedisLaneStore;

/// Refuses a command that is not a named command (`name`: any live process that registered
/// it runs it) or a callable (`owner`: the one process that runs it, from its own memory, so
/// it has no payload).
fn check_shape(name: Option<&str>, owner: Option<&str>, payload: Option<&str>) -> CoreResult<()> {
    if name.is_some() == owner.is_some() {
        return Err(CoreError::InvalidConfig(format!(
            "invalid command: name {name:?} and owner {owner:?} (exactly one must be set: a \
             named command or a callable of its owner)"
        )));
    }
    if owner.is_some() && payload.is_some() {
        return Err(CoreError::InvalidConfig(format!(
            "invalid command: payload {payload:?} for a callable of owner {owner:?} (a \
             callable has no payload)"
        )));
    }
    Ok(())
}

impl RedisLaneStore {
    /// Adds one command (see `enqueue_many`); returns its id.
    pub async fn enqueue(
        &self,
        submitter: &str,
        lane: u32,
        name: Option<&str>,
        owner: Option<&str>,
        payload: Option<&str>,
    ) -> CoreResult<u64> {
        let command = (
            lane,
            name.map(str::to_owned),
            owner.map(str::to_owned),
            payload.map(str::to_owned),
        );
        let ids = self.enqueue_many(submitter, &[command]).await?;
        ids.first()
            .copied()
            .ok_or_else(|| CoreError::Storage("redis: an enqueue stored no command".into()))
    }

    /// Adds `commands` at the back of their lanes, in order, atomically; returns their ids in
    /// that order. One bad command refuses the batch (nothing is written: the script checks
    /// every lane first); an empty batch calls nothing.
    pub async fn enqueue_many(
        &self,
        submitter: &str,
        commands: &[NewCommand],
    ) -> CoreResult<Vec<u64>> {
        for (_, name, owner, payload) in commands {
            check_shape(name.as_deref(), owner.as_deref(), payload.as_deref())?;
        }
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let mut rest = Vec::with_capacity(1 + 4 * commands.len());
        rest.push(submitter.to_owned());
        for (lane, name, owner, payload) in commands {
            rest.push(lane.to_string());
            rest.push(optional(name.as_deref()));
            rest.push(optional(owner.as_deref()));
            rest.push(optional(payload.as_deref()));
        }
        self.run(&args("enqueue_many", rest)).await
    }

    /// Ends held command `command_id` with `result`; false when `pid` does not hold it.
    pub async fn complete(&self, pid: &str, command_id: u64, result: &str) -> CoreResult<bool> {
        let done = self
            .complete_many(pid, &[(command_id, result.to_owned())])
            .await?;
        Ok(done.first().copied().unwrap_or(false))
    }

    /// `complete` of each (id, result), in order, in one call: per command, whether `pid`
    /// held it (the others still end).
    pub async fn complete_many(
        &self,
        pid: &str,
        results: &[(u64, String)],
    ) -> CoreResult<Vec<bool>> {
        if results.is_empty() {
            return Ok(Vec::new());
        }
        let mut rest = Vec::with_capacity(1 + 2 * results.len());
        rest.push(pid.to_owned());
        for (id, result) in results {
            rest.push(id.to_string());
            rest.push(result.clone());
        }
        let done: Vec<redis::Value> = self.run(&args("complete_many", rest)).await?;
        Ok(done.iter().map(truth).collect())
    }
}
