//! Managing a queue's jobs on Redis (what `lanemq_core::jobs::lifecycle::manage` decides in
//! process): promote, reschedule, retry, edits, logs, removal, pause, drain, clean,
//! obliterate, the rate limit and the cap on active jobs. Every change is one script call;
//! reads are plain commands.
//!
//! The scripts reply `{"ok", values...}` on success, or `{"missing"}`, `{"state", state code}`,
//! `{"locked"}`, `{"refused", message}` or `{"active", count}` when the change is refused (and nothing was written,
//! except obliterate's pause); `decode::checked` reads them.

use lanemq_core::jobs::{
    check_log_line, check_payload, index_range, rate_limit_end, wall_clock_ms, BoxFuture, JobAdmin,
    JobFilter, JobOptions, JobState, LogLine, Millis,
};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::RedisBackend;
use crate::counts::{count_jobs, gate_of};
use crate::decode::{checked, count, items, text, unexpected};
use crate::job_backend::{call, RedisJobBackend};
use crate::log_lines::decode_log;
use crate::scripts::{self, LuaScript};

/// About how many keys (or entries of the logs) one call of `remove_orphaned_jobs`'s script
/// scans (SCAN's and HSCAN's COUNT): few enough that one call holds the server only briefly (its measured
/// time is in benches/history/5-10.md).
const ORPHAN_BATCH: usize = 500;

