//! Cancellation on Redis (`JobCancels`): `cancel-2.lua` fails a job that has not started, or
//! stores the request with an active one and pushes it to the stream `cancels` (lua/README.md),
//! whose entry ids are the requests' seqs (`<seq>-0`). Workers follow that stream with XREAD
//! BLOCK on a connection of their own, as the other waits do (`waits.rs`): a blocking read on
//! the shared multiplexed connection would hold up every other command behind it.

use std::time::{Duration, Instant};

use lanemq_core::jobs::{BoxFuture, CancelOutcome, CancelRequest, JobCancels, Millis};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{items, text, unexpected};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;
use crate::topology::route;
use crate::topology::server::MAX_BLOCK;

/// The stream of cancel requests, and the META counter of their seqs.
const CANCELS: &str = "cancels";

impl RedisBackend {
    pub async fn cancel(
        &self,
        id: String,
        reason: String,
        now: Millis,
    ) -> CoreResult<CancelOutcome> {
        let reply = items(self.change(&scripts::CANCEL, now, &[&id, &reason]).await?)?;
        match reply.first().and_then(text).as_deref() {
            Some("failed") => Ok(CancelOutcome::Failed),
            Some("requested") => Ok(CancelOutcome::Requested),
            Some("finished") => Ok(CancelOutcome::Finished),
            Some("missing") => Err(CoreError::JobNotFound(id)),
            other => Err(unexpected(&format!("cancel: {other:?}"))),
        }
    }

    pub async fn last_cancel_seq(&self) -> CoreResult<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.key("meta")).arg(CANCELS);
        let (last,): (Option<u64>,) = self.query(&pipe).await?;
        Ok(last.unwrap_or(0))
    }

    /// XREAD of the requests past `after` (`<after>-0`: an entry's id is `<seq>-0`), blocking
    /// for `block` when given.
    fn read_cancels(&self, after: u64, block: Option<Duration>) -> redis::Cmd {
        let mut read = redis::cmd("XREAD");
        if let Some(block) = block {
            read.arg("BLOCK").arg(block.as_millis().max(1) as u64);
        }
        read.arg("STREAMS")
            .arg(self.keys.key(CANCELS))
            .arg(format!("{after}-0"));
        read
    }

    pub async fn wait_cancels(
        &self,
        after: u64,
        timeout: Option<Millis>,
    ) -> CoreResult<Vec<CancelRequest>> {
        let deadline = match timeout {
            Some(ms) if ms > 0 => Instant::now() + Duration::from_millis(ms),
            // No wait: one read on the command connection.
            _ => {
                let mut pipe = redis::pipe();
                pipe.add_command(self.read_cancels(after, None));
                let (reply,): (Value,) = self.query(&pipe).await?;
                return requests(reply);
            }
        };
        let mut connection = self.blocking_connection().await?;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                self.keep_blocking(Some(connection));
                return Ok(Vec::new());
            }
            let read = self.read_cancels(after, Some(wait.min(MAX_BLOCK)));
            match read.query_async::<Value>(&mut connection.connection).await {
                Ok(reply) => {
                    let found = requests(reply)?;
                    if !found.is_empty() {
                        self.keep_blocking(Some(connection));
                        return Ok(found);
                    }
                }
                // On a cluster, the queue's slot moved: read again where the map now says
                // (`redirected` noted it stale), on a connection to that server.
                Err(e) if self.target.redirected(&e) => {
                    tokio::time::sleep(route::SETTLE_WAIT).await;
                    connection = self.blocking_connection().await?;
                }
                Err(e) => return Err(self.target.error(e)),
            }
        }
    }
}

/// The requests of an XREAD reply (`[[key, [[id, [field, value, ...]], ...]]]`, nil when
/// none came), oldest first.
fn requests(reply: Value) -> CoreResult<Vec<CancelRequest>> {
    let mut out = Vec::new();
    let streams = match reply {
        Value::Nil => return Ok(out),
        other => items(other)?,
    };
    for stream in streams {
        let entries = items(stream)?.into_iter().nth(1).map(items).transpose()?;
        for entry in entries.unwrap_or_default() {
            out.push(request(entry)?);
        }
    }
    Ok(out)
}

/// One entry of the stream: id `<seq>-0`, fields `job` and `reason` (`cancel-2.lua`).
fn request(entry: Value) -> CoreResult<CancelRequest> {
    let mut entry = items(entry)?.into_iter();
    let id = entry.next().as_ref().and_then(text).unwrap_or_default();
    let seq = id
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unexpected(&format!("a cancel request's id {id:?}")))?;
    let fields: Vec<String> = entry
        .next()
        .map(items)
        .transpose()?
        .unwrap_or_default()
        .iter()
        .filter_map(text)
        .collect();
    let (mut job_id, mut reason) = (None, None);
    for pair in fields.chunks(2) {
        match pair {
            [key, value] if key == "job" => job_id = Some(value.clone()),
            [key, value] if key == "reason" => reason = Some(value.clone()),
            _ => {}
        }
    }
    match (job_id, reason) {
        (Some(job_id), Some(reason)) => Ok(CancelRequest {
            seq,
            job_id,
            reason,
        }),
        _ => Err(unexpected(&format!(
            "cancel request {id} without job or reason"
        ))),
    }
}

impl JobCancels for RedisJobBackend {
    fn cancel(&self, id: String, reason: String, now: Millis) -> BoxFuture<CancelOutcome> {
        call!(self, |b| b.cancel(id, reason, now))
    }

    fn last_cancel_seq(&self) -> BoxFuture<u64> {
        call!(self, |b| b.last_cancel_seq())
    }

    fn wait_cancels(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<Vec<CancelRequest>> {
        call!(self, |b| b.wait_cancels(after, timeout))
    }
}
