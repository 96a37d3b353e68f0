//! Reasons and limits every backend uses. The Lua scripts run inside Redis and cannot import
//! them; `lanemq-redis`'s tests hold `lua/` to these values.

/// Why a job that stalled more than its `max_stalled_count` failed (BullMQ's words).
pub const STALLED_REASON: &str = "job stalled more than allowable limit";

/// How many stack traces a job keeps (the newest).
pub const STACKTRACE_LIMIT: usize = 10;

/// Why a job that would start again after `max_started_attempts` starts failed (BullMQ's
/// words for `maxStartedAttempts`).
pub const STARTED_LIMIT_REASON: &str = "job started more than allowable limit";

/// How a cancelled job's stack trace entry begins (then the reason): `Job.wait()` in Python
/// raises `JobCancelledError` when the last entry does.
pub const CANCELLED_TRACE_PREFIX: &str = "JobCancelledError: ";

/// How long a cancel request stays in a queue's request log (`JobCancels::wait_cancels`);
/// a worker that missed it hears it from its lease renewal.
pub const CANCEL_LOG_TTL: u64 = 60_000;
