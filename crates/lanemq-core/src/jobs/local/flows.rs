//! The SQLite file's flows, above `SqlStore`: how a child's news travels (`ChildNews`) for the
//! shared steps of `lifecycle::flows`, detaching a child and removing a parent's unprocessed
//! children (here or in other queues' files), and the flow contract. The sets are `flow_sets`
//! (their SQL `flow_deps`), the files a flow spans `flow_files`, the children in other files
//! `remote`; removals settle in `job_storage::settle_removals`.
//!
//! What a child's change means for its parent is applied at once, in the transaction of the
//! operation that changed the child, when the parent is in the same queue (a parent failed by a
//! child tells its own parent in turn, so a failure climbs the tree). A file holds one queue:
//! when the parent's queue is another (a file beside this one), that transaction writes a
//! message instead (`links::send`), delivered exactly once right after it commits (`relay`).

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::{BoxFuture, JobFlows};
use crate::jobs::flow::{
    self, AddedNode, ChildOutcome, Dependencies, DependencyCounts, FlowNode, ParentRef,
};
use crate::jobs::lifecycle::flows::{self as shared, Bucket, Change, ChildNews, Detached};
use crate::jobs::lifecycle::JobStorage;
use crate::jobs::model::Millis;
use crate::jobs::options::JobOptions;

use super::env::Env;
use super::flow_deps::bucket_of;
use super::flow_files::FileFlow;
use super::links::{self, Message};
use super::manage;
use super::remote::{remove_remote, tree_locked};
use super::rows::{load, sql};
use super::storage::SqlStore;
use super::LocalBackend;

impl ChildNews for SqlStore<'_> {
    /// A parent here hears at once, in this transaction; one in another queue's file by a
    /// message relayed after the commit.
    fn send(
        &mut self,
        parent: &ParentRef,
        child_id: &str,
        change: Change,
        now: Millis,
    ) -> CoreResult<()> {
        if parent.queue == self.env.queue {
            let child = ParentRef {
                queue: parent.queue.clone(),
                id: child_id.to_owned(),
            };
            return match change {
                Change::Done(outcome) => {
                    shared::apply_child(self, &parent.id, &child, outcome, now, false).map(drop)
                }
                Change::Retried => shared::rejoin(self, &parent.id, &child, now),
            };
        }
        let (parent_id, child) = (parent.id.clone(), child_id.to_owned());
        let message = match change {
            Change::Done(outcome) => Message::Child {
                parent: parent_id,
                child,
                outcome,
                at: now,
            },
            Change::Retried => Message::Rejoin {
                parent: parent_id,
                child,
                at: now,
            },
        };
        links::send(self.conn, self.env, &parent.queue, &message)
    }

    /// The drain's or clean's `settle_removals` loop carries `hard` on up the tree.
    fn remove_emptied(&mut self, id: &Arc<str>, now: Millis) -> CoreResult<()> {
        self.remove_job(id, now)
    }

    /// `fail_now` told them already (`tell_waiters`).
    fn failed_by_child(&mut self, _id: &str, _reason: String) -> CoreResult<()> {
        Ok(())
    }

    fn pending_children(&mut self) -> CoreResult<Vec<(ParentRef, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, options FROM jobs WHERE state != 4 AND options LIKE '%\"parent\":{%'",
            )
            .map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)?;
        let mut children = Vec::new();
        for (id, options) in rows {
            let options: JobOptions = serde_json::from_str(&options)
                .map_err(|e| CoreError::Storage(format!("job {id:?}: bad options: {e}")))?;
            if let Some(parent) = options.parent {
                children.push((parent, id));
            }
        }
        Ok(children)
    }
}

