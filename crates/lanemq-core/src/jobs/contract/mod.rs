//! The job contract every backend implements (memory, local file, Redis), split by concern:
//! `JobLifecycle` (adding, claiming, finishing, leases), `JobReads`, `JobAdmin` (edits of one job
//! and of the queue), `JobEvents`, `JobDedup`, `JobFlows`, `JobSchedulers`, `JobObserve`
//! (metrics and the worker registry), `JobGroups` and `JobCancels`. `JobBackend` is all of them at once, which is what the bindings hold (as a trait object).
//!
//! The contract owns the types its methods speak (`types`); it imports the shared model
//! (`model`, `options`, `flow`, `scheduler`, `events`, `metrics`, `workers`), never an implementation.
//!
//! Methods return boxed `'static` futures so the bindings can await any backend the same way; an
//! in-process backend returns futures that are ready at once, and the bindings then skip the
//! async runtime entirely. `now` is milliseconds since the Unix epoch, chosen by the caller; the
//! waits use the wall clock. Batch methods report per item, in input order.

mod admin;
mod cancels;
mod dedup;
mod events;
mod flows;
mod groups;
mod lifecycle;
mod observe;
mod reads;
mod schedulers;
mod types;

use std::future::Future;
use std::pin::Pin;

use crate::error::CoreResult;

pub use admin::JobAdmin;
pub use cancels::{CancelOutcome, CancelRequest, JobCancels};
pub use dedup::JobDedup;
pub use events::JobEvents;
pub use flows::JobFlows;
pub use groups::{GroupLimits, GroupRow, JobGroups};
pub use lifecycle::JobLifecycle;
pub use observe::JobObserve;
pub use reads::{JobReads, QueueStats};
pub use schedulers::JobSchedulers;
pub use types::{Completion, FailOutcome, Failure, NewJob};

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = CoreResult<T>> + Send + 'static>>;

/// A future that is already resolved.
pub fn ready<T: Send + 'static>(value: CoreResult<T>) -> BoxFuture<T> {
    Box::pin(std::future::ready(value))
}

/// The whole contract: what a backend is. Implement the concern traits; this follows.
pub trait JobBackend:
    JobLifecycle
    + JobReads
    + JobAdmin
    + JobEvents
    + JobDedup
    + JobFlows
    + JobSchedulers
    + JobObserve
    + JobGroups
    + JobCancels
{
}

impl<T> JobBackend for T where
    T: JobLifecycle
        + JobReads
        + JobAdmin
        + JobEvents
        + JobDedup
        + JobFlows
        + JobSchedulers
        + JobObserve
        + JobGroups
        + JobCancels
{
}
