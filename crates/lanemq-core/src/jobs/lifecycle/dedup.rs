//! Dedup keys, once for the stores that run in this process (memory and SQLite): what an add,
//! a finish and a manual retry do to a job's key, and the contract's reads of a key, as
//! `jobs::dedup` decides. The key table itself is each store's (`DedupTable`); the jobs an add
//! creates or replaces go through `JobStorage` like any other.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::dedup::{self, KeyView, OnAdd, OnFinish, OnRetry};
use crate::jobs::events::Text;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::Dedup;

use super::add::{create_as, existing};
use super::effects::Finished;
use super::not_found;
use super::storage::JobStorage;

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
    /// Deletes the key `id` (and its next job).
    fn delete_dedup_key(&mut self, id: &str) -> CoreResult<()>;
    /// Deletes the keys that expired at `now` and carry no next job: they mean nothing any
    /// more (`KeyView::is_live`).
    fn purge_dedup_keys(&mut self, now: Millis) -> CoreResult<()>;
    /// Job `id` was deleted because an add with `replace` took its place: whoever waits for it
    /// is told it is gone.
    fn note_replaced(&mut self, id: &Arc<str>) -> CoreResult<()>;
}

/// Adds a checked job that has dedup options (its custom id, if any, is free) at sequence
/// `seq`, as `jobs::dedup::on_add` decides: a new job (`true`), or the key's owner (`false`).
/// With `hold`, a job created waits for children first (a flow's parent).
pub fn add<S: JobStorage>(
    storage: &mut S,
    mut job: NewJob,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    let dedup = job.options.dedup.clone().expect("a job with dedup options");
    storage.purge_dedup_keys(now)?;
    let key = storage.dedup_key(&dedup.id)?;
    let decision = dedup::on_add(&dedup, key.as_ref().map(DedupKey::view).as_ref(), now);
    let expires_at = match decision {
        OnAdd::Create { expires_at } => expires_at,
        OnAdd::Replace { expires_at } => {
            let owner = key.expect("a held key has an owner").owner;
            storage.delete(&owner)?;
            storage.event(
                now,
                "removed",
                Some(&owner),
                Some(("prev", "delayed".into())),
            )?;
            storage.note_replaced(&owner)?;
            expires_at
        }
        OnAdd::Duplicate { expires_at, store } => {
            let owner = key.expect("a held key has an owner").owner;
            let duplicate_id = job.options.job_id.clone();
            let next = store.then(|| {
                // A kept duplicate runs on its own: a flow's parent waits for the owner.
                job.options.parent = None;
                job
            });
            storage.extend_dedup_key(&dedup.id, expires_at, next)?;
            let id: Arc<str> = Arc::from(dedup.id);
            storage.event_fields(
                now,
                "deduplicated",
                Some(&owner),
                [
                    Some(("deduplicationId", Text::Shared(Arc::clone(&id)))),
                    duplicate_id.map(|j| ("deduplicatedJobId", Text::Owned(j))),
                ],
            )?;
            storage.event(
                now,
                "debounced",
                Some(&owner),
                Some(("debounceId", Text::Shared(id))),
            )?;
            // A held key's owner exists (`KeyView::is_held`).
            let found = storage.load(&owner)?;
            return Ok((found.ok_or_else(|| not_found(&owner))?, false));
        }
    };
    let id = storage.auto_id(&job.options)?;
    let created = create_as(storage, job, id, seq, hold, now)?;
    storage.set_dedup_key(&dedup.id, &created.id, expires_at)?;
    Ok((created, true))
}

/// The id of the job an add with `dedup` would return instead of adding one
/// (`flow::dedup_owner`).
pub fn owner<S: DedupTable>(
    storage: &S,
    dedup: &Dedup,
    now: Millis,
) -> CoreResult<Option<Arc<str>>> {
    let key = storage.dedup_key(&dedup.id)?;
    let view = key.as_ref().map(DedupKey::view);
    let duplicate = crate::jobs::flow::dedup_owner(dedup, view.as_ref(), now).is_some();
    Ok(key.filter(|_| duplicate).map(|k| k.owner))
}

/// After a job completed or failed for good: releases its key, or adds the key's next job.
pub fn on_finish<S: JobStorage>(
    storage: &mut S,
    finished: &Finished,
    now: Millis,
) -> CoreResult<()> {
    let Some(dedup_id) = finished.dedup_id.as_deref() else {
        return Ok(());
    };
    let key = storage.dedup_key(dedup_id)?;
    match dedup::on_finish(&finished.id, key.as_ref().map(DedupKey::view).as_ref(), now) {
        OnFinish::Keep => Ok(()),
        OnFinish::Release => storage.delete_dedup_key(dedup_id),
        OnFinish::Requeue => {
            let next = storage
                .take_next_job(dedup_id)?
                .expect("a key to requeue carries a next job");
            if existing(storage, &next.options, now)?.is_some() {
                return Ok(());
            }
            let expires_at = next
                .options
                .dedup
                .as_ref()
                .and_then(|d| dedup::expiry(d, now));
            let seq = storage.reserve_seq(1)?;
            let id = storage.auto_id(&next.options)?;
            let added = create_as(storage, next, id, seq, false, now)?;
            storage.set_dedup_key(dedup_id, &added.id, expires_at)
        }
    }
}

/// Before a finished `job` is retried by hand: it takes its key back, unless another
/// unfinished job holds it (then the retry is refused and nothing changes).
pub fn on_retry<S: JobStorage>(storage: &mut S, job: &Job, now: Millis) -> CoreResult<()> {
    let Some(dedup) = job.options.dedup.as_ref() else {
        return Ok(());
    };
    let key = storage.dedup_key(&dedup.id)?;
    let view = key.as_ref().map(DedupKey::view);
    match dedup::on_retry(dedup, &job.id, view.as_ref(), now) {
        OnRetry::Refuse { holder } => Err(dedup::retry_refused(&job.id, &dedup.id, &holder)),
        OnRetry::Reclaim { expires_at } => storage.set_dedup_key(&dedup.id, &job.id, expires_at),
    }
}

/// The id of the job holding the key `id`, if it is held (`JobDedup::get_deduplication_job_id`).
pub fn holder<S: DedupTable>(storage: &S, id: &str, now: Millis) -> CoreResult<Option<String>> {
    Ok(storage
        .dedup_key(id)?
        .filter(|k| k.view().is_held(now))
        .map(|k| k.owner.to_string()))
}

/// How long the key `id` is still held at `now` (`JobDedup::get_deduplication_ttl`).
pub fn ttl<S: DedupTable>(
    storage: &S,
    id: &str,
    now: Millis,
) -> CoreResult<Option<Option<Millis>>> {
    Ok(storage
        .dedup_key(id)?
        .filter(|k| k.view().is_held(now))
        .map(|k| k.expires_at.map(|at| at - now)))
}

/// Deletes the key `id` (and its next job); `true` if it meant anything
/// (`JobDedup::remove_deduplication_key`).
pub fn remove_key<S: DedupTable>(storage: &mut S, id: &str, now: Millis) -> CoreResult<bool> {
    let live = storage
        .dedup_key(id)?
        .is_some_and(|k| k.view().is_live(now));
    storage.delete_dedup_key(id)?;
    Ok(live)
}
