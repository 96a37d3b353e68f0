//! `MemoryStore`'s flows: parents' dependency sets, what finishing, removing or retrying a child
//! tells its parent (as `flow` decides), and the group-level steps (add a flow, add children,
//! detach or remove children) that span the queues of a `MemoryGroup` under its one lock.
//!
//! A store never writes another queue's store: what a child's change means for its parent goes
//! to the store's outbox, and `settle_flows` (run by the group after every write, still under
//! the lock) delivers it to the parent's store, repeatedly, so a failure climbs the tree.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::error::{CoreError, CoreResult};

use super::store::{JobId, MemoryStore};
use super::MemoryBackend;
use super::{finish, settle_missing, Queues};
use crate::jobs::contract::NewJob;
use crate::jobs::contract::{BoxFuture, JobFlows};
use crate::jobs::flow::{
    self, AddedNode, ChildOutcome, Dependencies, DependencyCounts, FlowNode, ParentRef, Record,
    Retried, Then,
};
use crate::jobs::lifecycle;
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::check_payload;

/// One parent's children, by key.
#[derive(Debug, Default)]
struct Deps {
    /// Every child in the sets below, whatever its set (a removal takes the whole tree).
    refs: HashMap<String, ParentRef>,
    unprocessed: BTreeMap<String, ParentRef>,
    processed: BTreeMap<String, String>,
    failed: BTreeMap<String, String>,
    ignored: BTreeMap<String, String>,
}

#[derive(Debug)]
enum Change {
    Done(ChildOutcome),
    /// Retried by hand: counted again if its parent still waits for children.
    Retried,
}

/// A change of `child` that its parent's store must hear of.
#[derive(Debug)]
pub(super) struct ChildEvent {
    parent: ParentRef,
    child: ParentRef,
    change: Change,
    at: Millis,
    /// A removal by a drain or clean: a parent of the child's queue left with no pending
    /// child is deleted rather than released.
    hard: bool,
}

#[derive(Debug)]
pub(super) struct Flows {
    queue: Arc<str>,
    deps: HashMap<JobId, Deps, foldhash::fast::RandomState>,
    outbox: Vec<ChildEvent>,
    /// Children in other queues to remove with their trees (a removed parent's).
    removals: Vec<(ParentRef, Millis)>,
    /// Parents failed by a child since the last settle (their waiters are told).
    settled: Vec<(JobId, FinishedResult)>,
}

impl Default for Flows {
    fn default() -> Self {
        Self {
            queue: Arc::from("default"),
            deps: HashMap::default(),
            outbox: Vec::new(),
            removals: Vec::new(),
            settled: Vec::new(),
        }
    }
}

impl MemoryStore {
    /// The name of the queue this store is (child keys and parent references use it).
    pub fn queue_name(&self) -> &str {
        &self.flow.queue
    }

    pub(super) fn set_queue_name(&mut self, name: &str) {
        self.flow.queue = Arc::from(name);
    }

    /// `tell_parent`, delivered at once when the parent is in this store.
    fn tell_parent_now(&mut self, key: &JobId, change: Change, now: Millis) {
        let before = self.flow.outbox.len();
        self.tell_parent(key, change, now);
        let told = self.flow.outbox.len() > before;
        if told
            && self
                .flow
                .outbox
                .last()
                .is_some_and(|e| e.parent.queue == *self.flow.queue)
        {
            let event = self.flow.outbox.pop().expect("just checked");
            self.apply_child_event(event);
        }
    }

    fn tell_parent(&mut self, key: &JobId, change: Change, now: Millis) {
        let Some(parent) = self.jobs[key].options.parent.clone() else {
            return;
        };
        let child = ParentRef {
            queue: self.flow.queue.to_string(),
            id: key.to_string(),
        };
        self.flow.outbox.push(ChildEvent {
            parent,
            child,
            change,
            at: now,
            hard: false,
        });
    }

    /// After a drain or clean (`hard`): the removals it told parents of are hard.
    pub(super) fn settle_removals(&mut self, hard: bool) {
        if hard {
            for event in &mut self.flow.outbox {
                if matches!(event.change, Change::Done(ChildOutcome::Removed)) {
                    event.hard = true;
                }
            }
        }
    }

