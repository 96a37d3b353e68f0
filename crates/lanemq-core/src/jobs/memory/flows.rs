//! `MemoryStore`'s flow transport and the group-level flow steps: how a child's news travels
//! (`ChildNews`: the store's outbox, kept in its `Flows`, `flow_state.rs`) for the shared steps
//! of `lifecycle::flows`, the store's flow hooks (removal, deletion, obliterate), and what spans
//! the queues of a `MemoryGroup` under its one lock (settle the news, remove a tree, detach or
//! remove children), with the flow contract. The sets are `flow_sets`, adding flows
//! `flow_group`.
//!
//! A store never writes another queue's store: what a child's change means for its parent goes
//! to the store's outbox, and `settle_flows` (run by the group after every write, still under
//! the lock) delivers it to the parent's store, repeatedly, so a failure climbs the tree.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};

use super::flow_group::{self, GroupFlow};
use super::flow_state::ChildEvent;
use super::job_id::JobId;
use super::store::{MemoryStore, NO_FAILURE};
use super::MemoryBackend;
use super::{finish, settle_missing, Queues};
use crate::jobs::contract::{BoxFuture, JobFlows};
use crate::jobs::flow::{
    AddedNode, ChildOutcome, Dependencies, DependencyCounts, FlowNode, ParentRef,
};
use crate::jobs::lifecycle::flows::{Change, ChildNews, DependencySets, Detached};
use crate::jobs::lifecycle::{self, flows as shared};
use crate::jobs::model::{FinishedResult, Millis};

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
        self.write_group(|queues, at| flow_group::add_flow(queues, at, flow, now))
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.write_group(|queues, at| {
            let mut group = GroupFlow::new(queues, at);
            shared::add_children(&mut group, &parent_id, &token, children, now)
        })
    }

    fn attach_children(
        &self,
        parent_id: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.write_group(|queues, at| {
            let mut group = GroupFlow::new(queues, at);
            shared::attach_children(&mut group, &parent_id, children, now)
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
