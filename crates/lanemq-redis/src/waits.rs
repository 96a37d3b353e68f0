//! The waits, on dedicated connections (a blocking command would stall every other command
//! on the shared multiplexed one). Idle workers block in BZPOPMIN on the wake-up marker, which
//! adds, promotions and releases set, with the time of the next delayed job as the timeout, so a
//! delayed job is claimable on time even when nothing else happens; an idle worker sends its
//! claim behind that wait in the same write (`wait_and_claim`, lua/README.md "The claim behind
//! the wait"). Job and event waits follow the event stream with XREAD BLOCK.

use std::time::{Duration, Instant};

use lanemq_core::jobs::{wall_clock_ms, FinishedResult, Job, Millis, StreamEvent};
use lanemq_core::CoreResult;
use redis::Value;
use tokio::sync::Notify;

use crate::backend::RedisBackend;
use crate::decode::items;
use crate::events::parse_entry;
use crate::topology::server::{Live, MAX_BLOCK};

/// How long an interrupted wait waits for its reply once the server has ended the wait (the
/// halt went through): the reply is then on its way, so one that does not come means the
/// connection no longer answers (a partition, a stalled proxy), and the wait must not hold up
/// the worker that interrupted it, which has outcomes to report.
const HALT_REPLY_WAIT: Duration = Duration::from_secs(1);

/// What an idle wait does next (`RedisBackend::next_wait`).
enum NextWait {
    /// A claim may succeed now (the time it was read at).
    Ready(Millis),
    /// The wait's deadline has passed.
    Over,
    /// Block on the marker (from the time read at) for so many seconds.
    Block(Millis, f64),
}

impl RedisBackend {
    /// A connection for a wait, from the server's spares (once this queue is ready).
    pub(crate) async fn blocking_connection(&self) -> CoreResult<Live> {
        self.ready().await?;
        self.target.lost(self.server().blocking().await)
    }

    /// Puts `connection` back among the server's spares (its last command completed).
    pub(crate) fn keep_blocking(&self, connection: Option<Live>) {
        if let Some(connection) = connection {
            self.server().keep_blocking(connection);
        }
    }

    pub async fn wait_for_job(&self, timeout: Option<Millis>) -> CoreResult<bool> {
        let mut connection = None;
        let ready = self.wait_for_job_on(&mut connection, timeout).await?;
        self.keep_blocking(connection);
        Ok(ready)
    }

