//! lanemq's pure-Rust core. Nothing here knows Python: the bindings crate wraps these types.
//!
//! - [`lanes`]: the in-process lanes' dispatcher (priorities, capacity, rate limits, retries,
//!   dead letters, metrics) that `QueueManager` drives.
//! - [`journal`]: the append-only, fsynced file that makes named lane commands durable.
//! - [`schedule`]: when the runs of a repeatable job (every N ms, or a cron pattern in a time
//!   zone) are due.
//! - [`worker`]: a job worker's bookkeeping (running jobs, outcomes to report, calls in flight,
//!   pause and back-off) and the decision of each turn of its loop.

pub mod error;
pub mod jobs;
pub mod journal;
pub mod lanes;
pub mod schedule;
pub mod worker;

pub use error::{CoreError, CoreResult};
