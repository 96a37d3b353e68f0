//! Flows (BullMQ's FlowProducer): parent jobs that wait for their children. The decisions here
//! are pure functions of what a backend read, shared by the backends so that they decide alike;
//! the in-process backends then write what they decide once (`lifecycle::flows`), the Redis
//! backend in its Lua scripts.
//!
//! A parent is created in `waiting_children` and holds its children's keys (`<queue>:<id>`) in
//! four sets: unprocessed (still pending, or failed under `keep_parent_waiting`), processed
//! (completed, with their return values), failed (the child that failed the parent) and
//! ignored (failed under `ignore_dependency_on_failure` or `continue_parent_on_failure`, with
//! the reason, as BullMQ records both). It is released
//! (waiting, or delayed by its own `delay` counted from then) once nothing is unprocessed.
//! Only a child still in its parent's unprocessed set affects the parent: a child detached,
//! retried after its parent moved on (unless the parent recorded its failure: then it is
//! pending for it again, as in BullMQ), or orphaned (its parent removed) runs on its own.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};

use super::contract::NewJob;
use super::dedup::{self, KeyView};
use super::model::{Job, JobState, Millis};
use super::options::Dedup;
use super::parent::child_key;
// A job's options carry its parent link, so it lives below them (`parent`); flows decide with it.
pub use super::parent::{ParentPolicy, ParentRef};

/// One node of a flow to add: a job, the queue it goes to (`None`: its parent's queue, or for
/// the root the queue the flow is added on) and its children.
#[derive(Debug, Clone)]
pub struct FlowNode {
    pub queue: Option<String>,
    pub job: NewJob,
    pub children: Vec<FlowNode>,
}

/// A node as added: its queue, the job, and its children.
#[derive(Debug, Clone)]
pub struct AddedNode {
    pub queue: String,
    pub job: Job,
    pub children: Vec<AddedNode>,
}

/// A page of a parent's dependencies (child keys `<queue>:<id>`), each set sorted by key;
/// `next` holds the next cursor of each set (processed, unprocessed, failed, ignored), `None`
/// at its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependencies {
    /// Completed children and their return values (JSON text).
    pub processed: Vec<(String, String)>,
    pub unprocessed: Vec<String>,
    /// Failed children and their reasons.
    pub failed: Vec<(String, String)>,
    /// Children whose failure was ignored, and their reasons.
    pub ignored: Vec<(String, String)>,
    pub next: [Option<usize>; 4],
}

impl Dependencies {
    /// A page of each whole set (each sorted by key): from its cursor (processed, unprocessed,
    /// failed, ignored), at most `count` entries of each (`None`: all).
    pub fn page(
        processed: &[(String, String)],
        unprocessed: &[String],
        failed: &[(String, String)],
        ignored: &[(String, String)],
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> Self {
        let (processed, p) = page(processed, cursors[0], count);
        let (unprocessed, u) = page(unprocessed, cursors[1], count);
        let (failed, f) = page(failed, cursors[2], count);
        let (ignored, i) = page(ignored, cursors[3], count);
        Self {
            processed,
            unprocessed,
            failed,
            ignored,
            next: [p, u, f, i],
        }
    }
}

/// How many children a parent has in each set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DependencyCounts {
    pub processed: usize,
    pub unprocessed: usize,
    pub failed: usize,
    pub ignored: usize,
}

/// Whether a flow is one job: a root without children in the queue the flow is added on. It
/// is then added as `add` adds a job (its dedup options, a custom id that exists: the existing
/// job), so that a flow of one job and a single add agree.
pub fn is_single_job(root: &FlowNode, home: &str) -> bool {
    root.children.is_empty() && root.queue.as_deref().is_none_or(|q| q == home)
}

/// The custom id of a flow's root in the queue the flow is added on: when a job has it, the
/// flow is that job, with the children it has (like a single add, nothing else is written but
/// a `duplicated` event).
pub fn root_custom_id<'a>(root: &'a FlowNode, home: &str) -> Option<&'a str> {
    if root.queue.as_deref().is_some_and(|q| q != home) {
        return None;
    }
    root.job.options.job_id.as_deref()
}

