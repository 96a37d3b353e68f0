//! `JobId`: how the memory store's tables name a job, at the bottom of the folder so that the
//! tables below `store.rs` (dedup keys, flow state) name jobs as the store does.

use std::sync::Arc;

/// The job's own id, shared (a table holds a reference count, never a copy of the string).
pub type JobId = Arc<str>;
