//! The durable-job side of lanemq:
//!
//! - `contract`: the job contract every backend implements, split by concern;
//! - the shared model: `model` (a job and its states), `options` (and their checks), `events`,
//!   `constants`, `jitter`, and the decisions of `dedup`, `flow`, `scheduler`, `metrics` (the
//!   per-minute series) and `workers` (the worker registry). They are layered, without a
//!   circle: `clock` (`Millis`) and `parent` (a child's parent link) below `options`, then
//!   `model`, `dedup`, `flow`;
//! - `lifecycle`: every job transition, once, over the small `JobStorage` interface that the
//!   two in-process stores implement, with its effects applied in one documented order;
//! - the backends of this crate: `memory` (`MemoryBackend`, in-process) and `local`
//!   (`LocalBackend`, a SQLite file). The Redis backend (its own crate) runs the same order in
//!   Lua. `scripts/jobs-imports` prints which of these modules uses which, and fails on an
//!   import circle among the contract and the shared model.
//!
//! Every operation takes `now` (milliseconds since the Unix epoch) from the caller, so tests can
//! drive the clock and all backends agree on time.

mod clock;
pub mod constants;
pub mod contract;
pub mod dedup;
mod events;
pub mod flow;
pub mod jitter;
pub mod lifecycle;

pub use lifecycle::Gate;
pub(crate) mod local;
mod memory;
pub mod metrics;
mod model;
mod options;
mod paging;
mod parent;
mod purge;
mod queue_name;
pub mod scheduler;
mod search;
#[cfg(test)]
mod tests;
pub mod workers;

pub use contract::{
    ready, BoxFuture, CancelOutcome, CancelRequest, Completion, FailOutcome, Failure, GroupLimits,
    GroupRow, JobAdmin, JobBackend, JobCancels, JobDedup, JobEvents, JobFlows, JobGroups,
    JobLifecycle, JobObserve, JobReads, JobSchedulers, NewJob, QueueStats,
};
pub use events::{
    check_custom_event, event_name, event_names, field_name, known_event_name, EventLog, Field,
    StreamEvent, Text, CUSTOM_EVENT, MAX_CUSTOM_EVENT_NAME,
};
pub use flow::{AddedNode, Dependencies, DependencyCounts, FlowNode};
pub use local::{LocalBackend, LocalSync};
pub use memory::{Claimed, MemoryBackend, MemoryGroup, MemoryStore};
pub use metrics::{Metrics, MetricsKind};
pub use model::{
    check_max_active, check_rate_limit, next_ready_at, rate_limit_end, rate_limited_until,
    wall_clock_ms, FinishedResult, Job, JobState, Lock, LogLine, Millis, JOB_STATES_COUNT,
    MAX_RATE_LIMIT_END,
};
pub use options::{
    check_log_line, check_payload, validate_group, validate_job_id, validate_telemetry, Backoff,
    BackoffKind, Dedup, JobOptions, Retention, StoreConfig, Telemetry, DEFAULT_MAX_PAYLOAD_BYTES,
    MAX_PRIORITY, MAX_TELEMETRY_BYTES, MAX_TELEMETRY_ENTRIES,
};
pub use paging::index_range;
pub use parent::{ParentPolicy, ParentRef};
pub use purge::remove_jobs;
pub use queue_name::{check_queue_name, is_queue_name, MAX_QUEUE_NAME, QUEUE_NAME_RULE};
pub use scheduler::{JobScheduler, Template};
pub use search::{JobFilter, Matcher, MAX_SEARCH_COUNT, SEARCH_SCAN_LIMIT};
pub use workers::WorkerEntry;
