//! The two small tables a store keeps beside its jobs, as the shared code reads and writes
//! them: dedup keys (`DedupTable`, used by `dedup`) and job schedulers (`SchedulerTable`, used by
//! `schedulers`). `JobStorage` requires both, so they sit below it.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::dedup::KeyView;
use crate::jobs::model::{JobState, Millis};
use crate::jobs::scheduler::Template;
use crate::schedule::ScheduleSpec;

/// A dedup key as its store read it, with the state of the job that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupKey {
    pub owner: Arc<str>,
    pub expires_at: Option<Millis>,
    /// A keep_last duplicate waits on the key to be added when the owner finishes.
    pub has_next: bool,
    /// `None` when the owner no longer exists.
    pub owner_state: Option<JobState>,
}

impl DedupKey {
    /// What `jobs::dedup`'s decisions read of the key.
    pub fn view(&self) -> KeyView<'_> {
        KeyView {
            owner: &self.owner,
            expires_at: self.expires_at,
            owner_state: self.owner_state,
            has_next: self.has_next,
        }
    }
}

/// A store's table of dedup keys, by dedup id. Reads take `&self`: a flow checks its nodes
/// against the keys before it writes anything.
pub trait DedupTable {
    /// The key `id`, if there is one (live or not).
    fn dedup_key(&self, id: &str) -> CoreResult<Option<DedupKey>>;
    /// Points the key `id` at `owner`, expiring at `expires_at`, with no next job (replacing
    /// whatever the key was).
    fn set_dedup_key(
        &mut self,
        id: &str,
        owner: &Arc<str>,
        expires_at: Option<Millis>,
    ) -> CoreResult<()>;
    /// The existing key `id` now expires at `expires_at`; with `next`, that job becomes the
    /// key's next job (replacing an earlier one).
    fn extend_dedup_key(
        &mut self,
        id: &str,
        expires_at: Option<Millis>,
        next: Option<NewJob>,
    ) -> CoreResult<()>;
    /// Deletes the key `id` and returns the next job it carried.
    fn take_next_job(&mut self, id: &str) -> CoreResult<Option<NewJob>>;
    /// The custom id of the next job the key `id` carries, if it carries one with an id (a job
    /// scheduler's occurrence waiting on its template's key, `lifecycle::schedulers`).
    fn next_job_id(&self, id: &str) -> CoreResult<Option<String>>;
    /// Deletes the key `id` (and its next job).
    fn delete_dedup_key(&mut self, id: &str) -> CoreResult<()>;
    /// Deletes the keys that expired at `now` and carry no next job: they mean nothing any
    /// more (`KeyView::is_live`).
    fn purge_dedup_keys(&mut self, now: Millis) -> CoreResult<()>;
    /// Job `id` was deleted because an add with `replace` took its place: whoever waits for it
    /// is told it is gone.
    fn note_replaced(&mut self, id: &Arc<str>) -> CoreResult<()>;
}

/// A scheduler as stored: its pending occurrence's id is derived from `next_run`
/// (`scheduler::occurrence_id`).
#[derive(Debug, Clone)]
pub struct StoredScheduler {
    pub spec: ScheduleSpec,
    pub template: Template,
    /// Occurrences produced so far.
    pub count: u64,
    pub next_run: Millis,
}

/// A store's table of job schedulers, by key. Reads take `&self`.
pub trait SchedulerTable {
    fn scheduler(&self, key: &str) -> CoreResult<Option<StoredScheduler>>;
    /// The scheduler's `next_run` alone (what tells its pending occurrence), if it exists.
    fn scheduler_next_run(&self, key: &str) -> CoreResult<Option<Millis>>;
    fn save_scheduler(&mut self, key: &str, scheduler: StoredScheduler) -> CoreResult<()>;
    /// Deletes the scheduler `key`; `true` if it existed.
    fn delete_scheduler(&mut self, key: &str) -> CoreResult<bool>;
    fn scheduler_count(&self) -> CoreResult<usize>;
    /// The schedulers from index `start` to `end` inclusive, with their keys, as
    /// `scheduler::page` orders and slices them (by next run time, then key).
    fn scheduler_page(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<Vec<(String, StoredScheduler)>>;
    /// The state of job `id` (an occurrence, or whatever holds its id), if it exists.
    fn occurrence_state(&self, id: &str) -> CoreResult<Option<JobState>>;
}