    /// Every child of `id`, in any set, sorted by key.
    pub(super) fn children_of(&self, id: &str) -> Vec<ParentRef> {
        let mut children: Vec<(&String, &ParentRef)> = self
            .flow
            .deps
            .get(id)
            .map(|d| d.refs.iter().collect())
            .unwrap_or_default();
        children.sort_unstable_by(|a, b| a.0.cmp(b.0));
        children.into_iter().map(|(_, c)| c.clone()).collect()
    }

    /// A child in another queue to remove with its tree, once this operation is done.
    pub(super) fn remove_elsewhere(&mut self, child: &ParentRef, now: Millis) {
        self.flow.removals.push((child.clone(), now));
    }

    /// After `key` completed or failed for good: tells its parent `outcome`.
    pub(super) fn flow_on_finish(&mut self, key: &JobId, outcome: ChildOutcome, now: Millis) {
        // A parent in this store hears at once, as in SQLite and Lua: the child's retention, which
        // comes after (`lifecycle::effects`), then counts what the news did to its parent. One
        // in another queue hears when the group settles, still within this operation.
        self.tell_parent_now(key, Change::Done(outcome), now);
    }

    /// Before `key` is removed (remove, clean, drain): a child still pending for its parent
    /// (unfinished, or failed under `keep_parent_waiting`) leaves its dependencies.
    pub(super) fn flow_on_removal(&mut self, key: &JobId, now: Millis) {
        if self.jobs[key].state != JobState::Completed {
            self.tell_parent(key, Change::Done(ChildOutcome::Removed), now);
        }
    }

    /// Before `key` is retried by hand.
    pub(super) fn flow_on_retry(&mut self, key: &JobId, now: Millis) {
        self.tell_parent(key, Change::Retried, now);
    }

    /// When `key` leaves the store: its own dependency sets go with it (its pending children
    /// then run on their own).
    pub(super) fn flow_on_delete(&mut self, key: &JobId) {
        if !self.flow.deps.is_empty() {
            self.flow.deps.remove(key);
        }
    }

