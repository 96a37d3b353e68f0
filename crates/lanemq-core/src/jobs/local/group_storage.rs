//! `SqlStore` as the `GroupStorage` the shared transitions need beside `JobStorage`: each
//! method is `GroupRows`' on the operation's connection.

use crate::error::CoreResult;
use crate::jobs::contract::GroupLimits;
use crate::jobs::lifecycle::{GroupSettings, GroupState, GroupStorage};
use crate::jobs::model::{Job, JobState, Millis};

use super::group_rows::GroupRows;
use super::storage::SqlStore;

/// Forwards each listed method to `GroupRows` over the store's connection.
macro_rules! to_rows {
    ($(fn $name:ident(&mut self $(, $arg:ident: $ty:ty)*) -> $out:ty;)*) => {
        $(fn $name(&mut self $(, $arg: $ty)*) -> $out {
            GroupRows(self.conn).$name($($arg),*)
        })*
    };
}

impl GroupStorage for SqlStore<'_> {
    to_rows! {
        fn groups_waiting(&mut self) -> CoreResult<bool>;
        fn group_state(&mut self, group: &str) -> CoreResult<GroupState>;
        fn first_turn(&mut self) -> CoreResult<Option<String>>;
        fn set_turn(&mut self, group: &str, on: bool) -> CoreResult<()>;
        fn take_group_head(&mut self, group: &str, change: &mut dyn FnMut(&mut Job))
            -> CoreResult<Option<Job>>;
        fn set_group_rate(&mut self, group: &str, window: (Millis, u64), held: Millis)
            -> CoreResult<()>;
        fn rate_held_due(&mut self, now: Millis) -> CoreResult<Vec<String>>;
        fn next_rate_release(&mut self) -> CoreResult<Option<Millis>>;
        fn group_queued(&mut self, group: &str) -> CoreResult<usize>;
        fn group_settings(&mut self, group: &str) -> CoreResult<GroupSettings>;
        fn set_group_settings(&mut self, group: &str, settings: GroupSettings) -> CoreResult<()>;
        fn group_defaults(&mut self) -> CoreResult<GroupLimits>;
        fn set_group_defaults(&mut self, limits: GroupLimits) -> CoreResult<()>;
        fn group_names(&mut self) -> CoreResult<Vec<String>>;
        fn group_counts(&mut self, group: &str) -> CoreResult<Vec<(JobState, usize)>>;
        fn group_ids(&mut self, group: &str, states: &[JobState]) -> CoreResult<Vec<String>>;
    }
}
