//! Job schedulers: repeatable jobs, one pending occurrence at a time (see `jobs::scheduler`).

use crate::jobs::model::{Job, Millis};
use crate::jobs::scheduler::{JobScheduler, Template};
use crate::schedule::ScheduleSpec;

use super::BoxFuture;

pub trait JobSchedulers: Send + Sync + 'static {
    /// Creates or updates the job scheduler `key` (see `jobs::scheduler` for what an upsert
    /// decides), in one atomic step; resolves to its pending occurrence. Invalid input is
    /// `InvalidConfig` and writes nothing.
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job>;
    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>>;
    /// Schedulers by next run time (then key), from index `start` to `end` inclusive (`end < 0`
    /// counts from the end); `ascending = false` reverses the order.
    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>>;
    fn count_schedulers(&self) -> BoxFuture<usize>;
    /// Removes the scheduler `key` and its pending occurrence if that has not started; `true`
    /// if the scheduler existed.
    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool>;
}
