//! Groups on this backend (`contract::JobGroups`).

use crate::jobs::contract::JobGroups;

use super::LocalBackend;

impl JobGroups for LocalBackend {}
