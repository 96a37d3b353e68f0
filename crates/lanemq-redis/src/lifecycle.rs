//! Finishing and lease transitions on Redis: fail, renew, move to delayed, release, stall
//! recovery (one Lua script each, `lua/{fail,renew,delay,release,recover}-2.lua`), and the
//! lock check `holds_lock`; and `JobLifecycle` for `RedisJobBackend` (adding, claiming and
//! completing themselves are in `backend/hot_path.rs`, beside the arguments and replies they
//! share with the wire).

use lanemq_core::jobs::{
    BoxFuture, Completion, FailOutcome, Failure, Job, JobLifecycle, JobState, Millis, NewJob,
};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{self, outcome, text};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

fn flag(on: bool) -> String {
    if on { "1" } else { "0" }.to_owned()
}

fn short(what: &str) -> CoreError {
    CoreError::Storage(format!("redis: unexpected {what} reply"))
}

/// The ids of a script reply (an array of strings).
fn ids(value: Value) -> CoreResult<Vec<String>> {
    decode::items(value)?
        .iter()
        .map(|v| text(v).ok_or_else(|| short("id")))
        .collect()
}

impl RedisBackend {
    /// Records failed attempts: each job is retried (after its backoff or the given delay)
    /// while `retry` holds and attempts remain, otherwise failed for good. Per item, in order.
    pub async fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> CoreResult<Vec<CoreResult<FailOutcome>>> {
        let mut args = vec![now.to_string(), self.max_events.to_string()];
        for f in &items {
            args.extend([
                f.id.clone(),
                f.token.clone(),
                f.error.clone(),
                flag(f.stacktrace.is_some()),
                f.stacktrace.clone().unwrap_or_default(),
                flag(f.retry),
                f.delay.map(|d| d.to_string()).unwrap_or_default(),
                // Drawn here, from the one source all backends use: a Lua script must be deterministic.
                lanemq_core::jobs::jitter::random_unit().to_string(),
            ]);
        }
        let reply = decode::items(self.run(&scripts::FAIL, args).await?)?;
        if reply.len() != items.len() {
            return Err(short("fail"));
        }
        Ok(items
            .iter()
            .zip(reply)
            .map(|(f, reply)| {
                let reply = outcome(&f.id, reply)?;
                match reply.first().and_then(text).as_deref() {
                    Some("retry") => Ok(FailOutcome::Retry {
                        delay_until: reply
                            .get(1)
                            .and_then(text)
                            .map(|t| t.parse().map_err(|_| short("fail")))
                            .transpose()?,
                    }),
                    Some("failed") => Ok(FailOutcome::Failed),
                    _ => Err(short("fail")),
                }
            })
            .collect())
    }

    /// Extends each held lock to `now + lease`. Per item, in order; a job renewed whose cancel
    /// was requested (`cancel-2.lua`) answers `CancelRequested` with the request's reason.
    pub async fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> CoreResult<Vec<CoreResult<()>>> {
        let mut args = vec![now.to_string(), lease.to_string()];
        for (id, token) in &items {
            args.extend([id.clone(), token.clone()]);
        }
        let reply = decode::items(self.run(&scripts::RENEW, args).await?)?;
        if reply.len() != items.len() {
            return Err(short("renew"));
        }
        Ok(items
            .iter()
            .zip(reply)
            .map(|((id, _), reply)| {
                let reply = outcome(id, reply)?;
                match reply.first().and_then(text).as_deref() {
                    Some("cancel") => Err(CoreError::CancelRequested {
                        id: id.clone(),
                        reason: reply.get(1).and_then(text).unwrap_or_default(),
                    }),
                    _ => Ok(()),
                }
            })
            .collect())
    }

    /// Gives an active job back to the delayed set (due at `max(until, now)`) without using an
    /// attempt.
    pub async fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> CoreResult<()> {
        let args = vec![
            now.to_string(),
            self.max_events.to_string(),
            id.clone(),
            token,
            until.to_string(),
        ];
        outcome(&id, self.run(&scripts::DELAY, args).await?).map(|_| ())
    }

    /// Gives an active job back to the front of its priority without using an attempt.
    pub async fn release(&self, id: String, token: String, now: Millis) -> CoreResult<()> {
        let args = vec![
            now.to_string(),
            self.max_events.to_string(),
            id.clone(),
            token,
        ];
        outcome(&id, self.run(&scripts::RELEASE, args).await?).map(|_| ())
    }

    /// Active jobs whose lock expired go back to the front of waiting, or fail once they
    /// stalled more than their `max_stalled_count`. Returns (recovered ids, failed ids).
    pub async fn recover_stalled(&self, now: Millis) -> CoreResult<(Vec<String>, Vec<String>)> {
        let args = vec![now.to_string(), self.max_events.to_string()];
        let mut reply = decode::items(self.run(&scripts::RECOVER, args).await?)?.into_iter();
        let outcome = match (reply.next(), reply.next()) {
            (Some(recovered), Some(failed)) => (ids(recovered)?, ids(failed)?),
            _ => return Err(short("recover_stalled")),
        };
        // Job schedulers a claim left without their next occurrence (lua/README.md).
        self.repair_stale(now).await?;
        Ok(outcome)
    }

    /// Whether `token` holds the job's live lock. Only an active job's is one: a completed job
    /// keeps its last token, worker and expiry (`complete_jobs` in lua/includes/jobs.lua).
    pub async fn holds_lock(&self, id: String, token: String, now: Millis) -> CoreResult<bool> {
        let mut connection = self.connection().await?;
        let (state, held, expires): (Option<String>, Option<String>, Option<String>) =
            redis::cmd("HMGET")
                .arg(self.keys.job(&id))
                .arg("state")
                .arg("token")
                .arg("expires")
                .query_async(&mut connection)
                .await
                .map_err(|e| self.target.error(e))?;
        let active = state.and_then(|s| s.parse::<usize>().ok())
            == JobState::ALL.iter().position(|s| *s == JobState::Active);
        let expires = expires.and_then(|e| e.parse::<Millis>().ok());
        Ok(active && held.as_deref() == Some(token.as_str()) && expires.is_some_and(|e| e > now))
    }
}

impl JobLifecycle for RedisJobBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        let limit = self.max_payload_bytes();
        call!(self, |b| async move {
            Ok(b.add_bulk(vec![job], now, limit).await?.remove(0))
        })
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        let limit = self.max_payload_bytes();
        call!(self, |b| b.add_bulk(jobs, now, limit))
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        call!(self, |b| async move {
            b.claim(&worker_id, lease, max_jobs, now).await
        })
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        call!(self, |b| b.wait_for_job(timeout))
    }

    fn wait_and_claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        timeout: Option<Millis>,
        interrupted: std::sync::Arc<tokio::sync::Notify>,
    ) -> Option<BoxFuture<Vec<Job>>> {
        Some(call!(self, |b| async move {
            b.wait_and_claim(&worker_id, lease, max_jobs, timeout, &interrupted)
                .await
        }))
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        call!(self, |b| b.complete_many(items, now))
    }

    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<(Vec<CoreResult<()>>, Vec<Job>)> {
        call!(self, |b| async move {
            b.complete_and_claim(items, &worker_id, lease, max_jobs, now)
                .await
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        call!(self, |b| b.fail_many(items, now))
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        call!(self, |b| b.renew_many(items, lease, now))
    }

    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        call!(self, |b| b.move_to_delayed(id, token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.release(id, token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        call!(self, |b| b.recover_stalled(now))
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.holds_lock(id, token, now))
    }
}
