//! Flows: parents that wait for their children (see `jobs::flow`). Backends without flows
//! keep the defaults, which refuse (`Refused`).

use crate::jobs::flow::{unsupported, AddedNode, Dependencies, DependencyCounts, FlowNode};
use crate::jobs::model::Millis;

use super::{ready, BoxFuture};

pub trait JobFlows: Send + Sync + 'static {
    /// Adds a flow: every node checked first (its options, its queue, a free custom id), then
    /// all written in one step; a node with children waits for them in waiting_children.
    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let _ = (flow, now);
        ready(Err(unsupported()))
    }
    /// Adds children to the active job `parent_id` held by `token` and parks it in
    /// waiting_children (lock released, no attempt used) until they are done.
    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let _ = (parent_id, token, children, now);
        ready(Err(unsupported()))
    }
    /// Adds children to the job `parent_id` that is not running (BullMQ's `opts.parent` on an
    /// add): a waiting or delayed parent moves to waiting_children, one there gains them; any
    /// other state is refused (`flow::TAKES_CHILDREN`), a missing parent is `JobNotFound`, and
    /// nothing is written then.
    fn attach_children(
        &self,
        parent_id: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let _ = (parent_id, children, now);
        ready(Err(unsupported()))
    }
    /// A page of the dependencies of `parent_id`: each set (processed, unprocessed, failed,
    /// ignored) from its cursor, at most `count` of each (`None`: all).
    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        let _ = (parent_id, cursors, count);
        ready(Err(unsupported()))
    }
    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        let _ = parent_id;
        ready(Err(unsupported()))
    }
    /// Detaches `child_id` from its parent; `true` if it was a pending dependency (the parent
    /// is released if it was the last).
    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        let _ = (child_id, now);
        ready(Err(unsupported()))
    }
    /// Removes the unprocessed children of `parent_id` that no worker holds; returns how many.
    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        let _ = (parent_id, now);
        ready(Err(unsupported()))
    }
}
