//! Reasons and limits every backend uses. The Lua scripts run inside Redis and cannot import
//! them; `lanemq-redis`'s tests hold `lua/` to these values.

/// Why a job that stalled more than its `max_stalled_count` failed (BullMQ's words).
pub const STALLED_REASON: &str = "job stalled more than allowable limit";

/// How many stack traces a job keeps (the newest).
pub const STACKTRACE_LIMIT: usize = 10;