    /// Before an obliterate: the children still pending for other queues' parents (unfinished,
    /// or failed under `keep_parent_waiting`) leave them.
    pub(super) fn flow_on_obliterate(&mut self, now: Millis) {
        let children: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, j)| j.options.parent.is_some() && j.state != JobState::Completed)
            .map(|(k, _)| Arc::clone(k))
            .collect();
        for key in children {
            self.flow_on_removal(&key, now);
        }
        self.flow.deps.clear();
    }

    /// Applies a child's change to its parent here; `true` if the child was pending (or, for a
    /// retry, counted again).
    fn apply_child_event(&mut self, event: ChildEvent) -> bool {
        let Ok(key) = self.key(&event.parent.id) else {
            return false;
        };
        let state = self.jobs[&key].state;
        let child_key = event.child.key();
        let outcome = match event.change {
            Change::Retried => {
                let reason = self.jobs[&key].failed_reason.as_deref();
                let recorded = self.flow.deps.get(&key).is_some_and(|d| {
                    d.failed.contains_key(&child_key) || d.ignored.contains_key(&child_key)
                });
                let decision = flow::on_retry(&event.child.id, Some((state, reason)), recorded);
                match decision {
                    Retried::Detached => return false,
                    Retried::Rejoin => {}
                    Retried::Reopen => self.reopen_parent(&key, event.at),
                }
                let deps = self.flow.deps.entry(key).or_default();
                deps.processed.remove(&child_key);
                deps.failed.remove(&child_key);
                deps.ignored.remove(&child_key);
                deps.refs.insert(child_key.clone(), event.child.clone());
                deps.unprocessed.insert(child_key, event.child);
                return true;
            }
            Change::Done(outcome) => outcome,
        };
        let Some(deps) = self.flow.deps.get_mut(&key) else {
            return false;
        };
        let Some(child) = deps.unprocessed.remove(&child_key) else {
            return false;
        };
        let (record, then) =
            flow::on_child(&event.child.id, outcome, deps.unprocessed.len(), state);
        match record {
            Record::Processed(value) => deps.processed.insert(child_key, value),
            Record::Failed(reason) => deps.failed.insert(child_key, reason),
            Record::Ignored(reason) => deps.ignored.insert(child_key, reason),
            Record::Dropped => {
                deps.refs.remove(&child_key);
                None
            }
            Record::Kept => {
                deps.unprocessed.insert(child_key, child);
                None
            }
        };
        match then {
            Then::Stay => {}
            Then::Release if event.hard && event.child.queue == *self.flow.queue => {
                self.delete_emptied_parent(&key, event.at);
            }
            Then::Release => self.release_parent(&key, event.at),
            Then::Fail(reason) => {
                crate::jobs::lifecycle::fail_now(self, &key, &reason, event.at)
                    .expect("the memory store does not fail");
                self.flow
                    .settled
                    .push((key, FinishedResult::Failed(reason)));
            }
        }
        true
    }

    /// A parent that a drain or clean left without pending children in its own queue: deleted
    /// (BullMQ's rule), and its own parent hears of it as of a drained child.
    fn delete_emptied_parent(&mut self, key: &JobId, now: Millis) {
        let prev = self.jobs[key].state.as_str();
        lifecycle::JobStorage::event(self, now, "removed", Some(key), Some(("prev", prev.into())))
            .expect("the memory store does not fail");
        let before = self.flow.outbox.len();
        self.delete_releasing(key, now);
        for event in &mut self.flow.outbox[before..] {
            event.hard = true;
        }
    }

    /// A parent that failed because of a child retried by hand waits for its children again,
    /// its failure undone; its own parent hears of it as of a retried child.
    fn reopen_parent(&mut self, key: &JobId, now: Millis) {
        lifecycle::reopen_parent(self, key, now).expect("the memory store does not fail");
        self.tell_parent(key, Change::Retried, now);
    }

    /// A parent whose children are done: waiting, or delayed by its own delay from now.
    fn release_parent(&mut self, key: &JobId, now: Millis) {
        lifecycle::release_parent(self, key, now).expect("the memory store does not fail");
    }

    /// This store's checks of a flow node: the payload fits, a custom id is free, and a child
    /// deduplicated into an existing job takes a job without a parent.
    fn check_flow_job(&self, job: &NewJob, child: bool, now: Millis) -> CoreResult<()> {
        check_payload(&job.data, self.config.max_payload_bytes)?;
        if let (true, Some(dedup)) = (child, &job.options.dedup) {
            if let Some(owner) = self.dedup_owner(dedup, now) {
                let parent = owner.options.parent.as_ref().map(ParentRef::key);
                flow::check_dedup_owner(&dedup.id, &owner.id, parent.as_deref())?;
            }
        }
        if let Some(id) = job.options.job_id.as_deref() {
            if self.jobs.contains_key(id) {
                return Err(CoreError::InvalidConfig(format!(
                    "job_id {id:?} already exists in queue {:?}",
                    self.queue_name()
                )));
            }
        }
        Ok(())
    }

    fn add_dependency(&mut self, parent: &str, child: ParentRef) {
        let key = self.key(parent).expect("a flow's parent exists");
        let deps = self.flow.deps.entry(key).or_default();
        deps.refs.insert(child.key(), child.clone());
        deps.unprocessed.insert(child.key(), child);
    }

    /// Parks an active job in waiting_children (no attempt used, lock released).
    fn deps_of(&self, id: &str) -> CoreResult<Option<&Deps>> {
        let key = self.key(id)?;
        Ok(self.flow.deps.get(&key))
    }

    /// A page of the dependencies of `id`: each set from its cursor (processed, unprocessed,
    /// failed, ignored), at most `count` of each (`None`: all).
    pub fn get_dependencies(
        &self,
        id: &str,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> CoreResult<Dependencies> {
        let Some(deps) = self.deps_of(id)? else {
            return Ok(Dependencies::default());
        };
        fn pairs(set: &BTreeMap<String, String>) -> Vec<(String, String)> {
            set.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        }
        let unprocessed: Vec<String> = deps.unprocessed.keys().cloned().collect();
        Ok(Dependencies::page(
            &pairs(&deps.processed),
            &unprocessed,
            &pairs(&deps.failed),
            &pairs(&deps.ignored),
            cursors,
            count,
        ))
    }

    pub fn get_dependencies_count(&self, id: &str) -> CoreResult<DependencyCounts> {
        Ok(self
            .deps_of(id)?
            .map(|d| DependencyCounts {
                processed: d.processed.len(),
                unprocessed: d.unprocessed.len(),
                failed: d.failed.len(),
                ignored: d.ignored.len(),
            })
            .unwrap_or_default())
    }
}

