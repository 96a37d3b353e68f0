//! The durable-job side of lanemq: the job model, its options and their validation, the event
//! stream, and `MemoryStore`, the in-process reference implementation of the job contract that
//! `InMemoryJobQueue` exposes (and that the local and Redis backends must match).
//!
//! Every operation takes `now` (milliseconds since the Unix epoch) from the caller, so tests can
//! drive the clock and all backends agree on time.

mod backend;
pub mod dedup;
mod events;
pub mod flow;
mod local;
mod manage;
mod memory_backend;
mod memory_dedup;
mod memory_flow;
mod memory_scheduler;
mod model;
mod options;
mod paging;
pub mod scheduler;
mod store;
#[cfg(test)]
mod tests;
mod wire;

pub use backend::{ready, BoxFuture, Completion, Failure, JobBackend, NewJob};
pub use events::{event_name, field_name, known_event_name, EventLog, Field, StreamEvent, Text};
pub use flow::{AddedNode, Dependencies, DependencyCounts, FlowNode, ParentPolicy, ParentRef};
pub use local::LocalBackend;
pub use memory_backend::{wall_clock_ms, MemoryBackend, MemoryGroup};
pub use model::{
    next_ready_at, rate_limit_end, rate_limited_until, FinishedResult, Job, JobState, Lock, Millis,
    JOB_STATES_COUNT, MAX_RATE_LIMIT_END,
};
pub use options::{
    check_payload, validate_job_id, Backoff, BackoffKind, Dedup, JobOptions, Retention,
    DEFAULT_MAX_PAYLOAD_BYTES, MAX_PRIORITY,
};
pub use paging::index_range;
pub use scheduler::{JobScheduler, Template};
pub use store::{Claimed, FailOutcome, MemoryStore, StoreConfig};
pub use wire::{CompletedAndClaimed, Settle, Settled, Wire, WireCall, WireCalls};
