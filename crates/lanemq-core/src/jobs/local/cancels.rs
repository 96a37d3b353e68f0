//! Cancellation on this backend (`contract::JobCancels`).

use crate::jobs::contract::JobCancels;

use super::LocalBackend;

impl JobCancels for LocalBackend {}