/// Sorts the children of an existing job's node by key, as its parent's sets are.
pub fn sort_children(node: &mut AddedNode) {
    node.children
        .sort_by_key(|a| child_key(&a.queue, &a.job.id));
}

/// The error of the flow calls on a backend that does not implement flows yet.
pub fn unsupported() -> CoreError {
    CoreError::Refused("flows are not supported by this backend yet".into())
}

/// Checks a flow (or the children `add_children` adds) before anything is written: every
/// node's options, no custom id and no dedup id twice in one queue within the flow, then
/// `check_node` (the backend's own checks: the queue
/// exists, the payload fits, the id is free, `check_dedup_owner`) with the node's resolved
/// queue and whether it is a child (has a parent). Errors name the node (`root`,
/// `root.children[0]`, ...).
pub fn check_nodes(
    nodes: &[&FlowNode],
    queue: &str,
    path: &str,
    mut check_node: impl FnMut(&str, &NewJob, bool) -> CoreResult<()>,
) -> CoreResult<()> {
    let mut ids: HashSet<(String, String)> = HashSet::new();
    let mut dedup_ids: HashSet<(String, String)> = HashSet::new();
    let home = queue;
    let mut stack: Vec<(&FlowNode, String, String)> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let at = if nodes.len() == 1 && path == "root" {
                path.to_owned()
            } else {
                format!("{path}[{i}]")
            };
            (*n, queue.to_owned(), at)
        })
        .collect();
    while let Some((node, parent_queue, at)) = stack.pop() {
        let queue = node.queue.clone().unwrap_or(parent_queue);
        let named = |e: CoreError| match e {
            CoreError::InvalidConfig(m) => CoreError::InvalidConfig(format!("flow node {at}: {m}")),
            other => other,
        };
        node.job.options.validate().map_err(named)?;
        if queue != home {
            // (the flow's own queue passed the rule, or is a Redis queue kept by its old name)
            crate::jobs::check_queue_name(&queue).map_err(named)?;
        }
        if let Some(options) = &node.job.options.dedup {
            if !dedup_ids.insert((queue.clone(), options.id.clone())) {
                return Err(named(CoreError::InvalidConfig(format!(
                    "dedup id {:?} appears twice in queue {queue:?}",
                    options.id
                ))));
            }
        }
        if let Some(id) = &node.job.options.job_id {
            if !ids.insert((queue.clone(), id.clone())) {
                return Err(named(CoreError::InvalidConfig(format!(
                    "job_id {id:?} appears twice in queue {queue:?}"
                ))));
            }
        }
        check_node(&queue, &node.job, at != "root").map_err(named)?;
        for (i, child) in node.children.iter().enumerate() {
            stack.push((child, queue.clone(), format!("{at}.children[{i}]")));
        }
    }
    Ok(())
}

/// The job a flow node with `dedup` is deduplicated into (its owner), as `dedup::on_add`
/// decides from the key: `None` when the node is created (the key is free, or replaced).
pub fn dedup_owner<'a>(dedup: &Dedup, key: Option<&KeyView<'a>>, now: Millis) -> Option<&'a str> {
    match dedup::on_add(dedup, key, now) {
        dedup::OnAdd::Duplicate { .. } => key.map(|k| k.owner),
        _ => None,
    }
}

/// Refuses a child deduplicated into `owner` when the owner has a parent already (a job has
/// one parent; BullMQ refuses this too): the flow then writes nothing.
pub fn check_dedup_owner(
    dedup_id: &str,
    owner: &str,
    owner_parent: Option<&str>,
) -> CoreResult<()> {
    match owner_parent {
        Some(parent) => Err(CoreError::InvalidConfig(format!(
            "dedup ({dedup_id:?}) is held by job {owner:?}, which is already a child of \
             {parent:?} (a job has one parent)"
        ))),
        None => Ok(()),
    }
}

