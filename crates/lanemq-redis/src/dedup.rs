//! Dedup keys read and deleted by id (`lua/dedup-2.lua`); adds, finishes, removals and retries
//! update them inside their own scripts (`lua/includes/jobs.lua`).

use lanemq_core::jobs::dedup::KeyView;
use lanemq_core::jobs::{BoxFuture, JobDedup, JobState, Millis};
use lanemq_core::{CoreError, CoreResult};

use crate::backend::RedisBackend;
use crate::decode::{items, text};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

/// A time the scripts stored in a key: a number (cjson writes doubles, exact for a time in ms)
/// or the text of one (an argument stored as it came).
fn millis(value: &serde_json::Value) -> Option<Millis> {
    match value {
        serde_json::Value::String(text) => text.parse::<f64>().ok(),
        other => other.as_f64(),
    }
    .map(|at| at as Millis)
}

impl RedisBackend {
    async fn dedup_op(
        &self,
        op: &str,
        dedup_id: String,
        now: Millis,
    ) -> CoreResult<Option<String>> {
        let args = vec![
            now.to_string(),
            self.max_events.to_string(),
            op.to_owned(),
            dedup_id,
        ];
        let reply = items(self.run(&scripts::DEDUP, args).await?)?;
        Ok(reply.first().and_then(text))
    }

    /// The job holding the dedup key `dedup_id` at `now`, if it is held.
    pub async fn get_deduplication_job_id(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> CoreResult<Option<String>> {
        self.dedup_op("get", dedup_id, now).await
    }

    /// How long the dedup key `dedup_id` is still held at `now`, decided as the scripts decide
    /// (`KeyView::is_held`) from the key (`{owner, exp, next}` in the `dedup` hash) and its
    /// owner's state: read in two round trips, the second reading the key again, until it is
    /// the one the first read (so the owner's state is that key's owner's).
    pub async fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> CoreResult<Option<Option<Millis>>> {
        let dedup = self.keys.key("dedup");
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(&dedup).arg(&dedup_id);
        let (mut raw,): (Option<String>,) = self.query(&pipe).await?;
        loop {
            let Some(text) = raw else {
                return Ok(None);
            };
            let key: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CoreError::Storage(format!("redis: unreadable dedup key {dedup_id:?}: {e}"))
            })?;
            let owner = key["owner"].as_str().unwrap_or_default().to_owned();
            let mut pipe = redis::pipe();
            pipe.cmd("HGET").arg(self.keys.job(&owner)).arg("state");
            pipe.cmd("HGET").arg(&dedup).arg(&dedup_id);
            let (state, again): (Option<usize>, Option<String>) = self.query(&pipe).await?;
            if again.as_deref() != Some(text.as_str()) {
                raw = again;
                continue;
            }
            let view = KeyView {
                owner: &owner,
                expires_at: millis(&key["exp"]),
                owner_state: state.and_then(|s| JobState::ALL.get(s).copied()),
                has_next: !key["next"].is_null(),
            };
            return Ok(view
                .is_held(now)
                .then(|| view.expires_at.map(|at| at - now)));
        }
    }

    /// Deletes the dedup key `dedup_id`; `true` when it was held or stored a job to add.
    pub async fn remove_deduplication_key(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> CoreResult<bool> {
        match self.dedup_op("remove", dedup_id, now).await?.as_deref() {
            Some("1") => Ok(true),
            Some("0") => Ok(false),
            other => Err(CoreError::Storage(format!(
                "redis: unexpected reply to a dedup key removal: {other:?}"
            ))),
        }
    }
}

impl JobDedup for RedisJobBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        call!(self, |b| b.get_deduplication_job_id(dedup_id, now))
    }

    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>> {
        call!(self, |b| b.get_deduplication_ttl(dedup_id, now))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_deduplication_key(dedup_id, now))
    }
}
