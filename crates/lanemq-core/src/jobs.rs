//! The durable-job side of lanemq: the job model, its options and their validation, the event
//! stream, and `MemoryStore`, the in-process reference implementation of the job contract that
//! `InMemoryJobQueue` exposes (and that the local and Redis backends must match).
//!
//! Every operation takes `now` (milliseconds since the Unix epoch) from the caller, so tests can
//! drive the clock and all backends agree on time.

pub mod constants;
pub mod contract;
pub mod dedup;
mod events;
pub mod flow;
pub mod jitter;
mod lifecycle;
mod local;
mod memory;
mod model;
mod options;
mod paging;
pub mod scheduler;
#[cfg(test)]
mod tests;

pub use contract::{
    ready, BoxFuture, Completion, FailOutcome, Failure, JobAdmin, JobBackend, JobDedup, JobEvents,
    JobFlows, JobLifecycle, JobReads, JobSchedulers, NewJob, QueueStats,
};
pub use events::{event_name, field_name, known_event_name, EventLog, Field, StreamEvent, Text};
pub use flow::{AddedNode, Dependencies, DependencyCounts, FlowNode, ParentPolicy, ParentRef};
pub use local::LocalBackend;
pub use memory::{Claimed, MemoryBackend, MemoryGroup, MemoryStore};
pub use model::{
    check_max_active, check_rate_limit, next_ready_at, rate_limit_end, rate_limited_until,
    wall_clock_ms, FinishedResult, Job, JobState, Lock, Millis, JOB_STATES_COUNT,
    MAX_RATE_LIMIT_END,
};
pub use options::{
    check_payload, validate_job_id, Backoff, BackoffKind, Dedup, JobOptions, Retention,
    StoreConfig, DEFAULT_MAX_PAYLOAD_BYTES, MAX_PRIORITY,
};
pub use paging::index_range;
pub use scheduler::{JobScheduler, Template};
