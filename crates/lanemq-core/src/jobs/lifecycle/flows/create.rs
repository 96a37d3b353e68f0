//! Adding a flow or children, once for memory and SQLite: every node checked first, then all
//! written in preorder (automatic ids as each queue would take them), a child deduplicated into
//! an existing job adopted as that job, and the new parents of owners that had finished told
//! last. Where a node of another queue goes is the backend's (`FlowQueues`): memory writes
//! another store of its group under the same lock; SQLite writes ids reserved in the other
//! file beforehand and sends the node there by a message after the commit.

use crate::error::{CoreError, CoreResult};
use crate::jobs::flow::{self, AddedNode, FlowNode, ParentRef};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::JobOptions;
use crate::jobs::parent::child_key;

use super::super::not_found;
use super::existing::{check_existing, existing, gains, Above};
use super::queues::FlowQueues;

/// The checks of `nodes` (under `above`) in every queue they go to, before anything is
/// written; whether the job above gains a child.
fn check<Q: FlowQueues>(
    queues: &mut Q,
    nodes: &[&FlowNode],
    path: &str,
    above: &Above,
    now: Millis,
) -> CoreResult<bool> {
    let home = queues.home().to_owned();
    flow::check_nodes(nodes, &home, path, |queue, job, child| {
        // A node that is an existing job is not deduplicated (as flows-2.lua decides).
        let found = existing(queues, queue, job.options.job_id.as_deref())?;
        queues.check_job(queue, job, child && found.is_none(), now)
    })?;
    let gains = check_existing(queues, nodes, &home, above)?;
    // A node without children waits or is delayed at once: its group's max_size counts it.
    let mut leaves: Vec<(String, &JobOptions)> = Vec::new();
    let mut stack: Vec<(&FlowNode, String)> = nodes.iter().map(|n| (*n, home.clone())).collect();
    while let Some((node, parent_queue)) = stack.pop() {
        let queue = node.queue.clone().unwrap_or(parent_queue);
        if node.children.is_empty() {
            if node.job.options.group.is_some() {
                leaves.push((queue, &node.job.options));
            }
        } else {
            stack.extend(node.children.iter().map(|c| (c, queue.clone())));
        }
    }
    leaves.sort_by(|a, b| a.0.cmp(&b.0));
    for chunk in leaves.chunk_by(|a, b| a.0 == b.0) {
        let options: Vec<&JobOptions> = chunk.iter().map(|(_, o)| *o).collect();
        queues.check_group_room(&chunk[0].0, &options)?;
    }
    Ok(gains)
}

/// Adds a flow: every node checked first, then all written. A root whose custom id exists in
/// home is that job (after a `duplicated` event), which gains the children it does not have
/// (none: nothing else is written); it is returned with all its children as they are.
pub fn add_flow<Q: FlowQueues>(
    queues: &mut Q,
    root: FlowNode,
    now: Millis,
) -> CoreResult<AddedNode> {
    check(queues, &[&root], "root", &Above::Root, now)?;
    let home = queues.home().to_owned();
    let root_job = match flow::root_custom_id(&root, &home) {
        Some(id) => queues.load(&home, id)?,
        None => None,
    };
    if let Some(job) = &root_job {
        queues.duplicated(job, now)?;
    }
    let added = create_all(queues, vec![root], None, now)?.remove(0);
    match root_job {
        Some(job) => {
            let job = queues.load(&home, &job.id)?.unwrap_or(job);
            existing_node(queues, &home, job)
        }
        None => Ok(added),
    }
}

/// Adds children to the active job `parent_id` of home held by `token` and parks it in
/// waiting_children (no attempt used, lock released) until they are done.
pub fn add_children<Q: FlowQueues>(
    queues: &mut Q,
    parent_id: &str,
    token: &str,
    children: Vec<FlowNode>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    let (parent, me) = existing_parent(queues, parent_id, &children)?;
    parent.check_lock(token, now)?;
    check_children(queues, &children, &parent, &me, now)?;
    queues.park(parent_id, token, now)?;
    let added = create_all(queues, children, Some(me), now)?;
    // Children that were all its own already (and done) leave it nothing to wait for.
    queues.release_if_done(parent_id, now)?;
    Ok(added)
}

/// Adds children to the job `parent_id` of home that is not running (BullMQ's `opts.parent`
/// on an add): they are checked, then the parent waits for them (unless they are all its
/// children already: then nothing is written), then they are written.
pub fn attach_children<Q: FlowQueues>(
    queues: &mut Q,
    parent_id: &str,
    children: Vec<FlowNode>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    let (parent, me) = existing_parent(queues, parent_id, &children)?;
    if check_children(queues, &children, &parent, &me, now)? {
        if !flow::takes_children(parent.state) {
            return Err(CoreError::JobState {
                id: parent_id.to_owned(),
                state: parent.state.as_str(),
                expected: flow::TAKES_CHILDREN,
            });
        }
        queues.hold(&me.queue, parent_id, now)?;
    }
    create_all(queues, children, Some(me), now)
}

