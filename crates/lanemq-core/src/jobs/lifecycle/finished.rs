//! `Finished`: what the reactions to a job that finished for good (waiters, its dedup key,
//! its flow parent, its retention) need of it. Below `effects` and `storage`, which both name
//! it, so neither needs the other for it.

use std::sync::Arc;

use crate::jobs::flow::{ChildOutcome, ParentPolicy, ParentRef};
use crate::jobs::model::{FinishedResult, Job, JobState};
use crate::jobs::options::Retention;

/// What the reactions to a finished job need of it, taken when it finished (retention may
/// delete the job itself before a store is done with the batch).
#[derive(Debug, Clone)]
pub struct Finished {
    pub id: Arc<str>,
    /// Completed or Failed.
    pub state: JobState,
    pub result: FinishedResult,
    pub dedup_id: Option<String>,
    /// Its parent and what the parent is told, for a flow's child.
    pub parent: Option<(ParentRef, ChildOutcome)>,
    pub retention: Retention,
}

impl Finished {
    /// The reactions' view of `job`, which has just completed or failed for good.
    pub fn of(job: &Job) -> Finished {
        let (result, retention) = match job.state {
            JobState::Completed => (
                FinishedResult::Completed(job.return_value.clone()),
                job.options.remove_on_complete.clone(),
            ),
            _ => (
                FinishedResult::Failed(job.failed_reason.clone().unwrap_or_default()),
                job.options.remove_on_fail.clone(),
            ),
        };
        let parent = job.options.parent.as_ref().map(|parent| {
            let outcome = match &result {
                FinishedResult::Completed(value) => {
                    ChildOutcome::Completed(value.as_deref().unwrap_or("null").to_owned())
                }
                // A child its parent would keep waiting for, removed at once by its own
                // retention, lets go instead (BullMQ drops the removed dependency).
                _ if job.options.parent_policy == Some(ParentPolicy::KeepParentWaiting)
                    && removes_at_once(&retention) =>
                {
                    ChildOutcome::Removed
                }
                _ => ChildOutcome::Failed {
                    reason: job.failed_reason.clone().unwrap_or_default(),
                    policy: job.options.parent_policy,
                },
            };
            (parent.clone(), outcome)
        });
        Finished {
            id: Arc::clone(&job.id),
            state: job.state,
            result,
            dedup_id: job.options.dedup.as_ref().map(|d| d.id.clone()),
            parent,
            retention,
        }
    }
}

/// Whether a retention deletes the job that just finished, whatever else is kept.
pub fn removes_at_once(retention: &Retention) -> bool {
    matches!(
        retention,
        Retention::RemoveAll | Retention::Keep { count: Some(0), .. }
    )
}