// ------------------------------------------------------------------ group-level steps

/// Delivers what children told their parents, until nothing is left (a parent failed by a
/// child tells its own parent), then tells the waiters of parents that failed.
pub(super) fn settle_flows(queues: &mut Queues) {
    if queues.states.iter().all(|s| {
        s.store.flow.outbox.is_empty()
            && s.store.flow.settled.is_empty()
            && s.store.flow.removals.is_empty()
    }) {
        return;
    }
    let mut removed_any = false;
    loop {
        let mut events = Vec::new();
        let mut removals = Vec::new();
        for state in &mut queues.states {
            events.append(&mut state.store.flow.outbox);
            removals.append(&mut state.store.flow.removals);
        }
        if events.is_empty() && removals.is_empty() {
            break;
        }
        for event in events {
            removed_any |= event.hard;
            if let Some(i) = queues.index(&event.parent.queue) {
                queues.states[i].store.apply_child_event(event);
            }
        }
        for (child, at) in removals {
            removed_any = true;
            if let Some(i) = queues.index(&child.queue) {
                // Checked already (`tree_locked`): a refusal here changes nothing.
                let _ = lifecycle::remove(&mut queues.states[i].store, &child.id, at);
            }
        }
    }
    for state in &mut queues.states {
        for (id, result) in std::mem::take(&mut state.store.flow.settled) {
            finish(&mut state.waiters, &id, || result);
        }
        if removed_any {
            settle_missing(state);
        }
    }
}

/// A job of the tree under `id` (of queue `queue`), in any of the group's queues, that a live
/// lock holds.
pub(super) fn tree_locked(
    queues: &Queues,
    queue: &str,
    id: &str,
    now: Millis,
) -> Option<ParentRef> {
    let store = &queues.states[queues.index(queue)?].store;
    let job = store.jobs.get(id)?;
    if job.lock.as_ref().is_some_and(|l| l.expires_at > now) {
        return Some(ParentRef {
            queue: queue.to_owned(),
            id: id.to_owned(),
        });
    }
    store
        .children_of(id)
        .iter()
        .find_map(|child| tree_locked(queues, &child.queue, &child.id, now))
}

/// Removes `id` of queue `at` with its tree (`lifecycle::remove`): the whole tree, in every
/// queue of the group, is checked first for live locks (the store checks only its own).
pub(super) fn remove_tree(queues: &mut Queues, at: usize, id: &str, now: Millis) -> CoreResult<()> {
    let home = queues.states[at].store.queue_name().to_owned();
    match tree_locked(queues, &home, id, now) {
        Some(held) if held.queue != home || held.id != id => Err(CoreError::Refused(format!(
            "job {id:?} cannot be removed: its descendant {:?} is locked by a worker",
            held.id
        ))),
        // The job itself (refused with the store's message), or none.
        _ => queues.states[at].store.remove(id, now),
    }
}

fn check(
    queues: &Queues,
    nodes: &[&FlowNode],
    home: &str,
    path: &str,
    now: Millis,
) -> CoreResult<()> {
    flow::check_nodes(nodes, home, path, path == "root", |queue, job, child| {
        let i = queues.index(queue).ok_or_else(|| {
            CoreError::InvalidConfig(format!(
                "unknown queue {queue:?} (not a queue of this queue's group)"
            ))
        })?;
        queues.states[i].store.check_flow_job(job, child, now)
    })
}

/// Takes the automatic ids that a node not written (deduplicated, or under a deduplicated
/// node) would have taken, so that ids match the Lua side, which reserves every node's first.
fn skip_ids(queues: &mut Queues, queue: &str, node: &FlowNode, this_one: bool) {
    let i = queues.index(queue).expect("a checked queue exists");
    if this_one {
        queues.states[i].store.next_job_id(&node.job.options);
    }
    for child in &node.children {
        let queue = child.queue.as_deref().unwrap_or(queue).to_owned();
        skip_ids(queues, &queue, child, true);
    }
}

