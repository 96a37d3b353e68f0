//! Dedup keys, once for the stores that run in this process (memory and SQLite): what an add,
//! a finish and a manual retry do to a job's key, and the contract's reads of a key, as
//! `jobs::dedup` decides. The key table itself is each store's (`DedupTable`); the jobs an add
//! creates or replaces go through `JobStorage` like any other.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::dedup::{self, OnAdd, OnFinish, OnRetry};
use crate::jobs::events::Text;
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::Dedup;
use crate::jobs::scheduler;

use super::create::{create_as, existing};
use super::finished::Finished;
use super::not_found;
use super::storage::JobStorage;
use super::tables::{DedupKey, DedupTable};

/// Adds a checked job that has dedup options (its custom id, if any, is free) at sequence
/// `seq`, as `jobs::dedup::on_add` decides: a new job (`true`), or the key's owner (`false`).
/// With `hold`, a job created waits for children first (a flow's parent).
pub fn add<S: JobStorage>(
    storage: &mut S,
    job: NewJob,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    add_deciding(storage, job, None, seq, hold, now, dedup::on_add)
}

/// `add`, a job created taking the id `id` when given (one reserved for it beforehand: a flow's
/// node in another SQLite file), else its custom or automatic id.
pub fn add_as<S: JobStorage>(
    storage: &mut S,
    job: NewJob,
    id: Option<Arc<str>>,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    add_deciding(storage, job, id, seq, hold, now, dedup::on_add)
}

/// Produces a job scheduler's occurrence whose template has (keep_last) dedup options, as
/// `jobs::dedup::on_add_occurrence` decides: the occurrence (`true`), or the key's owner, the
/// occurrence kept on the key to be added when the owner finishes (`false`).
pub fn add_occurrence<S: JobStorage>(
    storage: &mut S,
    job: NewJob,
    seq: u64,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    add_deciding(
        storage,
        job,
        None,
        seq,
        false,
        now,
        dedup::on_add_occurrence,
    )
}

fn add_deciding<S: JobStorage>(
    storage: &mut S,
    mut job: NewJob,
    id: Option<Arc<str>>,
    seq: u64,
    hold: bool,
    now: Millis,
    decide: fn(&Dedup, Option<&dedup::KeyView<'_>>, Millis) -> OnAdd,
) -> CoreResult<(Job, bool)> {
    let dedup = job.options.dedup.clone().expect("a job with dedup options");
    storage.purge_dedup_keys(now)?;
    let key = storage.dedup_key(&dedup.id)?;
    let decision = decide(&dedup, key.as_ref().map(DedupKey::view).as_ref(), now);
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
    let id = match id {
        Some(id) => id,
        None => storage.auto_id(&job.options)?,
    };
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
            let mut next = storage
                .take_next_job(dedup_id)?
                .expect("a key to requeue carries a next job");
            if let Some(delay) = scheduler::requeued_delay(&next.options, now) {
                next.options.delay = delay;
            }
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
