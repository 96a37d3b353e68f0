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
use crate::jobs::options::{check_payload, JobOptions};

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

/// The queues of the group as a flow added on queue `at` spans them
/// (`lifecycle::flows::FlowQueues`): a node of another queue is written in that queue's store,
/// under the same lock.
struct GroupFlow<'a> {
    queues: &'a mut Queues,
    at: usize,
}

impl GroupFlow<'_> {
    /// The store of a queue the flow's checks found in the group.
    fn store(&mut self, queue: &str) -> &mut MemoryStore {
        let i = self.queues.index(queue).expect("a checked queue exists");
        &mut self.queues.states[i].store
    }

    fn home_store(&mut self) -> &mut MemoryStore {
        &mut self.queues.states[self.at].store
    }
}

impl shared::FlowQueues for GroupFlow<'_> {
    fn home(&self) -> &str {
        self.queues.states[self.at].store.queue_name()
    }

    fn check_job(&mut self, queue: &str, job: &NewJob, child: bool, now: Millis) -> CoreResult<()> {
        let i = self.queues.index(queue).ok_or_else(|| {
            CoreError::InvalidConfig(format!(
                "unknown queue {queue:?} (not a queue of this queue's group)"
            ))
        })?;
        self.queues.states[i].store.check_flow_job(job, child, now)
    }

    fn skip_id(&mut self, queue: &str, custom_id: bool) -> CoreResult<()> {
        if !custom_id {
            self.store(queue).next_job_id(&JobOptions::default());
        }
        Ok(())
    }

    fn create_job(
        &mut self,
        queue: &str,
        job: NewJob,
        hold: bool,
        now: Millis,
    ) -> CoreResult<(Job, bool)> {
        let i = self.queues.index(queue).expect("a checked queue exists");
        let state = &mut self.queues.states[i];
        let NewJob {
            name,
            data,
            options,
        } = job;
        if options.dedup.is_none() {
            return Ok((
                state.store.create_with(&name, &data, options, hold, now),
                true,
            ));
        }
        let created = state
            .store
            .insert_deduplicated_with(&name, &data, options, hold, now);
        super::settle_replaced(state);
        Ok(created)
    }

    fn adopt(&mut self, queue: &str, owner: Job, parent: &ParentRef) -> CoreResult<Job> {
        let store = self.store(queue);
        let job = store
            .jobs
            .get_mut(owner.id.as_ref())
            .expect("an owner exists");
        job.options.parent = Some(parent.clone());
        Ok(job.clone())
    }

    fn depend(&mut self, parent: &ParentRef, child: ParentRef) -> CoreResult<()> {
        self.store(&parent.queue).add_dependency(&parent.id, child);
        Ok(())
    }

    fn load(&mut self, queue: &str, id: &str) -> CoreResult<Option<Job>> {
        Ok(self
            .queues
            .index(queue)
            .and_then(|i| self.queues.states[i].store.jobs.get(id).cloned()))
    }

    fn children_of(&mut self, queue: &str, id: &str) -> CoreResult<Vec<ParentRef>> {
        Ok(self
            .queues
            .index(queue)
            .map(|i| self.queues.states[i].store.children_of(id))
            .unwrap_or_default())
    }

    fn park(&mut self, id: &str, token: &str, now: Millis) -> CoreResult<()> {
        lifecycle::park_for_children(self.home_store(), id, token, now)
    }

    fn duplicated(&mut self, job: &Job, now: Millis) -> CoreResult<()> {
        lifecycle::JobStorage::event(self.home_store(), now, "duplicated", Some(&job.id), None)
    }

    fn written(&mut self, _added: &[AddedNode], _now: Millis) -> CoreResult<()> {
        Ok(())
    }

    /// Told what the owner is now (a later node may have changed it).
    fn tell_finished_owner(&mut self, queue: &str, owner: &Job, now: Millis) -> CoreResult<()> {
        let store = self.store(queue);
        let job = &store.jobs[owner.id.as_ref()];
        match (
            flow::finished_owner_outcome(job),
            job.options.parent.clone(),
        ) {
            (Some(outcome), Some(parent)) => {
                shared::on_finish(store, &parent, &owner.id, outcome, now)
            }
            _ => Ok(()),
        }
    }
}

/// Adds a flow on queue `at`: a flow of one job is added as a single job; a root whose custom
/// id exists is that job, with its children; otherwise `lifecycle::flows::add_flow`.
fn add_flow(queues: &mut Queues, at: usize, root: FlowNode, now: Millis) -> CoreResult<AddedNode> {
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
    let mut group = GroupFlow { queues, at };
    match shared::existing_root(&mut group, &root, now)? {
        Some(node) => Ok(node),
        None => shared::add_flow(&mut group, root, now),
    }
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
        self.write_group(|queues, at| {
            let mut group = GroupFlow { queues, at };
            shared::add_children(&mut group, &parent_id, &token, children, now)
        })
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
