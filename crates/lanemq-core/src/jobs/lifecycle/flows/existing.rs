//! Flow nodes whose custom id a job has already (BullMQ's `updateExistingJobsParent`): the node
//! is that job. Under a parent it becomes the parent's child unless it is already (one that
//! finished is told to the parent as it finished: a completed child counts as processed), and
//! it gains the node's children that it does not have. These are the checks made before
//! anything is written; `create` writes.

use crate::error::{CoreError, CoreResult};
use crate::jobs::flow::{self, FlowNode, ParentRef};
use crate::jobs::model::Job;

use super::queues::FlowQueues;

/// What is above a node, as the checks walk down.
#[derive(Debug, Clone)]
pub(super) enum Above {
    /// Nothing: the flow's root (an existing root keeps whatever parent it has).
    Root,
    /// A job the flow creates, under the nearest existing job above it, if any.
    New(Option<ParentRef>),
    /// An existing job (or the parent that `add_children` / `attach_children` add to).
    Existing(ParentRef),
}

/// The existing job a node is: one of the node's queue whose id is the node's custom id.
pub(super) fn existing<Q: FlowQueues>(
    queues: &mut Q,
    queue: &str,
    custom_id: Option<&str>,
) -> CoreResult<Option<Job>> {
    match custom_id {
        Some(id) => queues.load(queue, id),
        None => Ok(None),
    }
}

/// Checks what `nodes` (in `queue` unless they name theirs) do to the existing jobs their
/// custom ids name, before anything is written: a job with another parent is refused (a job
/// has one parent), as is one that would be its own descendant, and an existing job that
/// gains a child must take children (`flow::takes_children`). Returns whether the job above
/// gains a child (one it does not have yet).
pub(super) fn check_existing<Q: FlowQueues>(
    queues: &mut Q,
    nodes: &[&FlowNode],
    queue: &str,
    above: &Above,
) -> CoreResult<bool> {
    let mut gains = false;
    for node in nodes {
        let queue = node.queue.as_deref().unwrap_or(queue);
        let children: Vec<&FlowNode> = node.children.iter().collect();
        let Some(job) = existing(queues, queue, node.job.options.job_id.as_deref())? else {
            gains = true;
            let anchor = match above {
                Above::Root => None,
                Above::New(anchor) => anchor.clone(),
                Above::Existing(parent) => Some(parent.clone()),
            };
            check_existing(queues, &children, queue, &Above::New(anchor))?;
            continue;
        };
        let me = ParentRef {
            queue: queue.to_owned(),
            id: job.id.to_string(),
        };
        match (above, &job.options.parent) {
            (Above::Root, _) => {}
            (Above::Existing(parent), Some(has)) if has == parent => {}
            (_, Some(has)) => return Err(flow::other_parent(&me, has)),
            (Above::Existing(anchor) | Above::New(Some(anchor)), None) => {
                gains = true;
                check_no_cycle(queues, &me, anchor)?;
            }
            (Above::New(None), None) => gains = true,
        }
        let own = Above::Existing(me);
        if check_existing(queues, &children, queue, &own)? && !flow::takes_children(job.state) {
            return Err(CoreError::JobState {
                id: job.id.to_string(),
                state: job.state.as_str(),
                expected: flow::TAKES_CHILDREN,
            });
        }
    }
    Ok(gains)
}

/// Whether `job`, an existing job, gains a child among `children` (in `queue` unless they name
/// theirs): one that is not its child already.
pub(super) fn gains<Q: FlowQueues>(
    queues: &mut Q,
    children: &[FlowNode],
    queue: &str,
    job: &ParentRef,
) -> CoreResult<bool> {
    for child in children {
        let queue = child.queue.as_deref().unwrap_or(queue);
        let mine = existing(queues, queue, child.job.options.job_id.as_deref())?
            .is_some_and(|found| found.options.parent.as_ref() == Some(job));
        if !mine {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Refuses to make `job` a child under `anchor` when `job` is `anchor` or one of its
/// ancestors (the tree would be a cycle).
fn check_no_cycle<Q: FlowQueues>(
    queues: &mut Q,
    job: &ParentRef,
    anchor: &ParentRef,
) -> CoreResult<()> {
    let mut at = Some(anchor.clone());
    while let Some(here) = at {
        if &here == job {
            return Err(flow::cycle(job, anchor));
        }
        at = queues
            .load(&here.queue, &here.id)?
            .and_then(|found| found.options.parent);
    }
    Ok(())
}