/// Refuses a child of `add_children` deduplicated into `owner` (its key `owner_key`) when the
/// owner is the job the children are added to or one of its ancestors (`lineage`, their
/// keys): the job would become its own ancestor. The flow then writes nothing.
pub fn check_dedup_cycle(
    dedup_id: &str,
    owner: &str,
    owner_key: &str,
    lineage: &[String],
) -> CoreResult<()> {
    if lineage.iter().any(|key| key == owner_key) {
        return Err(CoreError::InvalidConfig(format!(
            "dedup ({dedup_id:?}) is held by job {owner:?}, which is the parent these children \
             are added to or one of its ancestors (a job cannot be its own ancestor)"
        )));
    }
    Ok(())
}

/// What a finished owner that a flow's child was deduplicated into tells its new parent at
/// once, as if the child had just finished: completed, with its return value (processed), or
/// failed, with its reason and its own parent policy. `None` for an unfinished owner (the
/// parent waits for it).
pub fn finished_owner_outcome(owner: &Job) -> Option<ChildOutcome> {
    match owner.state {
        JobState::Completed => Some(ChildOutcome::Completed(
            owner.return_value.as_deref().unwrap_or("null").to_owned(),
        )),
        JobState::Failed => Some(ChildOutcome::Failed {
            reason: owner.failed_reason.clone().unwrap_or_default(),
            policy: owner.options.parent_policy,
        }),
        _ => None,
    }
}

/// What happened to a child that its parent hears of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildOutcome {
    /// Completed with this return value (JSON text).
    Completed(String),
    /// Failed for good, with its policy.
    Failed {
        reason: String,
        policy: Option<ParentPolicy>,
    },
    /// Removed, or detached from the parent, while pending.
    Removed,
}

/// Where a child's key goes in its parent's sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Processed(String),
    Failed(String),
    Ignored(String),
    /// Out of every set.
    Dropped,
    /// Still unprocessed (`keep_parent_waiting`).
    Kept,
}

/// What the parent does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Then {
    Stay,
    Release,
    Fail(String),
}

/// The reason a parent fails for its child `child_id`.
pub fn child_failed_reason(child_id: &str, reason: &str) -> String {
    format!("child {child_id} failed: {reason}")
}

/// What a parent does when its pending child `child_id` has `outcome`: the child's key leaves
/// the unprocessed set for `Record`; `pending_after` children are then still unprocessed; only
/// a parent in `waiting_children` moves.
pub fn on_child(
    child_id: &str,
    outcome: ChildOutcome,
    pending_after: usize,
    parent_state: JobState,
) -> (Record, Then) {
    let waiting = parent_state == JobState::WaitingChildren;
    let release_when_done = if waiting && pending_after == 0 {
        Then::Release
    } else {
        Then::Stay
    };
    match outcome {
        ChildOutcome::Completed(value) => (Record::Processed(value), release_when_done),
        ChildOutcome::Removed => (Record::Dropped, release_when_done),
        ChildOutcome::Failed { reason, policy } => match policy {
            None | Some(ParentPolicy::FailParentOnFailure) => {
                let then = if waiting {
                    Then::Fail(child_failed_reason(child_id, &reason))
                } else {
                    Then::Stay
                };
                (Record::Failed(reason), then)
            }
            Some(ParentPolicy::IgnoreDependencyOnFailure) => {
                (Record::Ignored(reason), release_when_done)
            }
            Some(ParentPolicy::RemoveDependencyOnFailure) => (Record::Dropped, release_when_done),
            Some(ParentPolicy::ContinueParentOnFailure) => {
                let then = if waiting { Then::Release } else { Then::Stay };
                (Record::Ignored(reason), then)
            }
            Some(ParentPolicy::KeepParentWaiting) => (Record::Kept, Then::Stay),
        },
    }
}

/// Where a released parent goes: waiting, or delayed until `now + delay` when its options
/// have a delay (counted from its release).
pub fn release_to(delay: Millis, now: Millis) -> (JobState, Millis) {
    if delay > 0 {
        (JobState::Delayed, now.saturating_add(delay))
    } else {
        (JobState::Waiting, 0)
    }
}