/// A node deduplicated into the existing job `owner` of store `i` is that job: the parent (if
/// any) waits for it as its child, and hears at once of an owner that finished already
/// (`finished`, told once the whole flow is written).
fn adopt_owner(
    queues: &mut Queues,
    i: usize,
    owner: Job,
    parent: Option<ParentRef>,
    finished: &mut Vec<(usize, JobId)>,
) -> AddedNode {
    let queue = queues.states[i].store.queue_name().to_owned();
    if let Some(parent) = parent {
        let store = &mut queues.states[i].store;
        let key = store.key(&owner.id).expect("an owner exists");
        if let Some(job) = store.jobs.get_mut(&key) {
            job.options.parent = Some(parent.clone());
        }
        if owner.state.is_finished() {
            finished.push((i, key));
        }
        let p = queues
            .index(&parent.queue)
            .expect("a parent's queue exists");
        let child = ParentRef {
            queue: queue.clone(),
            id: owner.id.to_string(),
        };
        queues.states[p].store.add_dependency(&parent.id, child);
    }
    let owner = queues.states[i].store.jobs[owner.id.as_ref()].clone();
    existing_node(queues, &queue, owner)
}

fn create_node(
    queues: &mut Queues,
    parent_queue: &str,
    node: FlowNode,
    parent: Option<ParentRef>,
    now: Millis,
    finished: &mut Vec<(usize, JobId)>,
) -> AddedNode {
    let queue = node
        .queue
        .clone()
        .unwrap_or_else(|| parent_queue.to_owned());
    let i = queues.index(&queue).expect("a checked queue exists");
    let hold = !node.children.is_empty();
    let mut options = node.job.options.clone();
    options.parent = parent.clone();
    let job: Job = if options.dedup.is_some() {
        let state = &mut queues.states[i];
        let (job, created) = state.store.insert_deduplicated_with(
            &node.job.name,
            &node.job.data,
            options,
            hold,
            now,
        );
        super::settle_replaced(state);
        if !created {
            skip_ids(queues, &queue, &node, true);
            return adopt_owner(queues, i, job, parent, finished);
        }
        job
    } else {
        queues.states[i]
            .store
            .create_with(&node.job.name, &node.job.data, options, hold, now)
    };
    if let Some(parent) = parent {
        let p = queues
            .index(&parent.queue)
            .expect("a parent's queue exists");
        let child = ParentRef {
            queue: queue.clone(),
            id: job.id.to_string(),
        };
        queues.states[p].store.add_dependency(&parent.id, child);
    }
    let me = ParentRef {
        queue: queue.clone(),
        id: job.id.to_string(),
    };
    let children = node
        .children
        .into_iter()
        .map(|c| create_node(queues, &queue, c, Some(me.clone()), now, finished))
        .collect();
    AddedNode {
        queue,
        job,
        children,
    }
}

/// Tells the new parents of owners that had finished what they finished with, as if these
/// children had just finished (once every node is written, so no parent moves early).
fn tell_finished_owners(queues: &mut Queues, finished: Vec<(usize, JobId)>, now: Millis) {
    for (i, key) in finished {
        let store = &mut queues.states[i].store;
        if let Some(outcome) = flow::finished_owner_outcome(&store.jobs[&key]) {
            store.flow_on_finish(&key, outcome, now);
        }
    }
}

/// The node of an existing job of `queue`, with its children (in every set) as they are.
fn existing_node(queues: &Queues, queue: &str, job: Job) -> AddedNode {
    let children = queues
        .index(queue)
        .map(|i| queues.states[i].store.children_of(&job.id))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|child| {
            let store = &queues.states[queues.index(&child.queue)?].store;
            let job = store.jobs.get(child.id.as_str())?.clone();
            Some(existing_node(queues, &child.queue, job))
        })
        .collect();
    let mut node = AddedNode {
        queue: queue.to_owned(),
        job,
        children,
    };
    flow::sort_children(&mut node);
    node
}

