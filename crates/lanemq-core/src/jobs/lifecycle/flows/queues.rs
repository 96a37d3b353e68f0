//! `FlowQueues`: the queues a flow spans, as the flow steps of `create` and `existing` see them
//! (its own file, so that those two use it without using each other).

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::flow::{AddedNode, ParentRef};
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::{Dedup, JobOptions};

/// The queues a flow spans, as the flow steps see them: the queue it is added on ("home")
/// and the others of its group or directory.
pub trait FlowQueues {
    /// The name of the queue the flow is added on.
    fn home(&self) -> &str;
    /// `queue`'s checks of a node before anything is written (the payload fits, a `child`
    /// deduplicated into an existing job takes a job without a parent; an unknown queue is
    /// refused). A custom id that exists is the existing job (`existing`), checked there.
    fn check_job(&mut self, queue: &str, job: &NewJob, child: bool, now: Millis) -> CoreResult<()>;
    /// Refuses the flow when its new jobs waiting or delayed in `queue` (`options`, its
    /// leaves there) would take a group past its max_size (`groups::check_room`). A backend
    /// that writes other queues' nodes after the commit checks its home queue only.
    fn check_group_room(&mut self, queue: &str, options: &[&JobOptions]) -> CoreResult<()>;
    /// The id of the job of `queue` that a node with `dedup` would be deduplicated into, if any
    /// (`flow::dedup_owner`).
    fn dedup_owner(
        &mut self,
        queue: &str,
        dedup: &Dedup,
        now: Millis,
    ) -> CoreResult<Option<String>>;
    /// Takes the automatic id that a node of `queue` would have taken (none for a custom id).
    fn skip_id(&mut self, queue: &str, custom_id: bool) -> CoreResult<()>;
    /// Writes a checked node's job in `queue` (`hold`: it waits for children); `false` when it
    /// was deduplicated into the existing job returned.
    fn create_job(
        &mut self,
        queue: &str,
        job: NewJob,
        hold: bool,
        now: Millis,
    ) -> CoreResult<(Job, bool)>;
    /// The existing job `owner` of `queue` becomes a child of `parent`; returns it so.
    fn adopt(&mut self, queue: &str, owner: Job, parent: &ParentRef) -> CoreResult<Job>;
    /// `parent` (of any queue) waits for `child`.
    fn depend(&mut self, parent: &ParentRef, child: ParentRef) -> CoreResult<()>;
    fn load(&mut self, queue: &str, id: &str) -> CoreResult<Option<Job>>;
    /// Every child of the job `id` of `queue`, sorted by key.
    fn children_of(&mut self, queue: &str, id: &str) -> CoreResult<Vec<ParentRef>>;
    /// Parks the active job `id` of home, held by `token`, in waiting_children
    /// (`lifecycle::park_for_children`).
    fn park(&mut self, id: &str, token: &str, now: Millis) -> CoreResult<()>;
    /// Releases home's job `id`, parked for children, when none is pending
    /// (`flows::release_if_done`).
    fn release_if_done(&mut self, id: &str, now: Millis) -> CoreResult<()>;
    /// The job `id` of `queue`, given children (an add's `parent=`, or a flow's existing
    /// node), waits for them (`lifecycle::hold_for_children`; checked beforehand).
    fn hold(&mut self, queue: &str, id: &str, now: Millis) -> CoreResult<()>;
    /// Home's `duplicated` event for its existing job `id`.
    fn duplicated(&mut self, id: &Job, now: Millis) -> CoreResult<()>;
    /// After every node is written, before finished owners are told (SQLite sends the other
    /// queues' nodes, parents first, so that a parent exists when told).
    fn written(&mut self, added: &[AddedNode], now: Millis) -> CoreResult<()>;
    /// The new parent of `owner` (of `queue`), which had finished, hears what it finished
    /// with, as if it had just finished (`flow::finished_owner_outcome`).
    fn tell_finished_owner(&mut self, queue: &str, owner: &Job, now: Millis) -> CoreResult<()>;
}