/// What a child retried by hand means for its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retried {
    /// The child is pending for its parent again (BullMQ's rule): the parent still waits for
    /// children, or it recorded this child's failure (failed or ignored; the parent, released
    /// already, does not move).
    Rejoin,
    /// The parent failed because of this child: it waits for it again, its failure undone
    /// (and so up the tree, for the parents it failed in turn).
    Reopen,
    /// Otherwise the retried child runs on its own.
    Detached,
}

/// What retrying the child `child_id` does to its parent, from the parent's state and failure
/// reason (`None`: the parent is gone) and whether the parent recorded the child's failure
/// (its key is in the parent's failed or ignored set).
pub fn on_retry(
    child_id: &str,
    parent: Option<(JobState, Option<&str>)>,
    failure_recorded: bool,
) -> Retried {
    match parent {
        Some((JobState::WaitingChildren, _)) => Retried::Rejoin,
        Some((JobState::Failed, Some(reason)))
            if reason.starts_with(&child_failed_reason(child_id, "")) =>
        {
            Retried::Reopen
        }
        Some(_) if failure_recorded => Retried::Rejoin,
        _ => Retried::Detached,
    }
}

/// The states a job that is given children by `parent=` takes them in (BullMQ's
/// `opts.parent`): waiting or delayed (it then waits for them in waiting_children), or
/// waiting_children already. An active job is refused: its processor, which runs, would finish
/// it without the child (it adds children with `add_children`); a finished one too.
pub const TAKES_CHILDREN: &str = "waiting, delayed or waiting_children";

/// Whether a job in `state` may be given children (`TAKES_CHILDREN`).
pub fn takes_children(state: JobState) -> bool {
    matches!(
        state,
        JobState::Waiting | JobState::Delayed | JobState::WaitingChildren
    )
}

/// The refusal of a flow node (or an add's `parent=`) whose custom id names a job that has
/// another parent: a job has one parent (BullMQ: "the parent job cannot be replaced").
pub fn other_parent(job: &ParentRef, parent: &ParentRef) -> CoreError {
    CoreError::Refused(format!(
        "job {:?} of queue {:?} is already a child of {:?} (a job has one parent)",
        job.id,
        job.queue,
        parent.key()
    ))
}

/// The refusal of an existing job made a child under its own descendant `under`.
pub fn cycle(job: &ParentRef, under: &ParentRef) -> CoreError {
    CoreError::Refused(format!(
        "job {:?} of queue {:?} cannot be a child under {:?}, its own descendant",
        job.id,
        job.queue,
        under.key()
    ))
}

/// Refuses `add_children` with nothing to add (the parent would wait for nothing).
pub fn check_children_count(parent_id: &str, count: usize) -> CoreResult<()> {
    if count == 0 {
        return Err(CoreError::InvalidConfig(format!(
            "add_children on job {parent_id:?}: no children given"
        )));
    }
    Ok(())
}

