//! Adding jobs: every job of a batch checked before any is written; then, per job, the
//! existing job when its custom id is taken, the dedup key's decision when it has one, else a
//! new job.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::events::Text;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::{check_payload, JobOptions};

use super::effects::Effects;
use super::storage::JobStorage;

/// The checks of one job, before anything is written.
pub fn check_new(job: &NewJob, max_payload_bytes: usize) -> CoreResult<()> {
    job.options.validate()?;
    check_payload(&job.data, max_payload_bytes)
}

/// Adds one job, or returns the existing one when its custom id is taken (`false`).
pub fn add<S: JobStorage>(
    storage: &mut S,
    job: NewJob,
    max_payload_bytes: usize,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    check_new(&job, max_payload_bytes)?;
    let seq = storage.reserve_seq(1)?;
    insert(storage, job, seq, now)
}

/// Adds jobs atomically: all are checked before any is written; input order is kept. Each
/// comes back with `true` when it was created.
pub fn add_bulk<S: JobStorage>(
    storage: &mut S,
    jobs: Vec<NewJob>,
    max_payload_bytes: usize,
    now: Millis,
) -> CoreResult<Vec<(Job, bool)>> {
    for (index, job) in jobs.iter().enumerate() {
        check_new(job, max_payload_bytes).map_err(|e| match e {
            CoreError::InvalidConfig(m) => CoreError::InvalidConfig(format!("job #{index}: {m}")),
            other => other,
        })?;
    }
    // Sequence numbers are reserved once for the batch (a duplicate leaves a gap, which is
    // fine); automatic ids are taken only by the jobs created.
    let first_seq = storage.reserve_seq(jobs.len() as u64)?;
    let mut added = Vec::with_capacity(jobs.len());
    for (seq, job) in (first_seq..).zip(jobs) {
        added.push(insert(storage, job, seq, now)?);
    }
    Ok(added)
}

/// Adds a checked job: the existing one if its custom id is taken (`false`), the holder of
/// its dedup key if that is held (`false`), else a new one (`true`).
fn insert<S: JobStorage>(
    storage: &mut S,
    job: NewJob,
    seq: u64,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    if let Some(existing) = existing(storage, &job.options, now)? {
        return Ok((existing, false));
    }
    if job.options.dedup.is_some() {
        return super::dedup::add(storage, job, seq, false, now);
    }
    let id = storage.auto_id(&job.options)?;
    Ok((create_as(storage, job, id, seq, false, now)?, true))
}

/// The job that already has the custom id of `options`, if any (a `duplicated` event).
pub fn existing<S: JobStorage>(
    storage: &mut S,
    options: &JobOptions,
    now: Millis,
) -> CoreResult<Option<Job>> {
    let Some(job) = options
        .job_id
        .as_deref()
        .map(|id| storage.load(id))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    storage.event(now, "duplicated", Some(&job.id), None)?;
    Ok(Some(job))
}

/// Writes a new job `id` at sequence `seq` (its checks done) and its events; with `hold`, it
/// waits for children (a flow's parent) before anything else, its delay counting from its
/// release.
pub fn create_as<S: JobStorage>(
    storage: &mut S,
    new: NewJob,
    id: Arc<str>,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<Job> {
    let order = if new.options.lifo {
        -(seq as i64)
    } else {
        seq as i64
    };
    let name = storage.intern_name(&new.name);
    let job = Job::added(
        Arc::clone(&id),
        Arc::clone(&name),
        Arc::from(new.data),
        new.options,
        (seq, order),
        hold,
        now,
    );
    let mut effects = Effects::new();
    effects.event("added", Some(&id), Some(("name", Text::Shared(name))));
    if hold {
        effects.event("waiting-children", Some(&id), None);
    } else if job.state == JobState::Delayed {
        let until = job.delay_until.to_string();
        effects.event("delayed", Some(&id), Some(("delay", until.into())));
    } else {
        effects.event("waiting", Some(&id), None);
    }
    storage.insert(job.clone())?;
    effects.apply(storage, now)?;
    Ok(job)
}
