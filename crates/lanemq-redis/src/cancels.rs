//! Cancellation on Redis (`JobCancels`).

use lanemq_core::jobs::JobCancels;

use crate::job_backend::RedisJobBackend;

impl JobCancels for RedisJobBackend {}
