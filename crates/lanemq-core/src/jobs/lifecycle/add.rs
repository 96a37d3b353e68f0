//! Adding jobs: every job of a batch checked before any is written; then, per job, the
//! existing job when its custom id is taken, the dedup key's decision when it has one, else a
//! new job (`create`).

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::check_payload;

use super::create::{create_as, existing};
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
    if job.options.group.is_some() {
        super::groups::check_room(storage, [&job.options])?;
    }
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
    if jobs.iter().any(|job| job.options.group.is_some()) {
        super::groups::check_room(storage, jobs.iter().map(|job| &job.options))?;
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
