//! Groups on Redis (`JobGroups`).

use lanemq_core::jobs::JobGroups;

use crate::job_backend::RedisJobBackend;

impl JobGroups for RedisJobBackend {}