/// Adds a flow on queue `at`: every node checked first, then all written. A flow of one job
/// is added as a single job; a root whose custom id exists is that job, with its children.
pub(super) fn add_flow(
    queues: &mut Queues,
    at: usize,
    root: FlowNode,
    now: Millis,
) -> CoreResult<AddedNode> {
    let home = queues.states[at].store.queue_name().to_owned();
    if flow::is_single_job(&root, &home) {
        let state = &mut queues.states[at];
        let job = root.job;
        let (job, _) = state.store.add(&job.name, &job.data, job.options, now)?;
        super::settle_replaced(state);
        return Ok(AddedNode {
            queue: home,
            job,
            children: Vec::new(),
        });
    }
    if let Some(id) = flow::root_custom_id(&root, &home) {
        if let Some(job) = queues.states[at].store.jobs.get(id).cloned() {
            // The options are still checked: bad input is refused even then.
            flow::check_nodes(&[&root], &home, "root", true, |_, _, _| Ok(()))?;
            let store = &mut queues.states[at].store;
            lifecycle::JobStorage::event(store, now, "duplicated", Some(&job.id), None)?;
            return Ok(existing_node(queues, &home, job));
        }
    }
    check(queues, &[&root], &home, "root", now)?;
    let mut finished = Vec::new();
    let added = create_node(queues, &home, root, None, now, &mut finished);
    tell_finished_owners(queues, finished, now);
    Ok(added)
}

/// Adds children to the active job `parent_id` held by `token` and parks it in
/// waiting_children until they are done.
pub(super) fn add_children(
    queues: &mut Queues,
    at: usize,
    parent_id: &str,
    token: &str,
    children: Vec<FlowNode>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    flow::check_children_count(parent_id, children.len())?;
    let store = &queues.states[at].store;
    let home = store.queue_name().to_owned();
    let key = store.locked(parent_id, token, now)?;
    let nodes: Vec<&FlowNode> = children.iter().collect();
    check(queues, &nodes, &home, "children", now)?;
    lifecycle::park_for_children(&mut queues.states[at].store, &key, token, now)?;
    let me = ParentRef {
        queue: home.clone(),
        id: key.to_string(),
    };
    Ok(children
        .into_iter()
        .map(|c| create_node(queues, &home, c, Some(me.clone()), now, &mut Vec::new()))
        .collect())
}

/// Detaches the child `child_id` from its parent; `true` if it was one of the parent's pending
/// dependencies (the parent is released if it was the last).
pub(super) fn remove_child_dependency(
    queues: &mut Queues,
    at: usize,
    child_id: &str,
    now: Millis,
) -> CoreResult<bool> {
    let store = &mut queues.states[at].store;
    let key = store.key(child_id)?;
    let Some(parent) = store
        .jobs
        .get_mut(&key)
        .and_then(|j| j.options.parent.take())
    else {
        return Ok(false);
    };
    let child = ParentRef {
        queue: store.queue_name().to_owned(),
        id: key.to_string(),
    };
    let Some(p) = queues.index(&parent.queue) else {
        return Ok(false);
    };
    Ok(queues.states[p].store.apply_child_event(ChildEvent {
        parent,
        child,
        change: Change::Done(ChildOutcome::Removed),
        at: now,
        hard: false,
    }))
}

/// Removes every unprocessed child of `parent_id` that no worker holds (each leaves the
/// parent's dependencies, so the parent is released once none is left); returns how many.
pub(super) fn remove_unprocessed_children(
    queues: &mut Queues,
    at: usize,
    parent_id: &str,
    now: Millis,
) -> CoreResult<usize> {
    let children: Vec<ParentRef> = queues.states[at]
        .store
        .deps_of(parent_id)?
        .map(|d| d.unprocessed.values().cloned().collect())
        .unwrap_or_default();
    let mut removed = 0;
    for child in children {
        let Some(i) = queues.index(&child.queue) else {
            continue;
        };
        // A child whose tree a worker holds a job of stays, with its tree.
        if remove_tree(queues, i, &child.id, now).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

impl JobFlows for MemoryBackend {
    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        self.write_group(|queues, at| add_flow(queues, at, flow, now))
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.write_group(|queues, at| add_children(queues, at, &parent_id, &token, children, now))
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        self.read(|store| store.get_dependencies(&parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        self.read(|store| store.get_dependencies_count(&parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        self.write_group(|queues, at| remove_child_dependency(queues, at, &child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        self.write_group(|queues, at| remove_unprocessed_children(queues, at, &parent_id, now))
    }
}
