//! `MemoryStore`'s side of flows: its dependency sets (`DependencySets`) and how a child's news
//! travels (`ChildNews`), for the shared steps of `lifecycle::flows`; and the group-level steps
//! that span the queues of a `MemoryGroup` under its one lock (settle the news, remove a tree,
//! detach or remove children, add a flow or children).
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
    self, AddedNode, ChildOutcome, Dependencies, DependencyCounts, FlowNode, ParentRef,
};
use crate::jobs::lifecycle::flows::{Bucket, Change, ChildNews, DependencySets, Detached};
use crate::jobs::lifecycle::{self, flows as shared};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::check_payload;

/// One parent's children, by key.
#[derive(Debug, Default)]
struct Deps {
    /// Every child with its bucket (a removal takes the whole tree, whatever the bucket).
    refs: HashMap<String, (ParentRef, Bucket)>,
    /// Each bucket's children with their values, in `Bucket` order.
    buckets: [BTreeMap<String, String>; 4],
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

const NO_FAILURE: &str = "the memory store does not fail";

impl MemoryStore {
    /// The name of the queue this store is (child keys and parent references use it).
    pub fn queue_name(&self) -> &str {
        &self.flow.queue
    }

    pub(super) fn set_queue_name(&mut self, name: &str) {
        self.flow.queue = Arc::from(name);
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
            .map(|d| d.refs.iter().map(|(k, (c, _))| (k, c)).collect())
            .unwrap_or_default();
        children.sort_unstable_by(|a, b| a.0.cmp(b.0));
        children.into_iter().map(|(_, c)| c.clone()).collect()
    }

    /// A child in another queue to remove with its tree, once this operation is done.
    pub(super) fn remove_elsewhere(&mut self, child: &ParentRef, now: Millis) {
        self.flow.removals.push((child.clone(), now));
    }

    /// Before `key` is removed (remove, clean, drain): a child still pending for its parent
    /// leaves its dependencies when the group settles (`lifecycle::flows::removal_tells`).
    pub(super) fn flow_on_removal(&mut self, key: &JobId, now: Millis) {
        if let Some(parent) = shared::removal_tells(&self.jobs[key]).cloned() {
            let removed = Change::Done(ChildOutcome::Removed);
            self.send(&parent, key, removed, now).expect(NO_FAILURE);
        }
    }

    /// When `key` leaves the store: its own dependency sets go with it (its pending children
    /// then run on their own).
    pub(super) fn flow_on_delete(&mut self, key: &JobId) {
        self.forget_parent(key).expect(NO_FAILURE);
    }

    /// Before an obliterate (`lifecycle::flows::on_obliterate`).
    pub(super) fn flow_on_obliterate(&mut self, now: Millis) {
        shared::on_obliterate(self, now).expect(NO_FAILURE);
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

    /// `parent` waits for `child` (a flow just created them).
    fn add_dependency(&mut self, parent: &str, child: ParentRef) {
        let key = child.key();
        self.put_child(parent, &child, key, Bucket::Unprocessed, String::new())
            .expect(NO_FAILURE);
    }
}

impl DependencySets for MemoryStore {
    fn job_state(&mut self, id: &str) -> CoreResult<Option<JobState>> {
        Ok(self.jobs.get(id).map(|j| j.state))
    }

    fn bucket_of(&mut self, parent_id: &str, child_key: &str) -> CoreResult<Option<Bucket>> {
        Ok(self
            .flow
            .deps
            .get(parent_id)
            .and_then(|d| d.refs.get(child_key))
            .map(|(_, bucket)| *bucket))
    }

    fn put_child(
        &mut self,
        parent_id: &str,
        child: &ParentRef,
        child_key: String,
        bucket: Bucket,
        value: String,
    ) -> CoreResult<()> {
        let deps = match self.flow.deps.get_mut(parent_id) {
            Some(deps) => deps,
            None => {
                let key = self.key(parent_id).unwrap_or_else(|_| Arc::from(parent_id));
                self.flow.deps.entry(key).or_default()
            }
        };
        match deps.refs.get_mut(&child_key) {
            Some((_, was)) => {
                deps.buckets[*was as usize].remove(&child_key);
                *was = bucket;
            }
            None => {
                deps.refs.insert(child_key.clone(), (child.clone(), bucket));
            }
        }
        deps.buckets[bucket as usize].insert(child_key, value);
        Ok(())
    }

