//! Writing one new job: the existing job when its custom id is taken (a `duplicated` event),
//! else the job and its first events. Below `add`, `dedup` and `schedulers`, which all create
//! jobs; it emits its events itself (no `Effects`: a new job has no reactions to run).

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::events::Text;
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::storage::JobStorage;

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
    storage.insert(job.clone())?;
    let name_field = Some(("name", Text::Shared(name)));
    match &job.options.group {
        // A grouped job's `added` names its group.
        Some(group) => {
            let group_field = Some(("group", Text::Owned(group.clone())));
            storage.event_fields(now, "added", Some(&id), [name_field, group_field])?;
        }
        None => storage.event(now, "added", Some(&id), name_field)?,
    }
    if hold {
        storage.event(now, "waiting-children", Some(&id), None)?;
    } else if job.state == JobState::Delayed {
        let until = job.delay_until.to_string();
        storage.event(now, "delayed", Some(&id), Some(("delay", until.into())))?;
    } else {
        storage.event(now, "waiting", Some(&id), None)?;
    }
    Ok(job)
}
