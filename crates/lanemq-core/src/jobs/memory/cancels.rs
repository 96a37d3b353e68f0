//! Cancellation on this backend (`contract::JobCancels`).

use crate::jobs::contract::JobCancels;

use super::MemoryBackend;

impl JobCancels for MemoryBackend {}
