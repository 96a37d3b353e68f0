//! The waits, on dedicated connections (a blocking command would stall every other command
//! on the shared multiplexed one). Idle workers block in BZPOPMIN on the wake-up marker, which
//! adds, promotions and releases set, with the time of the next delayed job as the timeout, so a
//! delayed job is claimable on time even when nothing else happens. Job and event waits follow
//! the event stream with XREAD BLOCK.

use std::time::{Duration, Instant};

use lanemq_core::jobs::{wall_clock_ms, FinishedResult, Millis};
use lanemq_core::CoreResult;
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{items, text};

/// The longest single block, so a waiter also notices changes that set no marker.
const MAX_BLOCK: Duration = Duration::from_secs(1);

impl RedisBackend {
    async fn blocking_connection(&self) -> CoreResult<redis::aio::MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        self.connection
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| self.error(e))
    }

    pub async fn wait_for_job(&self, timeout: Option<Millis>) -> CoreResult<bool> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        let mut connection = None;
        loop {
            let now = wall_clock_ms();
            let ready_at = self.next_ready_at(now).await?;
            if ready_at.is_some_and(|at| at <= now) {
                return Ok(true);
            }
            let mut wait = ready_at
                .map_or(MAX_BLOCK, |at| Duration::from_millis(at - now))
                .min(MAX_BLOCK);
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                wait = wait.min(left);
            }
            if connection.is_none() {
                connection = Some(self.blocking_connection().await?);
            }
            let blocking = connection.as_mut().expect("just made");
            let seconds = wait.as_secs_f64().max(0.001);
            let _: Value = redis::cmd("BZPOPMIN")
                .arg(self.keys.key("marker"))
                .arg(seconds)
                .query_async(blocking)
                .await
                .map_err(|e| self.error(e))?;
        }
    }

    /// How a job that no longer exists ended, if the recent event stream says (else `Missing`).
    async fn outcome_from_events(&self, id: &str) -> CoreResult<FinishedResult> {
        let mut pipe = redis::pipe();
        pipe.cmd("XREVRANGE")
            .arg(self.keys.key("events"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1000);
        let (entries,): (Value,) = self.query(&pipe).await?;
        for entry in items(entries)? {
            let mut entry = items(entry)?.into_iter();
            let fields: Vec<String> = entry
                .nth(1)
                .map(items)
                .transpose()?
                .unwrap_or_default()
                .iter()
                .filter_map(text)
                .collect();
            let field = |name: &str| {
                fields
                    .chunks(2)
                    .find(|p| p[0] == name)
                    .and_then(|p| p.get(1))
                    .cloned()
            };
            if field("job").as_deref() != Some(id) {
                continue;
            }
            match field("event").as_deref() {
                Some("completed") => {
                    return Ok(FinishedResult::Completed(
                        field("returnvalue").map(Into::into),
                    ))
                }
                Some("removed") => break, // removed by hand: gone, as on the other backends
                Some("failed") => {
                    return Ok(FinishedResult::Failed(
                        field("failedReason").unwrap_or_default(),
                    ))
                }
                _ => {}
            }
        }
        Ok(FinishedResult::Missing)
    }

    /// Blocks until the stream has an entry after `after` or `wait` passes; returns the entries.
    async fn follow(
        &self,
        connection: &mut redis::aio::MultiplexedConnection,
        after: u64,
        wait: Duration,
    ) -> CoreResult<Vec<(u64, Vec<String>)>> {
        let reply: Value = redis::cmd("XREAD")
            .arg("BLOCK")
            .arg(wait.as_millis().max(1) as u64)
            .arg("STREAMS")
            .arg(self.keys.key("events"))
            .arg(format!("{after}-0"))
            .query_async(connection)
            .await
            .map_err(|e| self.error(e))?;
        let mut out = Vec::new();
        if let Value::Array(streams) = reply {
            for stream in streams {
                let mut parts = items(stream)?.into_iter();
                let entries = parts.nth(1).map(items).transpose()?.unwrap_or_default();
                for entry in entries {
                    let mut entry = items(entry)?.into_iter();
                    let id = entry.next().and_then(|v| text(&v)).unwrap_or_default();
                    let id = id
                        .split('-')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    let fields = entry.next().map(items).transpose()?.unwrap_or_default();
                    out.push((id, fields.iter().filter_map(text).collect()));
                }
            }
        }
        Ok(out)
    }

    pub async fn wait_events(&self, after: u64, timeout: Option<Millis>) -> CoreResult<bool> {
        if self.last_event_id().await? > after {
            return Ok(true);
        }
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        let mut connection = self.blocking_connection().await?;
        loop {
            let wait = deadline.map_or(MAX_BLOCK, |d| {
                d.saturating_duration_since(Instant::now()).min(MAX_BLOCK)
            });
            if wait.is_zero() {
                return Ok(false);
            }
            if !self.follow(&mut connection, after, wait).await?.is_empty()
                || self.last_event_id().await? > after
            {
                return Ok(true);
            }
        }
    }

    /// The outcome once the job completes, fails for good or disappears; `NotFinished` after
    /// `timeout`. The outcome is taken from the event stream, so a job removed on completion
    /// still reports its result.
    pub async fn wait_finished(
        &self,
        id: &str,
        timeout: Option<Millis>,
    ) -> CoreResult<FinishedResult> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        let mut after = self.last_event_id().await?;
        let mut connection = None;
        loop {
            let result = match self.finished_result(id).await? {
                // Gone: it may have finished and been removed (remove_on_complete/fail) before
                // this waiter looked; the stream still tells how it ended.
                FinishedResult::Missing => return self.outcome_from_events(id).await,
                result => result,
            };
            if !matches!(result, FinishedResult::NotFinished(_)) {
                return Ok(result);
            }
            let wait = deadline.map_or(MAX_BLOCK, |d| {
                d.saturating_duration_since(Instant::now()).min(MAX_BLOCK)
            });
            if wait.is_zero() {
                return Ok(result);
            }
            if connection.is_none() {
                connection = Some(self.blocking_connection().await?);
            }
            for (event_id, fields) in self
                .follow(connection.as_mut().expect("just made"), after, wait)
                .await?
            {
                after = after.max(event_id);
                let field = |name: &str| {
                    fields
                        .chunks(2)
                        .find(|p| p[0] == name)
                        .and_then(|p| p.get(1))
                        .cloned()
                };
                if field("job").as_deref() != Some(id) {
                    continue;
                }
                match field("event").as_deref() {
                    Some("completed") => {
                        return Ok(FinishedResult::Completed(
                            field("returnvalue").map(Into::into),
                        ))
                    }
                    Some("failed") => {
                        return Ok(FinishedResult::Failed(
                            field("failedReason").unwrap_or_default(),
                        ))
                    }
                    Some("removed") => return Ok(FinishedResult::Missing),
                    _ => {}
                }
            }
        }
    }
}
