//! What the backends keep for observing a queue, beside its jobs: per-minute metrics of
//! finished jobs (`jobs::metrics`) and the registry of running workers (`jobs::workers`).
//! Workers write both from chores of their own, never from the calls that claim or finish jobs.
//! `obliterate` deletes them; `drain` and `clean` leave them.

use crate::jobs::metrics::{Metrics, MetricsKind};
use crate::jobs::model::Millis;
use crate::jobs::workers::WorkerEntry;

use super::BoxFuture;

pub trait JobObserve: Send + Sync + 'static {
    /// Adds `(minute start, count)` pairs to the `kind` series, keeping at most
    /// `max_data_points` minutes (`metrics::update`). `InvalidConfig` for a bad value
    /// (`metrics::check_record`), writing nothing.
    fn record_metrics(
        &self,
        kind: MetricsKind,
        counts: Vec<(Millis, u64)>,
        max_data_points: usize,
    ) -> BoxFuture<()>;
    /// The `kind` series, its per-minute counts from `start` to `end` (`metrics::read`).
    fn get_metrics(&self, kind: MetricsKind, start: i64, end: i64) -> BoxFuture<Metrics>;
    /// Records that worker `id` is alive at `now`, described by `info`, for `ttl` ms.
    fn heartbeat_worker(&self, id: String, info: String, ttl: Millis, now: Millis)
        -> BoxFuture<()>;
    /// Removes worker `id` from the registry; `true` if it was there.
    fn remove_worker(&self, id: String) -> BoxFuture<bool>;
    /// The workers heard from within their ttl at `now`, by id; the others are deleted.
    fn get_workers(&self, now: Millis) -> BoxFuture<Vec<WorkerEntry>>;
}
