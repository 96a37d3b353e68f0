//! Job schedulers, once for the stores that run in this process (memory and SQLite): an
//! upsert, the next occurrence a claim produces, a removal and the contract's reads, as
//! `jobs::scheduler` decides. The scheduler table itself is each store's (`SchedulerTable`);
//! occurrences are jobs, created and removed through `JobStorage` like any other.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::model::{Job, Millis};
use crate::jobs::scheduler::{
    self, occurrence_id, occurrence_options, Current, JobScheduler, OnClaim, OnUpsert, Template,
};
use crate::schedule::ScheduleSpec;

use super::create::create_as;
use super::dedup;
use super::storage::JobStorage;
use super::tables::{SchedulerTable, StoredScheduler};

/// Creates or updates the scheduler `key`; returns its pending occurrence.
pub fn upsert<S: JobStorage>(
    storage: &mut S,
    key: &str,
    spec: ScheduleSpec,
    template: Template,
    max_payload_bytes: usize,
    now: Millis,
) -> CoreResult<Job> {
    scheduler::check(key, &spec, &template, now, max_payload_bytes)?;
    let stored = storage.scheduler(key)?;
    let pending_id = stored.as_ref().map(|s| occurrence_id(key, s.next_run));
    let pending = match &pending_id {
        Some(id) => storage.occurrence_state(id)?,
        None => None,
    };
    let kept = match (&stored, &pending_id) {
        (Some(s), Some(id)) if pending.is_none() => kept_owner(storage, &s.template, id)?,
        _ => None,
    };
    let current = stored.as_ref().map(|s| Current {
        spec: &s.spec,
        template: &s.template,
        iteration_count: s.count,
        next_run: s.next_run,
        pending,
        kept: kept.is_some(),
    });
    let (replace, number, from) =
        match scheduler::on_upsert(key, &spec, &template, current.as_ref(), now)? {
            OnUpsert::Keep => {
                // A kept occurrence is no job: the answer is the key's owner, as when the
                // occurrence was produced (and as an add deduplicated answers).
                let id = match kept {
                    Some(owner) => owner.to_string(),
                    None => pending_id.expect("a kept scheduler has a pending occurrence"),
                };
                return storage.load(&id)?.ok_or(CoreError::JobNotFound(id));
            }
            OnUpsert::Produce {
                replace,
                number,
                from,
            } => (replace, number, from),
        };
    let replaced = pending_id.filter(|_| replace);
    // Decided before anything is written, the replaced occurrence counting as gone.
    let run = scheduler::place(&spec, key, from, number, now, |id| {
        Ok(replaced.as_deref() != Some(id) && storage.occurrence_state(id)?.is_some())
    })?
    .ok_or_else(|| scheduler::no_free_run(key, &spec))?;
    if let Some(id) = replaced {
        remove_occurrence(storage, &id, now)?;
    }
    let created = create_occurrence(storage, key, &template, run, now)?;
    let stored = StoredScheduler {
        spec,
        template,
        count: number,
        next_run: run,
    };
    storage.save_scheduler(key, stored)?;
    Ok(created)
}

/// After a claim started `job`, an occurrence of scheduler `key`: if it was the pending one,
/// produces the next, or removes the scheduler when the schedule has ended.
pub fn on_claim<S: JobStorage>(
    storage: &mut S,
    key: &str,
    job: &str,
    now: Millis,
) -> CoreResult<()> {
    let Some(mut stored) = storage.scheduler(key)? else {
        return Ok(());
    };
    let current = Some((&stored.spec, stored.count, stored.next_run));
    let placed = match scheduler::on_claim(job, key, current, now) {
        OnClaim::Ignore => return Ok(()),
        OnClaim::Finish => None,
        OnClaim::Advance { from, number } => {
            scheduler::place(&stored.spec, key, from, number, now, |id| {
                Ok(storage.occurrence_state(id)?.is_some())
            })?
            .map(|run| (run, number))
        }
    };
    let Some((run, number)) = placed else {
        storage.delete_scheduler(key)?;
        return Ok(());
    };
    stored.count = number;
    stored.next_run = run;
    create_occurrence(storage, key, &stored.template, run, now)?;
    storage.save_scheduler(key, stored)
}

/// Removes the scheduler `key` and its pending occurrence (if it has not started); `true` if
/// the scheduler existed.
pub fn remove<S: JobStorage>(storage: &mut S, key: &str, now: Millis) -> CoreResult<bool> {
    let Some(stored) = storage.scheduler(key)? else {
        return Ok(false);
    };
    let pending = occurrence_id(key, stored.next_run);
    match storage.occurrence_state(&pending)? {
        state @ Some(_) if scheduler::not_started(state) => {
            remove_occurrence(storage, &pending, now)?
        }
        Some(_) => {}
        None => drop_waiting_occurrence(storage, &stored.template, &pending)?,
    }
    storage.delete_scheduler(key)
}

