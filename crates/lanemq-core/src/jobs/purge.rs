//! `remove_jobs`, once for every backend: pages of `search_jobs`, each job found removed by
//! `remove` (so by its rules: a job a worker holds, or a job scheduler's pending occurrence,
//! stays; a job goes with its tree of children; each removal emits `removed`).

use crate::error::CoreError;

use super::contract::{BoxFuture, JobAdmin, JobReads};
use super::model::{JobState, Millis};
use super::search::{JobFilter, MAX_SEARCH_COUNT};

/// Removes up to `limit` (`None`: all) jobs of `states` (all when empty) meeting `filter` at
/// `now`, in `list_jobs`'s order; returns how many of them were removed (the children that went
/// with them are not counted). Each page holds the store for one bounded search, each job for
/// one `remove`.
pub fn remove_jobs<B>(
    backend: B,
    states: Vec<JobState>,
    filter: JobFilter,
    limit: Option<usize>,
    now: Millis,
) -> BoxFuture<usize>
where
    B: JobReads + JobAdmin + Clone,
{
    Box::pin(async move {
        // Bad criteria are refused before anything is removed.
        filter.matcher(now)?;
        let limit = limit.unwrap_or(usize::MAX);
        let mut removed = 0;
        let mut cursor = Some(0);
        while let Some(at) = cursor.filter(|_| removed < limit) {
            let page = backend.search_jobs(
                states.clone(),
                filter.clone(),
                (at, MAX_SEARCH_COUNT.min(limit - removed)),
                true,
                now,
            );
            let (jobs, next) = page.await?;
            let before = backend.get_job_count(states.clone()).await?;
            for job in jobs {
                match backend.remove(job.id.to_string(), now).await {
                    Ok(()) => removed += 1,
                    // Gone with a parent removed before it, or held: `remove` leaves it.
                    Err(CoreError::JobNotFound(_) | CoreError::Refused(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            // The jobs removed (and children of theirs in these states) were before the
            // cursor: the rest moved up by as many places.
            let after = backend.get_job_count(states.clone()).await?;
            cursor = next.map(|n| n.saturating_sub(before.saturating_sub(after)));
        }
        Ok(removed)
    })
}
