//! The lane scheduler: named lanes of work, each with a priority, a concurrency window, a retry
//! policy, a rate limit and a priority boost; one scheduler decides which command starts next.
//!
//! The scheduler holds no user code and no clock: every operation takes `now` in microseconds
//! from an origin chosen by the caller, so the bindings use a monotonic clock and tests drive time.

mod capacity;
mod config;
mod dispatch;
mod metrics;
mod rate;
mod scheduler;
pub mod shared;
mod signals;
mod slab;
#[cfg(test)]
mod tests;

pub use config::{
    AlertThresholds, LaneConfig, PriorityBoost, RateLimit, RetryPolicy, DEFAULT_LANES,
};
pub use metrics::{LaneMetrics, Percentiles};
pub use scheduler::{
    CommandFailOutcome, DeadLetter, FailKind, LaneStats, Scheduler, SchedulerConfig, Started,
};
pub use signals::{AlertLevel, Signal};

/// Microseconds from the caller's origin.
pub type Micros = u64;