/// The job `parent_id` of home that `children` go under (add_children, an add's `parent=`),
/// and its reference.
fn existing_parent<Q: FlowQueues>(
    queues: &mut Q,
    parent_id: &str,
    children: &[FlowNode],
) -> CoreResult<(Job, ParentRef)> {
    flow::check_children_count(parent_id, children.len())?;
    let home = queues.home().to_owned();
    let parent = queues
        .load(&home, parent_id)?
        .ok_or_else(|| not_found(parent_id))?;
    let me = ParentRef {
        queue: home,
        id: parent_id.to_owned(),
    };
    Ok((parent, me))
}

/// The checks of `children` going under the existing job `parent` (`me`), cycles included,
/// before anything is written; whether it gains a child.
fn check_children<Q: FlowQueues>(
    queues: &mut Q,
    children: &[FlowNode],
    parent: &Job,
    me: &ParentRef,
    now: Millis,
) -> CoreResult<bool> {
    let lineage = lineage(queues, &me.queue, parent.options.parent.clone(), &me.id)?;
    let nodes: Vec<&FlowNode> = children.iter().collect();
    let gains = check(
        queues,
        &nodes,
        "children",
        &Above::Existing(me.clone()),
        now,
    )?;
    check_cycles(queues, &nodes, &me.queue, &lineage, "children", now)?;
    Ok(gains)
}

/// The keys of the job `id` of `queue` (whose parent is `parent`) and of its ancestors.
fn lineage<Q: FlowQueues>(
    queues: &mut Q,
    queue: &str,
    mut parent: Option<ParentRef>,
    id: &str,
) -> CoreResult<Vec<String>> {
    let mut keys = vec![child_key(queue, id)];
    // (bounded, as the Lua walks of a chain are: a chain is never that long)
    while let Some(up) = parent.take().filter(|_| keys.len() <= 10_000) {
        keys.push(up.key());
        parent = queues
            .load(&up.queue, &up.id)?
            .and_then(|job| job.options.parent.clone());
    }
    Ok(keys)
}

/// Refuses children (`nodes`, at `path`) of which one would be deduplicated into a job of
/// `lineage`, the job they are added to and its ancestors (`flow::check_dedup_cycle`); the
/// nodes under a deduplicated one are not written, so not checked.
fn check_cycles<Q: FlowQueues>(
    queues: &mut Q,
    nodes: &[&FlowNode],
    queue: &str,
    lineage: &[String],
    path: &str,
    now: Millis,
) -> CoreResult<()> {
    for (i, node) in nodes.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let queue = node.queue.as_deref().unwrap_or(queue);
        if let Some(dedup) = &node.job.options.dedup {
            if let Some(owner) = queues.dedup_owner(queue, dedup, now)? {
                let key = child_key(queue, &owner);
                flow::check_dedup_cycle(&dedup.id, &owner, &key, lineage)
                    .map_err(|e| CoreError::InvalidConfig(format!("flow node {at}: {e}")))?;
                continue;
            }
        }
        let children: Vec<&FlowNode> = node.children.iter().collect();
        check_cycles(
            queues,
            &children,
            queue,
            lineage,
            &format!("{at}.children"),
            now,
        )?;
    }
    Ok(())
}

/// Creates checked nodes under `parent`, in preorder, then tells the new parents of owners
/// that had finished (once every node is written, so no parent moves early).
fn create_all<Q: FlowQueues>(
    queues: &mut Q,
    nodes: Vec<FlowNode>,
    parent: Option<ParentRef>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    let home = queues.home().to_owned();
    let mut finished = Vec::new();
    let added = nodes
        .into_iter()
        .map(|node| create_node(queues, node, &home, parent.clone(), &mut finished, now))
        .collect::<CoreResult<Vec<_>>>()?;
    queues.written(&added, now)?;
    for (queue, owner) in finished {
        queues.tell_finished_owner(&queue, &owner, now)?;
    }
    Ok(added)
}

fn create_node<Q: FlowQueues>(
    queues: &mut Q,
    node: FlowNode,
    default_queue: &str,
    parent: Option<ParentRef>,
    finished: &mut Vec<(String, Job)>,
    now: Millis,
) -> CoreResult<AddedNode> {
    let FlowNode {
        queue,
        job: mut new,
        children,
    } = node;
    let queue = queue.unwrap_or_else(|| default_queue.to_owned());
    if let Some(job) = existing(queues, &queue, new.options.job_id.as_deref())? {
        return with_existing(queues, &queue, job, parent, children, finished, now);
    }
    let hold = !children.is_empty();
    let custom_id = new.options.job_id.is_some();
    new.options.parent = parent.clone();
    let (job, created) = queues.create_job(&queue, new, hold, now)?;
    if !created {
        queues.skip_id(&queue, custom_id)?;
        for child in &children {
            skip_ids(queues, &queue, child)?;
        }
        return adopt_owner(queues, &queue, job, parent, finished);
    }
    let me = ParentRef {
        queue: queue.clone(),
        id: job.id.to_string(),
    };
    if let Some(parent) = parent {
        queues.depend(&parent, me.clone())?;
    }
    let children = children
        .into_iter()
        .map(|child| create_node(queues, child, &queue, Some(me.clone()), finished, now))
        .collect::<CoreResult<Vec<_>>>()?;
    Ok(AddedNode {
        queue,
        job,
        children,
    })
}

