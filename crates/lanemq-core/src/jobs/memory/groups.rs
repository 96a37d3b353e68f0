//! Groups on this backend (`contract::JobGroups`).

use crate::jobs::contract::JobGroups;

use super::MemoryBackend;

impl JobGroups for MemoryBackend {}