impl RedisBackend {
    /// Runs a script with `now` and `max_events` in front of `args`.
    pub(crate) async fn change(
        &self,
        script: &LuaScript,
        now: Millis,
        args: &[&str],
    ) -> CoreResult<Value> {
        let mut all = vec![now.to_string(), self.max_events.to_string()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        self.run(script, all).await
    }

    /// Runs a script that changes one job; see [`checked`].
    async fn change_job(
        &self,
        script: &LuaScript,
        id: &str,
        now: Millis,
        args: &[&str],
        expected: &'static str,
    ) -> CoreResult<Vec<Value>> {
        let reply = self.change(script, now, args).await?;
        checked(id, reply, expected)
    }

    /// Makes a delayed job waiting now.
    pub async fn promote(&self, id: String, now: Millis) -> CoreResult<()> {
        self.change_job(&scripts::PROMOTE, &id, now, &[&id], "delayed")
            .await
            .map(drop)
    }

    /// Promotes delayed jobs, earliest first, at most `count` (`None`: all): the ids are read a
    /// batch at a time and each promoted by `promote`'s script; a job that left delayed in
    /// between is skipped. Returns how many were promoted.
    pub async fn promote_jobs(&self, count: Option<usize>, now: Millis) -> CoreResult<usize> {
        const BATCH: usize = 1000;
        let mut promoted = 0;
        loop {
            let want = count.map_or(BATCH, |n| n.saturating_sub(promoted).min(BATCH));
            if want == 0 {
                return Ok(promoted);
            }
            let mut pipe = redis::pipe();
            pipe.cmd("ZRANGE")
                .arg(self.keys.key("delayed"))
                .arg(0)
                .arg(want - 1);
            let (members,): (Vec<String>,) = self.query(&pipe).await?;
            let mut moved = 0;
            for member in &members {
                // Members carry a 14-digit sequence before the id (see `list_jobs`).
                match self.promote(member[14..].to_owned(), now).await {
                    Ok(()) => moved += 1,
                    Err(CoreError::JobState { .. } | CoreError::JobNotFound(_)) => {}
                    Err(other) => return Err(other),
                }
            }
            promoted += moved;
            if moved == 0 || members.len() < want {
                return Ok(promoted);
            }
        }
    }

    /// Promotes the delayed jobs due at `now`, as a claim does first (`promote`'s script
    /// without a job id); returns how many.
    pub async fn promote_due(&self, now: Millis) -> CoreResult<usize> {
        let reply = self.change(&scripts::PROMOTE, now, &[]).await?;
        count(checked("", reply, "")?.first())
    }

    /// Moves a delayed job's due time to `until`; with `waiting_too`, delays a waiting job
    /// too (`lifecycle::reschedule`).
    pub async fn reschedule(
        &self,
        id: String,
        until: Millis,
        now: Millis,
        waiting_too: bool,
    ) -> CoreResult<()> {
        let until = until.to_string();
        let (flag, expected) = if waiting_too {
            ("1", "waiting or delayed")
        } else {
            ("0", "delayed")
        };
        self.change_job(
            &scripts::RESCHEDULE,
            &id,
            now,
            &[&id, &until, flag],
            expected,
        )
        .await
        .map(drop)
    }

    /// Runs a finished job again: back to waiting with its outcome cleared, its attempts kept
    /// unless `reset_attempts` (lifecycle::retry_job).
    pub async fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> CoreResult<()> {
        let reset = if reset_attempts { "1" } else { "0" };
        self.change_job(
            &scripts::RETRY,
            &id,
            now,
            &[&id, reset],
            "failed or completed",
        )
        .await
        .map(drop)
    }

    /// A new priority (and LIFO flag); a waiting job moves to the back of its new priority
    /// (the front when LIFO).
    pub async fn update_priority(&self, id: String, priority: u32, lifo: bool) -> CoreResult<()> {
        JobOptions {
            priority,
            ..JobOptions::default()
        }
        .validate()?;
        let priority = priority.to_string();
        let lifo = if lifo { "1" } else { "0" };
        self.change_job(&scripts::PRIORITY, &id, 0, &[&id, &priority, lifo], "")
            .await
            .map(drop)
    }

    /// Replaces the job's data (the caller checked its size).
    pub async fn update_data(&self, id: String, data: String) -> CoreResult<()> {
        self.change_job(&scripts::EDIT, &id, 0, &["data", &id, &data], "")
            .await
            .map(drop)
    }

    pub async fn update_progress(
        &self,
        id: String,
        progress: String,
        now: Millis,
    ) -> CoreResult<()> {
        self.change_job(&scripts::EDIT, &id, now, &["progress", &id, &progress], "")
            .await
            .map(drop)
    }

    /// Appends a log line written at `now` (stored with it, see `log_lines`); with `keep > 0`
    /// only the newest `keep` lines stay. Returns the number of lines kept.
    pub async fn add_log(
        &self,
        id: String,
        line: String,
        keep: usize,
        now: Millis,
    ) -> CoreResult<usize> {
        let keep = keep.to_string();
        let reply = self
            .change_job(&scripts::LOGS, &id, now, &["add", &id, &line, &keep], "")
            .await?;
        count(reply.first())
    }

    /// Log lines `start..=end` (negative counts from the end) with their times, and the total
    /// number of lines.
    pub async fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<(Vec<LogLine>, usize)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HEXISTS").arg(self.keys.job(&id)).arg("state");
        pipe.cmd("HGET").arg(self.keys.key("logs")).arg(&id);
        let (exists, raw): (bool, Option<String>) = self.query(&pipe).await?;
        if !exists {
            return Err(CoreError::JobNotFound(id));
        }
        let mut lines = match raw {
            Some(raw) => decode_log(&raw)?,
            None => Vec::new(),
        };
        if !ascending {
            lines.reverse();
        }
        let total = lines.len();
        let page = lines.drain(index_range(total, start, end)).collect();
        Ok((page, total))
    }

    /// Keeps only the newest `keep` log lines (0 clears them).
    pub async fn clear_logs(&self, id: String, keep: usize) -> CoreResult<()> {
        let keep = keep.to_string();
        self.change_job(&scripts::LOGS, &id, 0, &["clear", &id, &keep], "")
            .await
            .map(drop)
    }

    pub async fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> CoreResult<()> {
        let trace = serde_json::to_string(&lines).map_err(|e| CoreError::Storage(e.to_string()))?;
        let has_reason = if reason.is_some() { "1" } else { "0" };
        let reason = reason.unwrap_or_default();
        let args = ["trace", &id, &trace, has_reason, &reason];
        self.change_job(&scripts::EDIT, &id, 0, &args, "")
            .await
            .map(drop)
    }

    /// Removes a job, unless a live lock holds it.
    pub async fn remove(&self, id: String, now: Millis) -> CoreResult<()> {
        self.change_job(&scripts::REMOVE, &id, now, &["job", &id], "")
            .await
            .map(drop)
    }

    pub async fn pause(&self, now: Millis) -> CoreResult<()> {
        self.change(&scripts::PAUSE, now, &["pause"])
            .await
            .map(drop)
    }

