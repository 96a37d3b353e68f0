//! A command that failed for good: kept, newest last, in the manager's bounded dead-letter queue.

use lanemq_core::lanes as core;
use pyo3::prelude::*;

#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct DeadLetter {
    pub inner: core::DeadLetter,
}

#[pymethods]
impl DeadLetter {
    #[new]
    fn new(
        command_id: u64,
        command_type: String,
        lane_id: String,
        error: String,
        attempts: u32,
        failed_at: u64,
    ) -> Self {
        Self {
            inner: core::DeadLetter {
                command_id,
                command_type,
                lane_id,
                error,
                attempts,
                failed_at_ms: failed_at,
            },
        }
    }
    #[getter]
    fn command_id(&self) -> u64 {
        self.inner.command_id
    }
    #[getter]
    fn command_type(&self) -> &str {
        &self.inner.command_type
    }
    #[getter]
    fn lane_id(&self) -> &str {
        &self.inner.lane_id
    }
    #[getter]
    fn error(&self) -> &str {
        &self.inner.error
    }
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    /// Milliseconds since the Unix epoch (UTC) of the final failure.
    #[getter]
    fn failed_at(&self) -> u64 {
        self.inner.failed_at_ms
    }
    fn __repr__(&self) -> String {
        format!(
            "DeadLetter(command_id={}, command_type={:?}, lane_id={:?}, error={:?}, attempts={})",
            self.inner.command_id,
            self.inner.command_type,
            self.inner.lane_id,
            self.inner.error,
            self.inner.attempts
        )
    }
}