/// Whether `job` is its job scheduler's pending occurrence: waiting or delayed, under the id
/// `occurrence_id(key, next_run)` of a scheduler that exists.
pub fn is_pending_occurrence<S: SchedulerTable>(storage: &S, job: &Job) -> CoreResult<bool> {
    let Some(key) = job.options.scheduler.as_deref() else {
        return Ok(false);
    };
    if !scheduler::not_started(Some(job.state)) {
        return Ok(false);
    }
    let next_run = storage.scheduler_next_run(key)?;
    Ok(next_run.is_some_and(|run| *job.id == occurrence_id(key, run)))
}

pub fn get<S: SchedulerTable>(storage: &S, key: &str) -> CoreResult<Option<JobScheduler>> {
    storage
        .scheduler(key)?
        .map(|stored| view(storage, key.to_owned(), stored))
        .transpose()
}

/// Schedulers by next run time (then key), from index `start` to `end` inclusive
/// (`scheduler::page`).
pub fn list<S: SchedulerTable>(
    storage: &S,
    start: i64,
    end: i64,
    ascending: bool,
) -> CoreResult<Vec<JobScheduler>> {
    storage
        .scheduler_page(start, end, ascending)?
        .into_iter()
        .map(|(key, stored)| view(storage, key, stored))
        .collect()
}

fn view<S: SchedulerTable>(
    storage: &S,
    key: String,
    stored: StoredScheduler,
) -> CoreResult<JobScheduler> {
    let pending = occurrence_id(&key, stored.next_run);
    let job_id = scheduler::not_started(storage.occurrence_state(&pending)?).then_some(pending);
    Ok(JobScheduler {
        key,
        spec: stored.spec,
        template: stored.template,
        iteration_count: stored.count,
        next_run: stored.next_run,
        job_id,
    })
}

/// Removes a pending occurrence, as a removal by hand does (a `removed` event).
fn remove_occurrence<S: JobStorage>(storage: &mut S, id: &str, now: Millis) -> CoreResult<()> {
    let Some(state) = storage.occurrence_state(id)? else {
        return Ok(());
    };
    let id = Arc::from(id);
    storage.remove_job(&id, now)?;
    let prev = state.as_str();
    storage.event(now, "removed", Some(&id), Some(("prev", prev.into())))?;
    storage.settle_removals(now, false)
}

fn create_occurrence<S: JobStorage>(
    storage: &mut S,
    key: &str,
    template: &Template,
    run: Millis,
    now: Millis,
) -> CoreResult<Job> {
    let new = NewJob {
        name: template.name.clone(),
        data: template.data.clone(),
        options: occurrence_options(key, &template.options, run, now),
    };
    let seq = storage.reserve_seq(1)?;
    if new.options.dedup.is_some() {
        // The owner of the key when the occurrence waits on it (the upsert's answer, as an add
        // deduplicated answers).
        return dedup::add_occurrence(storage, new, seq, now).map(|(job, _)| job);
    }
    // The id is the occurrence's own: no automatic id is taken.
    let id = storage.auto_id(&new.options)?;
    create_as(storage, new, id, seq, false, now)
}

/// The owner of the template's dedup key when the occurrence `pending` is no job but waits on
/// that key (keep_last) for the owner to finish: it is still the scheduler's pending occurrence.
fn kept_owner<S: JobStorage>(
    storage: &S,
    template: &Template,
    pending: &str,
) -> CoreResult<Option<Arc<str>>> {
    let Some(dedup) = template.options.dedup.as_ref() else {
        return Ok(None);
    };
    if storage.next_job_id(&dedup.id)?.as_deref() != Some(pending) {
        return Ok(None);
    }
    Ok(storage.dedup_key(&dedup.id)?.map(|key| key.owner))
}

/// Drops the pending occurrence `pending` of a scheduler being removed where it waits on its
/// template's dedup key (keep_last) for the owner to finish: added then, it would run once with
/// no scheduler. The key and its owner stay as they are.
fn drop_waiting_occurrence<S: JobStorage>(
    storage: &mut S,
    template: &Template,
    pending: &str,
) -> CoreResult<()> {
    let (Some(dedup), Some(owner)) = (
        template.options.dedup.as_ref(),
        kept_owner(storage, template, pending)?,
    ) else {
        return Ok(());
    };
    let expires_at = storage.dedup_key(&dedup.id)?.and_then(|key| key.expires_at);
    storage.take_next_job(&dedup.id)?;
    storage.set_dedup_key(&dedup.id, &owner, expires_at)
}