    async fn wait_for_job_on(
        &self,
        connection: &mut Option<Live>,
        timeout: Option<Millis>,
    ) -> CoreResult<bool> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        loop {
            let seconds = match self.next_wait(deadline).await? {
                NextWait::Ready(_) => return Ok(true),
                NextWait::Over => return Ok(false),
                NextWait::Block(_, seconds) => seconds,
            };
            if connection.is_none() {
                *connection = Some(self.blocking_connection().await?);
            }
            let blocking = connection.as_mut().expect("just made");
            let woken = self.pop_marker(blocking, seconds).await?;
            if woken.is_some_and(|due| due <= wall_clock_ms() as f64) {
                // A job became claimable (added, released, promoted, resumed): claim at once,
                // without another readiness check's round trip.
                return Ok(true);
            }
        }
    }

    /// What an idle worker does (`JobLifecycle::wait_and_claim`): waits as `wait_for_job`,
    /// then claims. With functions, the claim goes behind the BZPOPMIN in the same write, so
    /// the server runs it the moment the wait ends, with no round trip to this client in
    /// between (`claim-2.lua`). An interrupt then writes the call's halt key and ends the wait
    /// (`CLIENT UNBLOCK`), and the reply is read as usual: the claim, run after the halt key,
    /// takes nothing; run before it, its jobs are this call's result. Where the server has no
    /// functions, or an ACL forbids `CLIENT UNBLOCK`, the wait ends on its own or by dropping
    /// its connection, and the claim follows it.
    pub async fn wait_and_claim(
        &self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        timeout: Option<Millis>,
        interrupted: &Notify,
    ) -> CoreResult<Vec<Job>> {
        let mut connection = None;
        let claimed = self
            .wait_and_claim_on(
                &mut connection,
                worker_id,
                lease,
                max_jobs,
                timeout,
                interrupted,
            )
            .await?;
        self.keep_blocking(connection);
        Ok(claimed)
    }

    async fn wait_and_claim_on(
        &self,
        connection: &mut Option<Live>,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        timeout: Option<Millis>,
        interrupted: &Notify,
    ) -> CoreResult<Vec<Job>> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        loop {
            // An interrupt that came while this call was not waiting (a permit) ends it here.
            let early = tokio::select! {
                biased;
                () = interrupted.notified() => true,
                () = std::future::ready(()) => false,
            };
            if early {
                return Ok(Vec::new());
            }
            let (now, seconds) = match self.next_wait(deadline).await? {
                NextWait::Ready(now) => return self.claim(worker_id, lease, max_jobs, now).await,
                NextWait::Over => return Ok(Vec::new()),
                NextWait::Block(now, seconds) => (now, seconds),
            };
            if connection.is_none() {
                *connection = Some(self.blocking_connection().await?);
            }
            let live = connection.as_mut().expect("just made");
            let Some(client_id) = self.unblockable(live).await else {
                let woken = tokio::select! {
                    biased;
                    () = interrupted.notified() => {
                        // The wait cannot be ended from here: its connection goes with it.
                        *connection = None;
                        return Ok(Vec::new());
                    }
                    woken = self.pop_marker(live, seconds) => woken?,
                };
                if woken.is_some_and(|due| due <= wall_clock_ms() as f64) {
                    return self
                        .claim(worker_id, lease, max_jobs, wall_clock_ms())
                        .await;
                }
                continue;
            };
            let halt = self.token_seed();
            let mut args = self.claim_args(worker_id, lease, max_jobs, now);
            args[0] = format!("~{now}");
            args.push(halt.clone());
            let mut pipe = redis::pipe();
            pipe.cmd("BZPOPMIN")
                .arg(self.keys.key("marker"))
                .arg(seconds);
            pipe.add_command(self.claim_call(&args));
            let mut halted = false;
            let answered = {
                let call = pipe.query_async::<(Value, Value)>(&mut live.connection);
                tokio::pin!(call);
                tokio::select! {
                    biased;
                    reply = &mut call => Some(reply),
                    () = interrupted.notified() => {
                        halted = true;
                        // The reply is read either way, so a claim that ran hands its jobs
                        // over rather than leaving them locked until their lease runs out.
                        // Should the halt not get through, the wait still ends on its own
                        // (within `seconds`, or the connection's response timeout).
                        if self.halt(&halt, client_id).await.is_ok() {
                            tokio::time::timeout(HALT_REPLY_WAIT, &mut call).await.ok()
                        } else {
                            Some(call.await)
                        }
                    }
                }
            };
            let Some(reply) = answered else {
                // Ended by the server, yet no reply: the connection is deaf and goes. What a
                // claim that ran first took is left to stalled recovery (at least once).
                *connection = None;
                return Ok(Vec::new());
            };
            let claimed = match reply {
                Ok((_, claimed)) => claimed,
                // The library is gone (a restarted server): the ordinary claim loads it.
                Err(e) if crate::backend::function_missing(&e) => {
                    return self
                        .claim(worker_id, lease, max_jobs, wall_clock_ms())
                        .await;
                }
                // On a cluster, the slot moved (or is moving) away from this connection's
                // node, and neither command ran: the ordinary claim follows it, and the next
                // wait takes a connection of the slot's master.
                Err(e) if self.target.redirected(&e) => {
                    *connection = None;
                    return self
                        .claim(worker_id, lease, max_jobs, wall_clock_ms())
                        .await;
                }
                Err(e) => return Err(self.target.error(e)),
            };
            let mut reply = items(claimed)?.into_iter();
            // The claim's own time first (claim-2.lua), as text.
            let at: Millis = match reply.next() {
                Some(Value::BulkString(text)) => std::str::from_utf8(&text)
                    .ok()
                    .and_then(|text| text.parse().ok())
                    .unwrap_or(now),
                _ => now,
            };
            let jobs = self.claimed(Value::Array(reply.collect()), worker_id, lease, at)?;
            self.after_claim(&jobs, at).await;
            if halted || !jobs.is_empty() {
                return Ok(jobs);
            }
        }
    }

    /// What an idle wait does next, read in one round trip (`next_ready_at`): claim now, give
    /// up (`deadline` passed), or block on the marker for so many seconds (at most `MAX_BLOCK`,
    /// and no later than the next delayed job is due or the deadline).
    async fn next_wait(&self, deadline: Option<Instant>) -> CoreResult<NextWait> {
        let now = wall_clock_ms();
        let ready_at = self.next_ready_at(now).await?;
        if ready_at.is_some_and(|at| at <= now) {
            return Ok(NextWait::Ready(now));
        }
        let mut wait = ready_at
            .map_or(MAX_BLOCK, |at| Duration::from_millis(at - now))
            .min(MAX_BLOCK);
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(NextWait::Over);
            }
            wait = wait.min(left);
        }
        Ok(NextWait::Block(now, wait.as_secs_f64().max(0.001)))
    }

    /// BZPOPMIN on the marker for `seconds`: the due time of the marker it took, if any.
    /// (On a cluster, a wait its slot's move ended counts as woken, due now: the claim that
    /// follows it goes the ordinary way, which follows the slot.)
    async fn pop_marker(&self, live: &mut Live, seconds: f64) -> CoreResult<Option<f64>> {
        let woken: Option<(String, String, f64)> = match redis::cmd("BZPOPMIN")
            .arg(self.keys.key("marker"))
            .arg(seconds)
            .query_async(&mut live.connection)
            .await
        {
            Err(e) if self.target.redirected(&e) => return Ok(Some(0.0)),
            other => other.map_err(|e| self.target.error(e))?,
        };
        Ok(woken.map(|(_, _, due)| due))
    }

    /// The id of `live` on the server, if a wait on it can be ended from the command
    /// connection: the server has functions (the claim behind the wait is an FCALL) and lets
    /// this client use `CLIENT UNBLOCK`, which is checked once by ending a wait that is not
    /// going on (it answers 0). An ACL's refusal is remembered; a failed connection is not.
    async fn unblockable(&self, live: &mut Live) -> Option<i64> {
        if !self.functions() || self.server().unblock.get() == Some(&false) {
            return None;
        }
        if live.client_id.is_none() {
            match redis::cmd("CLIENT")
                .arg("ID")
                .query_async::<i64>(&mut live.connection)
                .await
            {
                Ok(id) => live.client_id = Some(id),
                Err(e) => {
                    self.refused_unblock(&e);
                    return None;
                }
            }
        }
        let id = live.client_id?;
        if self.server().unblock.get().is_none() {
            let mut commands = self.connection().await.ok()?;
            match redis::cmd("CLIENT")
                .arg("UNBLOCK")
                .arg(id)
                .query_async::<i64>(&mut commands)
                .await
            {
                Ok(_) => {
                    let _ = self.server().unblock.set(true);
                }
                Err(e) => {
                    self.refused_unblock(&e);
                    return None;
                }
            }
        }
        Some(id)
    }

    fn refused_unblock(&self, error: &redis::RedisError) {
        if error.kind() != redis::ErrorKind::Io && !error.is_timeout() {
            let _ = self.server().unblock.set(false);
        }
    }

    /// Stops a claim sent behind a wait: its halt key first (the claim, when it runs, finds it
    /// and takes nothing), then the end of the wait. The key outlives a claim that ran first
    /// by a minute, then expires.
    async fn halt(&self, token: &str, client_id: i64) -> CoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(format!("{}:halt:{token}", self.keys.key("meta")))
            .arg("1")
            .arg("PX")
            .arg(60_000)
            .ignore();
        pipe.cmd("CLIENT").arg("UNBLOCK").arg(client_id).ignore();
        self.query::<()>(&pipe).await
    }

    /// How a job that no longer exists ended, if an event after id `after` says (completed,
    /// failed, or removed: then `Missing`), read a page at a time; else `Missing`.
    async fn outcome_after(&self, id: &str, after: u64) -> CoreResult<FinishedResult> {
        const PAGE: usize = 500;
        let mut from = after + 1;
        loop {
            let events = self.read_events(from, u64::MAX, PAGE).await?;
            for event in &events {
                if let Some(result) = ending(event, id) {
                    return Ok(result);
                }
            }
            match events.last() {
                Some(last) if events.len() == PAGE => from = last.id + 1,
                _ => return Ok(FinishedResult::Missing),
            }
        }
    }

    /// Blocks until the stream has an event after `after` or `wait` passes; returns those events.
    async fn follow(
        &self,
        connection: &mut Live,
        after: u64,
        wait: Duration,
    ) -> CoreResult<Vec<StreamEvent>> {
        let reply: Value = redis::cmd("XREAD")
            .arg("BLOCK")
            .arg(wait.as_millis().max(1) as u64)
            .arg("STREAMS")
            .arg(self.keys.key("events"))
            // Past every entry whose last event is `after` (`<after>-<count>`, parse_entry).
            .arg(format!("{after}-{}", u64::MAX))
            .query_async(&mut connection.connection)
            .await
            .map_err(|e| self.target.error(e))?;
        let mut out = Vec::new();
        if let Value::Array(streams) = reply {
            for stream in streams {
                let entries = items(stream)?.into_iter().nth(1).map(items).transpose()?;
                for entry in entries.unwrap_or_default() {
                    // An entry may begin at or before `after`.
                    out.extend(parse_entry(entry)?.into_iter().filter(|e| e.id > after));
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
                self.keep_blocking(Some(connection));
                return Ok(false);
            }
            if !self.follow(&mut connection, after, wait).await?.is_empty()
                || self.last_event_id().await? > after
            {
                self.keep_blocking(Some(connection));
                return Ok(true);
            }
        }
    }

    /// The outcome once the job completes, fails for good or disappears; `NotFinished` after
    /// `timeout`. The wait begins at its first look, which reads the newest event's id with the
    /// job: a job missing then was removed before the wait began (by `remove_on_complete` as
    /// its completion was recorded, say), and is `Missing`, as it is in memory and as BullMQ
    /// rejects it ("missing key"); a job that finishes after, even if removed at once, reports
    /// its outcome, taken from the event stream.
    pub async fn wait_finished(
        &self,
        id: &str,
        timeout: Option<Millis>,
    ) -> CoreResult<FinishedResult> {
        let mut connection = None;
        let result = self.wait_finished_on(&mut connection, id, timeout).await?;
        self.keep_blocking(connection);
        Ok(result)
    }

    async fn wait_finished_on(
        &self,
        connection: &mut Option<Live>,
        id: &str,
        timeout: Option<Millis>,
    ) -> CoreResult<FinishedResult> {
        let deadline = timeout.map(|t| Instant::now() + Duration::from_millis(t));
        let (mut after, mut result) = self.finished_result_since(id).await?;
        loop {
            if matches!(result, FinishedResult::Missing) {
                // Gone: removed before the wait began (no event after its start tells how it
                // ended), or since, finished and removed at once (an event after `after`,
                // which the follow below has not read yet, tells).
                return self.outcome_after(id, after).await;
            }
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
                *connection = Some(self.blocking_connection().await?);
            }
            let events = self
                .follow(connection.as_mut().expect("just made"), after, wait)
                .await?;
            for event in events {
                after = after.max(event.id);
                if let Some(result) = ending(&event, id) {
                    return Ok(result);
                }
            }
            result = self.finished_result(id).await?;
        }
    }
}

/// How event `event` ends job `id`, if it does: completed, failed, or removed (gone).
fn ending(event: &StreamEvent, id: &str) -> Option<FinishedResult> {
    if event.job_id.as_deref() != Some(id) {
        return None;
    }
    let value = || event.field.as_ref().map(|(_, v)| v.as_str().to_owned());
    match event.event {
        "completed" => Some(FinishedResult::Completed(value().map(Into::into))),
        "failed" => Some(FinishedResult::Failed(value().unwrap_or_default())),
        "removed" => Some(FinishedResult::Missing),
        _ => None,
    }
}