/// Detaches the child `child_id` from its parent (`lifecycle::flows::remove_child_dependency`);
/// a parent in another queue's file says whether it still waits for this child, and the
/// message delivered after the commit makes it stop.
fn remove_child_dependency(
    conn: &Connection,
    env: &mut Env,
    child_id: &str,
    now: Millis,
) -> CoreResult<bool> {
    let mut store = SqlStore::new(conn, env);
    match shared::remove_child_dependency(&mut store, child_id, now)? {
        Detached::NoParent => Ok(false),
        Detached::Here(pending) => Ok(pending),
        Detached::Elsewhere { parent, child } => {
            let key = child.key();
            let pending = links::with_link(store.env, &parent.queue, |link, _| {
                Ok(bucket_of(link, &parent.id, &key)? == Some(Bucket::Unprocessed))
            })?;
            let removed = Change::Done(ChildOutcome::Removed);
            store.send(&parent, &child.id, removed, now)?;
            Ok(pending)
        }
    }
}

/// Removes every unprocessed child of `parent_id` that no worker holds (each leaves the
/// parent's dependencies, so the parent is released once none is left); returns how many.
/// Children in other queues are removed there by a message (counted if they exist and no
/// live lock holds them now).
fn remove_unprocessed_children(
    conn: &Connection,
    env: &mut Env,
    parent_id: &str,
    now: Millis,
) -> CoreResult<usize> {
    let children = shared::unprocessed_children(&mut SqlStore::new(conn, env), parent_id)?;
    let mut removed = 0;
    for child in children {
        if child.queue != env.queue {
            let removable = links::with_link(env, &child.queue, |link, _| {
                Ok(load(link, &child.id)?.is_some()
                    && tree_locked(link, &child.queue, &child.id, now)?.is_none())
            })?;
            if removable {
                remove_remote(conn, env, &child, now)?;
                removed += 1;
            }
            continue;
        }
        // A refused removal (a child under a live lock, or gone) writes nothing.
        match manage::remove(conn, env, &child.id, now) {
            Ok(()) => removed += 1,
            Err(CoreError::Refused(_) | CoreError::JobNotFound(_)) => {}
            Err(other) => return Err(other),
        }
    }
    Ok(removed)
}

impl LocalBackend {
    /// Adds `children` under an existing job by `step` (add_children's or an add's `parent=`):
    /// the ids their other files would take are reserved first, then `step` runs in this
    /// file's transaction.
    fn with_children<F>(
        &self,
        children: Vec<FlowNode>,
        now: Millis,
        step: F,
    ) -> BoxFuture<Vec<AddedNode>>
    where
        F: FnOnce(&mut FileFlow<'_>, Vec<FlowNode>) -> CoreResult<Vec<AddedNode>> + Send + 'static,
    {
        let nodes: Vec<&FlowNode> = children.iter().collect();
        let reserving = self.reserve_remote(&nodes, "children", now);
        let backend = self.clone();
        Box::pin(async move {
            let reserved = reserving.await?;
            backend
                .call(move |conn, env| step(&mut FileFlow::new(conn, env, reserved), children))
                .await
        })
    }
}

impl JobFlows for LocalBackend {
    fn add_flow(&self, root: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let home = self.queue.to_string();
        if flow::is_single_job(&root, &home) {
            let adding = crate::jobs::contract::JobLifecycle::add(self, root.job, now);
            return Box::pin(async move {
                let (job, _) = adding.await?;
                Ok(AddedNode {
                    queue: home,
                    job,
                    children: Vec::new(),
                })
            });
        }
        let backend = self.clone();
        Box::pin(async move {
            let reserved = backend.reserve_remote(&[&root], "root", now).await?;
            backend
                .call(move |conn, env| {
                    shared::add_flow(&mut FileFlow::new(conn, env, reserved), root, now)
                })
                .await
        })
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.with_children(children, now, move |files, children| {
            shared::add_children(files, &parent_id, &token, children, now)
        })
    }

    fn attach_children(
        &self,
        parent_id: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        self.with_children(children, now, move |files, children| {
            shared::attach_children(files, &parent_id, children, now)
        })
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        self.direct(move |conn, env| {
            shared::get_dependencies(&mut SqlStore::new(conn, env), &parent_id, cursors, count)
        })
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        self.direct(move |conn, env| {
            shared::get_dependencies_count(&mut SqlStore::new(conn, env), &parent_id)
        })
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, env| remove_child_dependency(conn, env, &child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        self.call(move |conn, env| remove_unprocessed_children(conn, env, &parent_id, now))
    }
}
