//! Dedup keys read and deleted by id (`lua/dedup-36.lua`); adds, finishes, removals and retries
//! update them inside their own scripts (`lua/includes/jobs.lua`).

use lanemq_core::jobs::Millis;
use lanemq_core::{CoreError, CoreResult};

use crate::backend::RedisBackend;
use crate::decode::{items, text};
use crate::scripts;

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