    fn drop_child(&mut self, parent_id: &str, child_key: &str) -> CoreResult<()> {
        if let Some(deps) = self.flow.deps.get_mut(parent_id) {
            if let Some((_, bucket)) = deps.refs.remove(child_key) {
                deps.buckets[bucket as usize].remove(child_key);
            }
        }
        Ok(())
    }

    fn count_bucket(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<usize> {
        Ok(self
            .flow
            .deps
            .get(parent_id)
            .map_or(0, |d| d.buckets[bucket as usize].len()))
    }

    fn bucket_entries(
        &mut self,
        parent_id: &str,
        bucket: Bucket,
    ) -> CoreResult<Vec<(String, String)>> {
        Ok(self.flow.deps.get(parent_id).map_or_else(Vec::new, |d| {
            d.buckets[bucket as usize]
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }

    fn bucket_children(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<Vec<ParentRef>> {
        Ok(self.flow.deps.get(parent_id).map_or_else(Vec::new, |d| {
            d.buckets[bucket as usize]
                .keys()
                .map(|k| d.refs[k].0.clone())
                .collect()
        }))
    }

    fn forget_parent(&mut self, parent_id: &str) -> CoreResult<()> {
        if !self.flow.deps.is_empty() {
            self.flow.deps.remove(parent_id);
        }
        Ok(())
    }

    fn forget_all(&mut self) -> CoreResult<()> {
        self.flow.deps.clear();
        Ok(())
    }
}

impl ChildNews for MemoryStore {
    /// To the outbox, even for a parent of this store: the group delivers it when it settles.
    fn send(
        &mut self,
        parent: &ParentRef,
        child_id: &str,
        change: Change,
        now: Millis,
    ) -> CoreResult<()> {
        let child = ParentRef {
            queue: self.flow.queue.to_string(),
            id: child_id.to_owned(),
        };
        self.flow.outbox.push(ChildEvent {
            parent: parent.clone(),
            child,
            change,
            at: now,
            hard: false,
        });
        Ok(())
    }

    /// The news it sends up the tree is marked hard, as its removal is.
    fn remove_emptied(&mut self, id: &Arc<str>, now: Millis) -> CoreResult<()> {
        let before = self.flow.outbox.len();
        self.delete_releasing(id, now);
        for event in &mut self.flow.outbox[before..] {
            event.hard = true;
        }
        Ok(())
    }

    fn failed_by_child(&mut self, id: &str, reason: String) -> CoreResult<()> {
        let key = self.key(id)?;
        self.flow
            .settled
            .push((key, FinishedResult::Failed(reason)));
        Ok(())
    }

    fn pending_children(&mut self) -> CoreResult<Vec<(ParentRef, String)>> {
        Ok(self
            .jobs
            .values()
            .filter_map(|job| Some((shared::removal_tells(job)?.clone(), job.id.to_string())))
            .collect())
    }
}

/// Delivers `event` to its parent's store; `true` if the child was pending there.
fn deliver(store: &mut MemoryStore, event: ChildEvent) -> bool {
    let ChildEvent {
        parent,
        child,
        change,
        at,
        hard,
    } = event;
    match change {
        Change::Done(outcome) => shared::apply_child(store, &parent.id, &child, outcome, at, hard),
        Change::Retried => shared::rejoin(store, &parent.id, &child, at).map(|()| true),
    }
    .expect(NO_FAILURE)
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
                deliver(&mut queues.states[i].store, event);
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
        let job = &store.jobs[&key];
        if let (Some(outcome), Some(parent)) = (
            flow::finished_owner_outcome(job),
            job.options.parent.clone(),
        ) {
            shared::on_finish(store, &parent, &key, outcome, now).expect(NO_FAILURE);
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

/// Detaches the child `child_id` from its parent (`lifecycle::flows::remove_child_dependency`);
/// a parent in another queue of the group hears of it at once.
fn remove_child_dependency(
    queues: &mut Queues,
    at: usize,
    child_id: &str,
    now: Millis,
) -> CoreResult<bool> {
    let store = &mut queues.states[at].store;
    Ok(
        match shared::remove_child_dependency(store, child_id, now)? {
            Detached::NoParent => false,
            Detached::Here(pending) => pending,
            Detached::Elsewhere { parent, child } => match queues.index(&parent.queue) {
                Some(p) => deliver(
                    &mut queues.states[p].store,
                    ChildEvent {
                        parent,
                        child,
                        change: Change::Done(ChildOutcome::Removed),
                        at: now,
                        hard: false,
                    },
                ),
                None => false,
            },
        },
    )
}

/// Removes every unprocessed child of `parent_id` that no worker holds (each leaves the
/// parent's dependencies, so the parent is released once none is left); returns how many.
fn remove_unprocessed_children(
    queues: &mut Queues,
    at: usize,
    parent_id: &str,
    now: Millis,
) -> CoreResult<usize> {
    let children = shared::unprocessed_children(&mut queues.states[at].store, parent_id)?;
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
        self.read(|store| shared::get_dependencies(store, &parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        self.read(|store| shared::get_dependencies_count(store, &parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        self.write_group(|queues, at| remove_child_dependency(queues, at, &child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        self.write_group(|queues, at| remove_unprocessed_children(queues, at, &parent_id, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::options::{JobOptions, StoreConfig};

    const T: Millis = 1_700_000_000_000;

    /// A parent of queue "default" waiting for two children of the same store.
    fn family() -> (MemoryStore, String, [ParentRef; 2]) {
        let mut store = MemoryStore::new(StoreConfig::default());
        let parent = store.create_with("p", "null", JobOptions::default(), true, T);
        let children = [0, 1].map(|_| {
            let options = JobOptions {
                parent: Some(ParentRef {
                    queue: "default".into(),
                    id: parent.id.to_string(),
                }),
                ..JobOptions::default()
            };
            let child = store.create_with("c", "null", options, false, T);
            let child = ParentRef {
                queue: "default".into(),
                id: child.id.to_string(),
            };
            store.add_dependency(&parent.id, child.clone());
            child
        });
        (store, parent.id.to_string(), children)
    }

    #[test]
    fn shared_steps_move_children_between_sets_and_release_the_parent_once() {
        let (mut store, parent, [a, b]) = family();
        let done = |v: &str| ChildOutcome::Completed(v.to_owned());
        assert!(shared::apply_child(&mut store, &parent, &a, done("1"), T, false).unwrap());
        // Told twice, the second time changes nothing.
        assert!(!shared::apply_child(&mut store, &parent, &a, done("1"), T, false).unwrap());
        assert_eq!(store.jobs[parent.as_str()].state, JobState::WaitingChildren);
        let counts = shared::get_dependencies_count(&mut store, &parent).unwrap();
        assert_eq!((counts.processed, counts.unprocessed), (1, 1));
        assert!(shared::apply_child(&mut store, &parent, &b, done("2"), T, false).unwrap());
        assert_eq!(store.jobs[parent.as_str()].state, JobState::Waiting);
        let page = shared::get_dependencies(&mut store, &parent, [0; 4], Some(1)).unwrap();
        assert_eq!(page.processed, vec![(a.key(), "1".to_owned())]);
        assert_eq!(page.next[0], Some(1));
        assert_eq!(store.children_of(&parent), vec![a, b]);
    }

    #[test]
    fn a_detached_child_no_longer_counts_and_a_missing_parent_is_not_found() {
        let (mut store, parent, [a, _]) = family();
        let detached = shared::remove_child_dependency(&mut store, &a.id, T).unwrap();
        assert_eq!(detached, Detached::Here(true));
        assert_eq!(store.jobs[a.id.as_str()].options.parent, None);
        let pending = shared::unprocessed_children(&mut store, &parent).unwrap();
        assert_eq!(pending.len(), 1);
        let missing = shared::get_dependencies_count(&mut store, "nope").unwrap_err();
        assert!(matches!(missing, CoreError::JobNotFound(_)), "{missing}");
    }
}
