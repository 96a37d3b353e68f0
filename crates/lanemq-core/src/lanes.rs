//! The lanes' dispatcher: named lanes of work, each with a priority, a concurrency window, a
//! retry policy, a rate limit and a priority boost; one dispatcher decides which command starts
//! next. ("Dispatcher", not "scheduler": in this crate a scheduler makes repeatable jobs.)
//!
//! The dispatcher holds no user code and no clock: every operation takes `now` in microseconds
//! from an origin chosen by the caller, so the bindings use a monotonic clock and tests drive time.

mod capacity;
mod config;
mod dispatch;
mod dispatcher;
mod metrics;
mod rate;
pub mod shared;
mod signals;
mod slab;
#[cfg(test)]
mod tests;

pub use config::{
    AlertThresholds, LaneConfig, PriorityBoost, RateLimit, RetryPolicy, DEFAULT_LANES,
};
pub use dispatcher::{
    CommandFailOutcome, DeadLetter, Dispatcher, DispatcherConfig, FailKind, LaneStats, Started,
};
pub use metrics::{LaneMetrics, Percentiles};
pub use signals::{AlertLevel, Signal};

/// Microseconds from the caller's origin.
pub type Micros = u64;
