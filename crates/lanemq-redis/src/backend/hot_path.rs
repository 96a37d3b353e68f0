//! The hot path: adding, claiming and completing jobs. Each call's script arguments
//! (`add_args`, `claim_args`, `complete_args`) and the reading of its reply (`claimed`,
//! `completed`, `completed_and_claimed`) are built here once, for the awaited calls below and
//! for the wire's (`wire_calls.rs`), which send the same bytes and read the same replies.

use lanemq_core::jobs::{Completion, Job, Millis, NewJob};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use super::RedisBackend;
use crate::decode::{self, items};
use crate::scripts;

impl RedisBackend {
    /// Adds jobs (validated here first: all or nothing); returns each with whether it was created.
    pub async fn add_bulk(
        &self,
        jobs: Vec<NewJob>,
        now: Millis,
        max_payload_bytes: usize,
    ) -> CoreResult<Vec<(Job, bool)>> {
        let args = self.add_args(&jobs, now, max_payload_bytes)?;
        decode::added_jobs(self.run(&scripts::ADD, args).await?, jobs, now)
    }

    /// The add script's arguments; refuses the whole batch if one job is invalid.
    pub(crate) fn add_args(
        &self,
        jobs: &[NewJob],
        now: Millis,
        max_payload_bytes: usize,
    ) -> CoreResult<Vec<String>> {
        let mut args = vec![now.to_string(), self.max_events.to_string()];
        for (index, job) in jobs.iter().enumerate() {
            job.options
                .validate()
                .and_then(|()| lanemq_core::jobs::check_payload(&job.data, max_payload_bytes))
                .map_err(|e| match e {
                    CoreError::InvalidConfig(m) => {
                        CoreError::InvalidConfig(format!("job #{index}: {m}"))
                    }
                    other => other,
                })?;
            let options = serde_json::to_string(&job.options)
                .map_err(|e| CoreError::Storage(e.to_string()))?;
            args.extend([
                job.name.clone(),
                job.data.clone(),
                options,
                job.options.job_id.clone().unwrap_or_default(),
                job.options.priority.to_string(),
                if job.options.lifo { "1" } else { "0" }.to_owned(),
                job.options.delay.to_string(),
            ]);
        }
        Ok(args)
    }

    pub(crate) fn claim_args(
        &self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> Vec<String> {
        vec![
            now.to_string(),
            self.max_events.to_string(),
            worker_id.to_owned(),
            lease.to_string(),
            max_jobs.to_string(),
            self.token_seed(),
        ]
    }

    pub(crate) fn claimed(
        &self,
        reply: Value,
        worker_id: &str,
        lease: Millis,
        now: Millis,
    ) -> CoreResult<Vec<Job>> {
        decode::claimed_jobs(reply, worker_id, lease, now)
    }

    pub(crate) fn completed(
        completions: &[Completion],
        reply: Value,
    ) -> CoreResult<Vec<CoreResult<()>>> {
        Ok(completions
            .iter()
            .zip(items(reply)?)
            .map(|(c, outcome)| decode::outcome(&c.id, outcome).map(|_| ()))
            .collect())
    }

    pub(crate) fn complete_args(&self, completions: &[Completion], now: Millis) -> Vec<String> {
        let mut args = vec![now.to_string(), self.max_events.to_string()];
        Self::push_completions(&mut args, completions);
        args
    }

    pub(crate) fn push_completions(args: &mut Vec<String>, completions: &[Completion]) {
        for c in completions {
            args.extend([c.id.clone(), c.token.clone(), c.result.clone()]);
        }
    }

    pub async fn claim(
        &self,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<Vec<Job>> {
        let args = self.claim_args(worker_id, lease, max_jobs, now);
        let reply = self.run(&scripts::CLAIM, args).await?;
        let claimed = self.claimed(reply, worker_id, lease, now)?;
        self.after_claim(&claimed, now).await;
        Ok(claimed)
    }

    pub async fn complete_many(
        &self,
        completions: Vec<Completion>,
        now: Millis,
    ) -> CoreResult<Vec<CoreResult<()>>> {
        let args = self.complete_args(&completions, now);
        Self::completed(&completions, self.run(&scripts::COMPLETE, args).await?)
    }

    /// Completes jobs, then claims, in one script call.
    pub async fn complete_and_claim(
        &self,
        completions: Vec<Completion>,
        worker_id: &str,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<(Vec<CoreResult<()>>, Vec<Job>)> {
        let mut args = self.claim_args(worker_id, lease, max_jobs, now);
        Self::push_completions(&mut args, &completions);
        let reply = self.run(&scripts::COMPLETE_CLAIM, args).await?;
        let (outcomes, claimed) =
            self.completed_and_claimed(&completions, reply, worker_id, lease, now)?;
        self.after_claim(&claimed, now).await;
        Ok((outcomes, claimed))
    }

    pub(crate) fn completed_and_claimed(
        &self,
        completions: &[Completion],
        reply: Value,
        worker_id: &str,
        lease: Millis,
        now: Millis,
    ) -> CoreResult<(Vec<CoreResult<()>>, Vec<Job>)> {
        let mut reply = items(reply)?.into_iter();
        let short = || CoreError::Storage("redis: short complete_and_claim reply".into());
        let outcomes = Self::completed(completions, reply.next().ok_or_else(short)?)?;
        let claimed = self.claimed(reply.next().ok_or_else(short)?, worker_id, lease, now)?;
        Ok((outcomes, claimed))
    }
}
