//! Deduplication keys (see `jobs::dedup` for what an add with one decides).

use crate::jobs::model::Millis;

use super::BoxFuture;

pub trait JobDedup: Send + Sync + 'static {
    /// The id of the job holding the dedup key `dedup_id`, or `None` when the key is not held
    /// at `now` (absent, expired, or, without a ttl, its job finished).
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>>;
    /// How long the dedup key `dedup_id` is still held at `now`: `None` when it is not held
    /// (as `get_deduplication_job_id` decides), `Some(None)` when it has no expiry (held until
    /// its job finishes), else `Some(Some(ms left))`.
    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>>;
    /// Deletes the dedup key `dedup_id` (and a keep_last job stored on it), so the next add with
    /// that id is added; `true` when a key that was held (or stored a job) was deleted.
    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool>;
}
