//! The one error enum of the core. The bindings map each variant to one Python exception.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A configuration value is out of range; the message names the field and the value.
    #[error("{0}")]
    InvalidConfig(String),
    /// A lane id that the scheduler does not have.
    #[error("unknown lane: {0:?}")]
    UnknownLane(String),
    /// The scheduler no longer accepts work.
    #[error("the queue manager is shut down")]
    Shutdown,
    /// A command id that the scheduler does not know (already finished or never submitted).
    #[error("unknown command: {0}")]
    UnknownCommand(u64),
    /// A command exists but is not in the state the operation needs.
    #[error("command {id} is {state}, not {expected}")]
    CommandState {
        id: u64,
        state: &'static str,
        expected: &'static str,
    },
    /// No job has this id.
    #[error("job {0:?} not found")]
    JobNotFound(String),
    /// The job exists but is not in the state the operation needs.
    #[error("job {id:?} is {state}, not {expected}")]
    JobState {
        id: String,
        state: &'static str,
        expected: &'static str,
    },
    /// A completion of a parent whose children are not all done (BullMQ's "pending
    /// dependencies", error code -4): a parent released early by `continue_parent_on_failure`
    /// while a sibling is unfinished. Nothing is written; the job stays active, held.
    #[error("job {0:?} has pending dependencies: a child it waits for is unfinished")]
    PendingDependencies(String),
    /// A finishing or renewing call presented a token that does not hold the job's lock.
    #[error("{0}")]
    LockMismatch(String),
    /// The operation is refused as things stand (e.g. removing a locked job).
    #[error("{0}")]
    Refused(String),
    /// The backend's server could not be reached (refused, dropped, timed out, still loading).
    #[error("{0}")]
    Connection(String),
    /// The backend's server refused the credentials (a `Connection` error of its own kind).
    #[error("{0}")]
    Authentication(String),
    /// An add would take a group past its `max_size` (`contract::GroupLimits`); nothing was
    /// written.
    #[error("group {group:?} is full: it holds {max_size} jobs, its max_size")]
    GroupFull { group: String, max_size: u32 },
    /// A lease renewal's answer for a job whose cancellation was requested (`JobCancels`):
    /// the lease is renewed nonetheless, so the worker can fail it with its token.
    #[error("job {id:?} was cancelled: {reason}")]
    CancelRequested { id: String, reason: String },
    /// Reading or writing durable storage failed.
    #[error("storage error: {0}")]
    Storage(String),
}

pub type CoreResult<T> = Result<T, CoreError>;