    pub async fn resume(&self, now: Millis) -> CoreResult<()> {
        self.change(&scripts::PAUSE, now, &["resume"])
            .await
            .map(drop)
    }

    pub async fn is_paused(&self) -> CoreResult<bool> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.key("meta")).arg("paused");
        let (paused,): (Option<String>,) = self.query(&pipe).await?;
        Ok(paused.as_deref() == Some("1"))
    }

    /// Removes every waiting job (and delayed ones with `delayed`); returns how many.
    pub async fn drain(&self, delayed: bool, now: Millis) -> CoreResult<usize> {
        let delayed = if delayed { "1" } else { "0" };
        let reply = self
            .change(&scripts::REMOVE, now, &["drain", delayed])
            .await?;
        count(checked("", reply, "")?.first())
    }

    /// Removes up to `limit` (0 = all) jobs in `state` older than `grace` ms: by finish time for
    /// finished jobs, by creation time otherwise, oldest first in the state's order. Jobs under
    /// a live lock are kept.
    pub async fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> CoreResult<Vec<String>> {
        let cutoff = now.saturating_sub(grace).to_string();
        let limit = limit.to_string();
        let code = JobState::ALL
            .iter()
            .position(|s| *s == state)
            .expect("every state is in ALL")
            .to_string();
        let reply = self
            .change(&scripts::REMOVE, now, &["clean", &cutoff, &limit, &code])
            .await?;
        checked("", reply, "")?
            .iter()
            .map(|id| text(id).ok_or_else(|| unexpected("a job id")))
            .collect()
    }

    /// Deletes every key of the queue (metrics and workers too). Pauses first; refused (and left paused) while jobs are
    /// active, unless `force`. Afterwards the queue is empty, not paused, with no rate limit and
    /// no cap on active jobs.
    pub async fn obliterate(&self, force: bool, now: Millis) -> CoreResult<()> {
        let force = if force { "1" } else { "0" };
        let reply = items(self.change(&scripts::OBLITERATE, now, &[force]).await?)?;
        match reply.first().and_then(text).as_deref() {
            // The metrics and workers have keys outside the script's block.
            Some("ok") => self.delete_observed().await,
            Some("active") => Err(CoreError::Refused(format!(
                "cannot obliterate a queue with {} active jobs (use force=True)",
                count(reply.get(1))?
            ))),
            other => Err(unexpected(&format!("{other:?}"))),
        }
    }

    pub async fn set_rate_limit(&self, max: u32, duration: Millis) -> CoreResult<()> {
        lanemq_core::jobs::check_rate_limit(max, duration)?;
        let (max, duration) = (max.to_string(), duration.to_string());
        self.change(&scripts::SETTINGS, 0, &["rate", &max, &duration])
            .await
            .map(drop)
    }

    pub async fn get_rate_limit(&self) -> CoreResult<Option<(u32, Millis)>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET")
            .arg(self.keys.key("meta"))
            .arg("rate_max")
            .arg("rate_duration");
        let ((max, duration),): ((Option<u32>, Option<Millis>),) = self.query(&pipe).await?;
        Ok(max.zip(duration))
    }

    pub async fn clear_rate_limit(&self) -> CoreResult<()> {
        self.change(&scripts::SETTINGS, 0, &["norate"])
            .await
            .map(drop)
    }

    /// Holds every claim back for `duration` ms from `now` (META `rate_until`, which the claim
    /// reads with the other settings).
    pub async fn rate_limit(&self, duration: Millis, now: Millis) -> CoreResult<()> {
        let end = rate_limit_end(duration, now)?.to_string();
        self.change(&scripts::SETTINGS, now, &["wait", &end])
            .await
            .map(drop)
    }

    /// How long the rate limits still hold claims back at `now`, in ms (0: they do not).
    pub async fn get_rate_limit_ttl(&self, now: Millis) -> CoreResult<Millis> {
        let mut pipe = redis::pipe();
        self.read_gate(&mut pipe);
        let (settings,): (Vec<Option<u64>>,) = self.query(&pipe).await?;
        let end = gate_of(&settings).limited_until(now);
        Ok(end.map_or(0, |end| end - now))
    }

    /// Ends the manual wait and the current window, and wakes idle workers.
    pub async fn remove_rate_limit_key(&self) -> CoreResult<()> {
        self.change(&scripts::SETTINGS, 0, &["unlimit"])
            .await
            .map(drop)
    }

    /// Removes the data of jobs that no state set references (see `lua/orphans-2.lua`); returns
    /// how many. One script call per batch of about `ORPHAN_BATCH` keys of the server (the job
    /// hashes, by SCAN) or entries of the logs, so the server is never held long.
    pub async fn remove_orphaned_jobs(&self) -> CoreResult<usize> {
        let batch = ORPHAN_BATCH.to_string();
        let mut removed = 0;
        for hash in ["jobs", "logs"] {
            let mut cursor = String::from("0");
            loop {
                let now = wall_clock_ms();
                let args = [hash, cursor.as_str(), batch.as_str()];
                let reply = items(self.change(&scripts::ORPHANS, now, &args).await?)?;
                removed += count(reply.get(1))?;
                cursor = reply
                    .first()
                    .and_then(text)
                    .ok_or_else(|| unexpected("a scan cursor"))?;
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(removed)
    }

    pub async fn set_max_active(&self, max: Option<u32>) -> CoreResult<()> {
        lanemq_core::jobs::check_max_active(max)?;
        let max = max.map(|m| m.to_string()).unwrap_or_default();
        self.change(&scripts::SETTINGS, 0, &["max_active", &max])
            .await
            .map(drop)
    }

    pub async fn get_max_active(&self) -> CoreResult<Option<u32>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET")
            .arg(self.keys.key("meta"))
            .arg("max_active");
        let (max,): (Option<u32>,) = self.query(&pipe).await?;
        Ok(max)
    }

    /// Whether the cap on active jobs is reached.
    pub async fn is_maxed(&self) -> CoreResult<bool> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET")
            .arg(self.keys.key("meta"))
            .arg("max_active");
        count_jobs(&mut pipe, self.keys.key("active"));
        let (max, active): (Option<u32>, usize) = self.query(&pipe).await?;
        Ok(max.is_some_and(|max| active >= max as usize))
    }
}

