//! A command that failed for good: kept, newest last, in the manager's bounded dead-letter queue.

use lanemq_core::lanes as core;
use pyo3::prelude::*;

/// A command that failed for good (its retries spent, or `UnrecoverableError`), as
/// `QueueManager.dead_letters()` lists it: which command, in which lane, why and when.
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
    /// The command's id, as its handle's `id`.
    #[getter]
    fn command_id(&self) -> u64 {
        self.inner.command_id
    }
    /// The command's type: the callable's name, or the registered name.
    #[getter]
    fn command_type(&self) -> &str {
        &self.inner.command_type
    }
    /// The lane the command ran in.
    #[getter]
    fn lane_id(&self) -> &str {
        &self.inner.lane_id
    }
    /// The final error, as `"ExceptionType: message"`.
    #[getter]
    fn error(&self) -> &str {
        &self.inner.error
    }
    /// How many times the command ran.
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