/// One page of a sorted set: from offset `cursor`, at most `count` entries (`None`: all);
/// returns the page and the next cursor (`None` when the end is reached).
fn page<T: Clone>(items: &[T], cursor: usize, count: Option<usize>) -> (Vec<T>, Option<usize>) {
    let start = cursor.min(items.len());
    let end = count.map_or(items.len(), |c| start.saturating_add(c).min(items.len()));
    let next = (end < items.len()).then_some(end);
    (items[start..end].to_vec(), next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::options::JobOptions;

    fn node(id: Option<&str>, queue: Option<&str>, children: Vec<FlowNode>) -> FlowNode {
        FlowNode {
            queue: queue.map(str::to_owned),
            job: NewJob {
                name: "n".into(),
                data: "null".into(),
                options: JobOptions {
                    job_id: id.map(str::to_owned),
                    ..JobOptions::default()
                },
            },
            children,
        }
    }

    #[test]
    fn completed_children_release_the_last_time() {
        let c = || ChildOutcome::Completed("1".into());
        let w = JobState::WaitingChildren;
        assert_eq!(
            on_child("a", c(), 1, w),
            (Record::Processed("1".into()), Then::Stay)
        );
        assert_eq!(
            on_child("a", c(), 0, w),
            (Record::Processed("1".into()), Then::Release)
        );
        // A parent that already moved on only records.
        assert_eq!(
            on_child("a", c(), 0, JobState::Active),
            (Record::Processed("1".into()), Then::Stay)
        );
        assert_eq!(
            on_child("a", ChildOutcome::Removed, 0, w),
            (Record::Dropped, Then::Release)
        );
    }

    #[test]
    fn failure_policies() {
        let w = JobState::WaitingChildren;
        let failed = |policy| ChildOutcome::Failed {
            reason: "boom".into(),
            policy,
        };
        let fail = Then::Fail("child c1 failed: boom".into());
        assert_eq!(
            on_child("c1", failed(None), 3, w),
            (Record::Failed("boom".into()), fail.clone())
        );
        assert_eq!(
            on_child("c1", failed(Some(ParentPolicy::FailParentOnFailure)), 0, w),
            (Record::Failed("boom".into()), fail)
        );
        assert_eq!(
            on_child(
                "c1",
                failed(Some(ParentPolicy::IgnoreDependencyOnFailure)),
                1,
                w
            ),
            (Record::Ignored("boom".into()), Then::Stay)
        );
        assert_eq!(
            on_child(
                "c1",
                failed(Some(ParentPolicy::IgnoreDependencyOnFailure)),
                0,
                w
            ),
            (Record::Ignored("boom".into()), Then::Release)
        );
        assert_eq!(
            on_child(
                "c1",
                failed(Some(ParentPolicy::RemoveDependencyOnFailure)),
                0,
                w
            ),
            (Record::Dropped, Then::Release)
        );
        assert_eq!(
            on_child(
                "c1",
                failed(Some(ParentPolicy::ContinueParentOnFailure)),
                5,
                w
            ),
            (Record::Ignored("boom".into()), Then::Release)
        );
        assert_eq!(
            on_child("c1", failed(Some(ParentPolicy::KeepParentWaiting)), 0, w),
            (Record::Kept, Then::Stay)
        );
        // A parent no longer waiting is never failed or released again.
        assert_eq!(
            on_child("c1", failed(None), 0, JobState::Waiting),
            (Record::Failed("boom".into()), Then::Stay)
        );
    }

    #[test]
    fn release_and_retry_rules() {
        assert_eq!(release_to(0, 100), (JobState::Waiting, 0));
        assert_eq!(release_to(50, 100), (JobState::Delayed, 150));
        let waiting = Some((JobState::WaitingChildren, None));
        assert_eq!(on_retry("c", waiting, false), Retried::Rejoin);
        let failed_by = |reason| Some((JobState::Failed, Some(reason)));
        assert_eq!(
            on_retry("c", failed_by("child c failed: boom"), true),
            Retried::Reopen
        );
        // Failed by another child (whose id starts alike), or for its own reason.
        assert_eq!(
            on_retry("c", failed_by("child c2 failed: boom"), false),
            Retried::Detached
        );
        assert_eq!(on_retry("c", failed_by("own"), false), Retried::Detached);
        assert_eq!(
            on_retry("c", Some((JobState::Completed, None)), false),
            Retried::Detached
        );
        // A released parent that recorded the child's failure counts it again.
        assert_eq!(
            on_retry("c", Some((JobState::Waiting, None)), true),
            Retried::Rejoin
        );
        assert_eq!(on_retry("c", None, true), Retried::Detached);
        assert!(check_children_count("p", 0).is_err());
        assert!(check_children_count("p", 1).is_ok());
    }

    #[test]
    fn checks_name_the_node() {
        let tree = node(
            None,
            None,
            vec![
                node(Some("x"), None, vec![]),
                node(Some("x"), Some("q2"), vec![]),
            ],
        );
        let mut seen = Vec::new();
        check_nodes(&[&tree], "q1", "root", |q, _, _| {
            seen.push(q.to_owned());
            Ok(())
        })
        .unwrap();
        seen.sort();
        assert_eq!(seen, ["q1", "q1", "q2"]);

        let twice = node(
            None,
            None,
            vec![node(Some("x"), None, vec![]), node(Some("x"), None, vec![])],
        );
        let err = check_nodes(&[&twice], "q1", "root", |_, _, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("appears twice in queue \"q1\""), "{err}");

        let err = check_nodes(&[&tree], "q1", "root", |q, _, _| {
            if q == "q2" {
                Err(CoreError::InvalidConfig(format!("unknown queue {q:?}")))
            } else {
                Ok(())
            }
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("flow node root.children[1]: unknown queue \"q2\""),
            "{err}"
        );

        let mut dedup = node(None, None, vec![]);
        dedup.job.options.dedup = Some(Dedup::simple("d"));
        // (each queue is a dedup space of its own)
        let mut elsewhere = dedup.clone();
        elsewhere.queue = Some("q2".into());
        let both = node(None, None, vec![dedup.clone(), elsewhere]);
        check_nodes(&[&both], "q", "root", |_, _, _| Ok(())).unwrap();
        let twice = node(None, None, vec![dedup.clone(), dedup.clone()]);
        let err = check_nodes(&[&twice], "q", "root", |_, _, _| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("dedup id \"d\" appears twice"), "{err}");
        let mut children = Vec::new();
        check_nodes(&[&twice.children[0]], "q", "root", |_, _, child| {
            children.push(child);
            Ok(())
        })
        .unwrap();
        assert_eq!(children, [false]);
        assert!(check_dedup_owner("d", "3", Some("q:1"))
            .unwrap_err()
            .to_string()
            .contains("\"3\", which is already a child of \"q:1\""));
        let lineage = ["q:5".to_owned(), "p:1".to_owned()];
        assert!(check_dedup_cycle("d", "1", "p:1", &lineage).is_err());
        assert!(check_dedup_cycle("d", "1", "q:1", &lineage).is_ok());
    }

    #[test]
    fn which_parents_take_children_and_refusals_name_the_jobs() {
        let taking: Vec<JobState> = JobState::ALL
            .into_iter()
            .filter(|s| takes_children(*s))
            .collect();
        assert_eq!(
            taking,
            [
                JobState::Waiting,
                JobState::Delayed,
                JobState::WaitingChildren
            ]
        );
        let job = ParentRef {
            queue: "q".into(),
            id: "e".into(),
        };
        let parent = ParentRef {
            queue: "p".into(),
            id: "1".into(),
        };
        let other = other_parent(&job, &parent).to_string();
        assert!(
            other.contains(r#""e" of queue "q" is already a child of "p:1""#),
            "{other}"
        );
        assert!(cycle(&job, &parent).to_string().contains("own descendant"));
    }

    #[test]
    fn single_jobs_and_existing_roots() {
        let leaf = node(Some("r"), None, vec![]);
        assert!(is_single_job(&leaf, "q"));
        assert!(!is_single_job(&node(None, Some("q2"), vec![]), "q"));
        let tree = node(Some("r"), None, vec![node(None, None, vec![])]);
        assert!(!is_single_job(&tree, "q"));
        assert_eq!(root_custom_id(&tree, "q"), Some("r"));
        assert_eq!(
            root_custom_id(&node(Some("r"), Some("q2"), vec![]), "q"),
            None
        );
        assert_eq!(root_custom_id(&node(None, None, vec![]), "q"), None);
    }

    #[test]
    fn pages() {
        let items = [1, 2, 3, 4, 5];
        assert_eq!(page(&items, 0, None), (items.to_vec(), None));
        assert_eq!(page(&items, 0, Some(2)), (vec![1, 2], Some(2)));
        assert_eq!(page(&items, 4, Some(2)), (vec![5], None));
        assert_eq!(page(&items, 9, Some(2)), (vec![], None));
        assert_eq!(
            ParentRef {
                queue: "q".into(),
                id: "7".into()
            }
            .key(),
            "q:7"
        );
    }
}
