//! `MemoryJobStore`: the in-process job store behind `InMemoryJobQueue`. Every call is
//! synchronous and short (no I/O), so Python calls it directly on the event loop; every call
//! takes `now` in milliseconds since the Unix epoch.

use lanemq_core::jobs::{
    self as core, FailOutcome, FinishedResult, JobState, MemoryStore, StoreConfig,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bridge::count;
use crate::errors::to_py;
use crate::job_options::JobOptions;
use crate::job_record::JobRecord;

/// An event as Python sees it: (id, timestamp, event, job id, fields).
type EventRow<'py> = (u64, u64, &'static str, Option<String>, Bound<'py, PyDict>);

#[pyclass(module = "lanemq._core")]
pub struct MemoryJobStore {
    store: MemoryStore,
}

fn options(options: Option<JobOptions>) -> core::JobOptions {
    options.map(|o| o.inner).unwrap_or_default()
}

fn states(names: &[String]) -> PyResult<Vec<JobState>> {
    names
        .iter()
        .map(|n| JobState::parse(n).map_err(to_py))
        .collect()
}

#[pymethods]
impl MemoryJobStore {
    #[new]
    #[pyo3(signature = (max_payload_bytes=16_777_216, max_events=10_000))]
    fn new(max_payload_bytes: i64, max_events: i64) -> PyResult<Self> {
        let config = StoreConfig {
            max_payload_bytes: count("max_payload_bytes", max_payload_bytes, 1)? as usize,
            max_events: count("max_events", max_events, 0)? as usize,
        };
        Ok(Self {
            store: MemoryStore::new(config),
        })
    }

    /// Adds a job; returns it and whether it was created (false: the custom id existed).
    #[pyo3(signature = (name, data, options, now))]
    fn add(
        &mut self,
        name: &str,
        data: &str,
        options: Option<JobOptions>,
        now: u64,
    ) -> PyResult<(JobRecord, bool)> {
        let (job, created) = self
            .store
            .add(name, data, self::options(options), now)
            .map_err(to_py)?;
        Ok((job.into(), created))
    }

    /// Adds jobs atomically (all validated first), in input order.
    fn add_bulk(
        &mut self,
        jobs: Vec<(String, String, Option<JobOptions>)>,
        now: u64,
    ) -> PyResult<Vec<(JobRecord, bool)>> {
        let jobs = jobs
            .into_iter()
            .map(|(name, data, o)| (name, data, options(o)))
            .collect();
        let added = self.store.add_bulk(jobs, now).map_err(to_py)?;
        Ok(added
            .into_iter()
            .map(|(job, created)| (job.into(), created))
            .collect())
    }

    fn claim(&mut self, worker_id: &str, lease: u64, max_jobs: usize, now: u64) -> Vec<JobRecord> {
        self.store
            .claim(worker_id, lease, max_jobs, now)
            .into_iter()
            .map(JobRecord::from)
            .collect()
    }

    /// When a claim could next succeed (ms), if nothing is claimable yet; `None` if only new
    /// work (or a resume) can help.
    fn next_ready_at(&mut self, now: u64) -> Option<u64> {
        self.store.next_ready_at(now)
    }

    fn complete(&mut self, id: &str, token: &str, result: &str, now: u64) -> PyResult<()> {
        self.store.complete(id, token, result, now).map_err(to_py)
    }

    /// Completes many jobs; returns `(id, error)` for those that could not be completed.
    fn complete_many(
        &mut self,
        items: Vec<(String, String, String)>,
        now: u64,
    ) -> Vec<(String, String)> {
        items
            .into_iter()
            .filter_map(|(id, token, result)| {
                self.store
                    .complete(&id, &token, &result, now)
                    .err()
                    .map(|e| (id, e.to_string()))
            })
            .collect()
    }

    /// Records a failure. Returns `(retried, delay_until)`.
    #[pyo3(signature = (id, token, error, stacktrace, retry, delay, now))]
    #[allow(clippy::too_many_arguments)]
    fn fail(
        &mut self,
        id: &str,
        token: &str,
        error: &str,
        stacktrace: Option<&str>,
        retry: bool,
        delay: Option<u64>,
        now: u64,
    ) -> PyResult<(bool, Option<u64>)> {
        let outcome = self
            .store
            .fail(id, token, error, stacktrace, retry, delay, now)
            .map_err(to_py)?;
        Ok(match outcome {
            FailOutcome::Retry { delay_until } => (true, delay_until),
            FailOutcome::Failed => (false, None),
        })
    }

    /// Fails many jobs: items are `(id, token, error, stacktrace, retry)`. Returns per item
    /// `(id, retried, error)` where error is set if the job could not be failed.
    #[allow(clippy::type_complexity)]
    fn fail_many(
        &mut self,
        items: Vec<(String, String, String, Option<String>, bool)>,
        now: u64,
    ) -> Vec<(String, bool, Option<String>)> {
        items
            .into_iter()
            .map(|(id, token, error, trace, retry)| {
                match self
                    .store
                    .fail(&id, &token, &error, trace.as_deref(), retry, None, now)
                {
                    Ok(FailOutcome::Retry { .. }) => (id, true, None),
                    Ok(FailOutcome::Failed) => (id, false, None),
                    Err(e) => (id, false, Some(e.to_string())),
                }
            })
            .collect()
    }

    fn renew(&mut self, id: &str, token: &str, lease: u64, now: u64) -> PyResult<()> {
        self.store.renew(id, token, lease, now).map_err(to_py)
    }

    /// Renews many leases; returns the ids whose lock was lost.
    fn renew_many(&mut self, items: Vec<(String, String)>, lease: u64, now: u64) -> Vec<String> {
        items
            .into_iter()
            .filter(|(id, token)| self.store.renew(id, token, lease, now).is_err())
            .map(|(id, _)| id)
            .collect()
    }

    fn move_to_delayed(
        &mut self,
        id: &str,
        token: &str,
        delay_until: u64,
        now: u64,
    ) -> PyResult<()> {
        self.store
            .move_to_delayed(id, token, delay_until, now)
            .map_err(to_py)
    }

    fn release(&mut self, id: &str, token: &str, now: u64) -> PyResult<()> {
        self.store.release(id, token, now).map_err(to_py)
    }

    /// Returns (recovered ids, failed ids).
    fn recover_stalled(&mut self, now: u64) -> (Vec<String>, Vec<String>) {
        self.store.recover_stalled(now)
    }

    fn get_job(&self, id: &str) -> Option<JobRecord> {
        self.store.get_job(id).map(JobRecord::from)
    }

    fn get_state(&self, id: &str) -> Option<&'static str> {
        self.store.get_state(id).map(JobState::as_str)
    }

    fn get_job_counts(&self, states: Vec<String>) -> PyResult<Vec<(&'static str, usize)>> {
        let states = self::states(&states)?;
        Ok(self
            .store
            .get_job_counts(&states)
            .into_iter()
            .map(|(s, n)| (s.as_str(), n))
            .collect())
    }

    fn count_pending(&self) -> usize {
        self.store.count_pending()
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> Vec<(u32, usize)> {
        self.store.get_counts_per_priority(&priorities)
    }

    fn list_jobs(
        &self,
        states: Vec<String>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> PyResult<Vec<JobRecord>> {
        let states = self::states(&states)?;
        Ok(self
            .store
            .list_jobs(&states, start, end, ascending)
            .into_iter()
            .map(JobRecord::from)
            .collect())
    }

    /// `(kind, value)`: ("missing", None), ("pending", state), ("completed", json or None),
    /// ("failed", reason).
    fn finished_result(&self, id: &str) -> (&'static str, Option<String>) {
        match self.store.finished_result(id) {
            FinishedResult::Missing => ("missing", None),
            FinishedResult::NotFinished(state) => ("pending", Some(state.as_str().to_owned())),
            FinishedResult::Completed(value) => ("completed", value),
            FinishedResult::Failed(reason) => ("failed", Some(reason)),
        }
    }

    fn promote(&mut self, id: &str, now: u64) -> PyResult<()> {
        self.store.promote(id, now).map_err(to_py)
    }

    fn reschedule(&mut self, id: &str, delay_until: u64, now: u64) -> PyResult<()> {
        self.store.reschedule(id, delay_until, now).map_err(to_py)
    }

    fn retry_job(&mut self, id: &str, now: u64) -> PyResult<()> {
        self.store.retry_job(id, now).map_err(to_py)
    }

    fn update_priority(&mut self, id: &str, priority: i64, lifo: bool) -> PyResult<()> {
        let priority = u32::try_from(priority).unwrap_or(u32::MAX);
        self.store
            .update_priority(id, priority, lifo)
            .map_err(to_py)
    }

    fn update_data(&mut self, id: &str, data: &str) -> PyResult<()> {
        self.store.update_data(id, data).map_err(to_py)
    }

    fn update_progress(&mut self, id: &str, progress: &str, now: u64) -> PyResult<()> {
        self.store.update_progress(id, progress, now).map_err(to_py)
    }

    fn add_log(&mut self, id: &str, line: &str, keep: usize) -> PyResult<usize> {
        self.store.add_log(id, line, keep).map_err(to_py)
    }

    fn get_logs(
        &self,
        id: &str,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> PyResult<(Vec<String>, usize)> {
        self.store
            .get_logs(id, start, end, ascending)
            .map_err(to_py)
    }

    fn clear_logs(&mut self, id: &str, keep: usize) -> PyResult<()> {
        self.store.clear_logs(id, keep).map_err(to_py)
    }

    #[pyo3(signature = (id, lines, reason=None))]
    fn save_stacktrace(
        &mut self,
        id: &str,
        lines: Vec<String>,
        reason: Option<&str>,
    ) -> PyResult<()> {
        self.store.save_stacktrace(id, lines, reason).map_err(to_py)
    }

    fn remove(&mut self, id: &str, now: u64) -> PyResult<JobRecord> {
        self.store
            .remove(id, now)
            .map(JobRecord::from)
            .map_err(to_py)
    }

    fn pause(&mut self, now: u64) {
        self.store.pause(now);
    }

    fn resume(&mut self, now: u64) {
        self.store.resume(now);
    }

    fn is_paused(&self) -> bool {
        self.store.is_paused()
    }

    fn drain(&mut self, delayed: bool, now: u64) -> usize {
        self.store.drain(delayed, now)
    }

    fn clean(&mut self, grace: u64, limit: usize, state: &str, now: u64) -> PyResult<Vec<String>> {
        let state = JobState::parse(state).map_err(to_py)?;
        Ok(self.store.clean(grace, limit, state, now))
    }

    fn obliterate(&mut self, force: bool, now: u64) -> PyResult<()> {
        self.store.obliterate(force, now).map_err(to_py)
    }

    fn set_rate_limit(&mut self, max: i64, duration: u64) -> PyResult<()> {
        self.store
            .set_rate_limit(count("max", max, 1)?, duration)
            .map_err(to_py)
    }

    fn get_rate_limit(&self) -> Option<(u32, u64)> {
        self.store.get_rate_limit()
    }

    fn clear_rate_limit(&mut self) {
        self.store.clear_rate_limit();
    }

    #[pyo3(signature = (max=None))]
    fn set_max_active(&mut self, max: Option<i64>) -> PyResult<()> {
        let max = max.map(|m| count("max_active", m, 1)).transpose()?;
        self.store.set_max_active(max).map_err(to_py)
    }

    fn get_max_active(&self) -> Option<u32> {
        self.store.get_max_active()
    }

    fn is_maxed(&self) -> bool {
        self.store.is_maxed()
    }

    /// Events `(id, timestamp, event, job_id, fields)` with `start <= id <= end`.
    fn read_events<'py>(
        &self,
        py: Python<'py>,
        start: u64,
        end: u64,
        limit: usize,
    ) -> PyResult<Vec<EventRow<'py>>> {
        self.store
            .read_events(start, end, limit)
            .into_iter()
            .map(|e| {
                let fields = PyDict::new(py);
                for (key, value) in e.fields {
                    fields.set_item(key, value)?;
                }
                Ok((e.id, e.timestamp, e.event, e.job_id, fields))
            })
            .collect()
    }

    fn trim_events(&mut self, max_len: usize) -> usize {
        self.store.trim_events(max_len)
    }

    fn last_event_id(&self) -> u64 {
        self.store.last_event_id()
    }
}