/// Takes the automatic ids that a node under a deduplicated one (not written) and its tree
/// would have taken, so that ids match the Lua side, which reserves every node's first.
fn skip_ids<Q: FlowQueues>(queues: &mut Q, queue: &str, node: &FlowNode) -> CoreResult<()> {
    queues.skip_id(queue, node.job.options.job_id.is_some())?;
    for child in &node.children {
        skip_ids(queues, child.queue.as_deref().unwrap_or(queue), child)?;
    }
    Ok(())
}

/// A node deduplicated into the existing job `owner` of `queue` is that job: the parent (if
/// any) waits for it as its child, and hears of an owner that finished already once the flow
/// is written.
fn adopt_owner<Q: FlowQueues>(
    queues: &mut Q,
    queue: &str,
    owner: Job,
    parent: Option<ParentRef>,
    finished: &mut Vec<(String, Job)>,
) -> CoreResult<AddedNode> {
    let owner = match parent {
        Some(parent) => attach(queues, queue, owner, &parent, finished)?,
        None => owner,
    };
    existing_node(queues, queue, owner)
}

/// The existing job `owner` of `queue` becomes a child of `parent`, which waits for it, or
/// hears of its finish once the flow is written.
fn attach<Q: FlowQueues>(
    queues: &mut Q,
    queue: &str,
    owner: Job,
    parent: &ParentRef,
    finished: &mut Vec<(String, Job)>,
) -> CoreResult<Job> {
    let owner = queues.adopt(queue, owner, parent)?;
    let me = ParentRef {
        queue: queue.to_owned(),
        id: owner.id.to_string(),
    };
    queues.depend(parent, me)?;
    if owner.state.is_finished() {
        finished.push((queue.to_owned(), owner.clone()));
    }
    Ok(owner)
}

/// A node whose custom id the job `job` of `queue` has is that job (`existing`, checked by
/// `check_existing`): it becomes the parent's child unless it is already, and waits for the
/// node's children that it does not have yet. Returned with all its children as they are.
fn with_existing<Q: FlowQueues>(
    queues: &mut Q,
    queue: &str,
    job: Job,
    parent: Option<ParentRef>,
    children: Vec<FlowNode>,
    finished: &mut Vec<(String, Job)>,
    now: Millis,
) -> CoreResult<AddedNode> {
    let attached = match parent {
        Some(parent) if job.options.parent.as_ref() != Some(&parent) => {
            attach(queues, queue, job.clone(), &parent, finished)?;
            Some(parent)
        }
        _ => None,
    };
    let me = ParentRef {
        queue: queue.to_owned(),
        id: job.id.to_string(),
    };
    let held = gains(queues, &children, queue, &me)?;
    if held {
        queues.hold(queue, &job.id, now)?;
    }
    let written = children
        .into_iter()
        .map(|child| create_node(queues, child, queue, Some(me.clone()), finished, now))
        .collect::<CoreResult<Vec<_>>>()?;
    // A job of another file gets its changes after the commit (`FlowQueues`): it is returned
    // as it will be then.
    let mut job = queues.load(queue, &job.id)?.unwrap_or(job);
    if attached.is_some() {
        job.options.parent = attached;
    }
    if held && flow::takes_children(job.state) {
        job.state = JobState::WaitingChildren;
    }
    let mut node = existing_node(queues, queue, job)?;
    for child in written {
        let known = node
            .children
            .iter()
            .any(|c| c.queue == child.queue && c.job.id == child.job.id);
        if !known {
            node.children.push(child);
        }
    }
    flow::sort_children(&mut node);
    Ok(node)
}

/// The node of the existing job `job` of `queue`, with its children (in every set) as they
/// are, wherever they are.
fn existing_node<Q: FlowQueues>(queues: &mut Q, queue: &str, job: Job) -> CoreResult<AddedNode> {
    let mut children = Vec::new();
    for child in queues.children_of(queue, &job.id)? {
        if let Some(found) = queues.load(&child.queue, &child.id)? {
            children.push(existing_node(queues, &child.queue, found)?);
        }
    }
    let mut node = AddedNode {
        queue: queue.to_owned(),
        job,
        children,
    };
    flow::sort_children(&mut node);
    Ok(node)
}