impl JobAdmin for RedisJobBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.promote(id, now))
    }

    fn promote_jobs(&self, count: Option<usize>, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.promote_jobs(count, now))
    }

    fn promote_due(&self, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.promote_due(now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.reschedule(id, until, now, false))
    }
    fn delay_job(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.reschedule(id, until, now, true))
    }

    fn retry_job(&self, id: String, reset_attempts: bool, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.retry_job(id, reset_attempts, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        call!(self, |b| b.update_priority(id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        let limit = self.max_payload_bytes();
        call!(self, |b| async move {
            check_payload(&data, limit)?;
            b.update_data(id, data).await
        })
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.update_progress(id, progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize, now: Millis) -> BoxFuture<usize> {
        let limit = self.max_payload_bytes();
        call!(self, |b| async move {
            check_log_line(&id, &line, limit)?;
            b.add_log(id, line, keep, now).await
        })
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        call!(self, |b| b.clear_logs(id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        call!(self, |b| b.save_stacktrace(id, lines, reason))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.remove(id, now))
    }

    fn remove_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        limit: Option<usize>,
        now: Millis,
    ) -> BoxFuture<usize> {
        lanemq_core::jobs::remove_jobs(self.clone(), states, filter, limit, now)
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.pause(now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.resume(now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        call!(self, |b| b.is_paused())
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.drain(delayed, now))
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        call!(self, |b| b.clean(grace, limit, state, now))
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.obliterate(force, now))
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        call!(self, |b| b.set_rate_limit(max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        call!(self, |b| b.get_rate_limit())
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        call!(self, |b| b.clear_rate_limit())
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.rate_limit(duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        call!(self, |b| b.get_rate_limit_ttl(now))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        call!(self, |b| b.remove_rate_limit_key())
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        call!(self, |b| b.remove_orphaned_jobs())
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        call!(self, |b| b.set_max_active(max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        call!(self, |b| b.get_max_active())
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        call!(self, |b| b.is_maxed())
    }

    fn close(&self) -> BoxFuture<()> {
        self.backend().close();
        Box::pin(std::future::ready(Ok(())))
    }
}
