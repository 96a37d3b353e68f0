//! `JobRecord`: a snapshot of one job as a backend returned it. The Python `Job` wraps it.

use std::sync::Arc;

use lanemq_core::jobs as core;
use pyo3::prelude::*;

use crate::job_options::JobOptions;

#[pyclass(frozen, module = "lanemq._core")]
pub struct JobRecord {
    id: Arc<str>,
    name: Arc<str>,
    /// The payload as JSON text.
    data: Arc<str>,
    options: core::JobOptions,
    #[pyo3(get)]
    state: &'static str,
    #[pyo3(get)]
    priority: u32,
    #[pyo3(get)]
    created_at: u64,
    #[pyo3(get)]
    delay_until: u64,
    #[pyo3(get)]
    processed_on: Option<u64>,
    #[pyo3(get)]
    finished_on: Option<u64>,
    #[pyo3(get)]
    attempts_made: u32,
    #[pyo3(get)]
    stalled_count: u32,
    /// JSON text.
    progress: Arc<str>,
    /// JSON text, once completed.
    return_value: Option<Arc<str>>,
    #[pyo3(get)]
    failed_reason: Option<String>,
    #[pyo3(get)]
    stacktrace: Vec<String>,
    #[pyo3(get)]
    lock_token: Option<String>,
    lock_worker: Option<Arc<str>>,
    #[pyo3(get)]
    lock_expires_at: Option<u64>,
}

impl From<core::Job> for JobRecord {
    fn from(job: core::Job) -> Self {
        let (lock_token, lock_worker, lock_expires_at) = match job.lock {
            Some(lock) => (
                Some(lock.token),
                Some(lock.worker_id),
                Some(lock.expires_at),
            ),
            None => (None, None, None),
        };
        Self {
            id: job.id,
            name: job.name,
            data: job.data,
            options: job.options,
            state: job.state.as_str(),
            priority: job.priority,
            created_at: job.created_at,
            delay_until: job.delay_until,
            processed_on: job.processed_on,
            finished_on: job.finished_on,
            attempts_made: job.attempts_made,
            stalled_count: job.stalled_count,
            progress: job.progress,
            return_value: job.return_value,
            failed_reason: job.failed_reason,
            stacktrace: job.stacktrace,
            lock_token,
            lock_worker,
            lock_expires_at,
        }
    }
}

/// What the worker's book reads of a claimed job, in Rust (see `worker_book::record_of`).
impl JobRecord {
    pub(crate) fn id_str(&self) -> &str {
        &self.id
    }

    pub(crate) fn lock_token_str(&self) -> Option<&str> {
        self.lock_token.as_deref()
    }

    pub(crate) fn timeout_secs(&self) -> Option<f64> {
        self.options.timeout.map(|ms| ms as f64 / 1e3)
    }
}

#[pymethods]
impl JobRecord {
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The payload as JSON text.
    #[getter]
    fn data(&self) -> &str {
        &self.data
    }

    /// JSON text.
    #[getter]
    fn progress(&self) -> &str {
        &self.progress
    }

    /// JSON text, once completed.
    #[getter]
    fn return_value(&self) -> Option<&str> {
        self.return_value.as_deref()
    }

    #[getter]
    fn lock_worker(&self) -> Option<&str> {
        self.lock_worker.as_deref()
    }

    #[getter]
    fn options(&self) -> JobOptions {
        JobOptions {
            inner: self.options.clone(),
        }
    }

    /// The id of the dedup key the job was added under, if any.
    #[getter]
    fn dedup_id(&self) -> Option<&str> {
        self.options.dedup.as_ref().map(|d| d.id.as_str())
    }

    /// The key of the job's parent in a flow, `<queue>:<id>`, if it has one.
    #[getter]
    fn parent_key(&self) -> Option<String> {
        self.options.parent.as_ref().map(|p| p.key())
    }

    /// The id of the job's parent in a flow, if it has one.
    #[getter]
    fn parent_id(&self) -> Option<&str> {
        self.options.parent.as_ref().map(|p| p.id.as_str())
    }

    /// The queue of the job's parent in a flow, if it has one.
    #[getter]
    fn parent_queue(&self) -> Option<&str> {
        self.options.parent.as_ref().map(|p| p.queue.as_str())
    }

    /// The job's timeout in seconds, if it has one (read on the worker's hot path).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout_secs()
    }

    fn __repr__(&self) -> String {
        format!(
            "JobRecord(id={:?}, name={:?}, state={})",
            self.id, self.name, self.state
        )
    }
}
