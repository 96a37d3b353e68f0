//! What the memory store keeps for observation: the metrics series (`jobs::metrics::Series`)
//! and the worker registry. Neither wakes a waiter, so both are read-lock operations.

use std::collections::BTreeMap;

use crate::jobs::contract::{BoxFuture, JobObserve};
use crate::jobs::metrics::{Metrics, MetricsKind, Series};
use crate::jobs::model::Millis;
use crate::jobs::workers::{expired, heartbeat_expiry, WorkerEntry};

use super::MemoryBackend;

/// A queue's metrics (one series per kind, in `MetricsKind::ALL` order) and its workers by id
/// (their entry and when it expires).
#[derive(Debug, Default)]
pub struct Observed {
    series: [Series; 2],
    workers: BTreeMap<String, (WorkerEntry, Millis)>,
}

impl JobObserve for MemoryBackend {
    fn record_metrics(
        &self,
        kind: MetricsKind,
        counts: Vec<(Millis, u64)>,
        max_data_points: usize,
    ) -> BoxFuture<()> {
        self.read(move |store| store.observed.series[kind.index()].record(&counts, max_data_points))
    }

    fn get_metrics(&self, kind: MetricsKind, start: i64, end: i64) -> BoxFuture<Metrics> {
        self.read(move |store| Ok(store.observed.series[kind.index()].read(start, end)))
    }

    fn heartbeat_worker(
        &self,
        id: String,
        info: String,
        ttl: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        self.read(move |store| {
            let expires = heartbeat_expiry(&id, ttl, now)?;
            let entry = WorkerEntry {
                id: id.clone(),
                info,
                last_heartbeat: now,
            };
            store.observed.workers.insert(id, (entry, expires));
            Ok(())
        })
    }

    fn remove_worker(&self, id: String) -> BoxFuture<bool> {
        self.read(move |store| Ok(store.observed.workers.remove(&id).is_some()))
    }

    fn get_workers(&self, now: Millis) -> BoxFuture<Vec<WorkerEntry>> {
        self.read(move |store| {
            let workers = &mut store.observed.workers;
            workers.retain(|_, (_, expires)| !expired(*expires, now));
            Ok(workers.values().map(|(entry, _)| entry.clone()).collect())
        })
    }
}
