//! `Schedulers`: the memory store's job schedulers by key. A plain map: `schedulers.rs` makes
//! it the store's `SchedulerTable` for `lifecycle::schedulers`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::jobs::lifecycle::StoredScheduler;

#[derive(Debug, Default)]
pub(super) struct Schedulers {
    pub(super) by_key: HashMap<Arc<str>, StoredScheduler, foldhash::fast::RandomState>,
}

impl Schedulers {
    pub(super) fn clear(&mut self) {
        self.by_key.clear();
    }
}
