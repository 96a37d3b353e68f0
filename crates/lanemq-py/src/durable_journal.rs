//! `DurableJournal`: the core's fsynced key/value journal for Python. Writes run on tokio's
//! blocking pool and are awaited from asyncio (through `ready::resolve`, as backend calls are), so an fsync never stalls the event loop, and
//! concurrent writes share one fsync (the journal's group commit).

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::BoxFuture;
use lanemq_core::journal::{Journal, JournalOp};
use lanemq_core::CoreError;
use pyo3::prelude::*;

use crate::errors::to_py;
use crate::ready;

#[pyclass(frozen, module = "lanemq._core")]
pub struct DurableJournal {
    /// `None` once closed. Writes in flight hold their own clone, so the file lock goes when
    /// the last of them finishes.
    journal: std::sync::Mutex<Option<Arc<Journal>>>,
    entries: std::sync::Mutex<Option<Vec<(String, String)>>>,
}

/// Awaits `work` from asyncio, run on the blocking pool.
fn blocking<'py>(
    py: Python<'py>,
    work: impl FnOnce() -> Result<(), CoreError> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>> {
    let future: BoxFuture<()> = Box::pin(async move {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| CoreError::Storage(format!("journal task failed: {e}")))?
    });
    ready::resolve(py, future, Ok, false)
}

impl DurableJournal {
    fn journal(&self) -> PyResult<Arc<Journal>> {
        let guard = self.journal.lock().unwrap_or_else(|e| e.into_inner());
        guard
            .clone()
            .ok_or_else(|| to_py(CoreError::Storage("the journal is closed".into())))
    }
}

#[pymethods]
impl DurableJournal {
    /// Opens (creating it if needed) the journal file at `path`, locked for this process.
    /// `namespace` must match the one the file was created with.
    #[new]
    fn new(py: Python<'_>, path: PathBuf, namespace: &str) -> PyResult<Self> {
        let (journal, entries) = py
            .detach(|| Journal::open(&path, namespace))
            .map_err(to_py)?;
        Ok(Self {
            journal: std::sync::Mutex::new(Some(Arc::new(journal))),
            entries: std::sync::Mutex::new(Some(entries)),
        })
    }

    /// The live entries found when the journal was opened, in the order they were first put.
    /// Returned once; later calls return an empty list.
    fn take_entries(&self) -> Vec<(String, String)> {
        self.entries
            .lock()
            .map(|mut e| e.take().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Stores `value` under `key`; the returned awaitable completes once it is on disk.
    fn put<'py>(&self, py: Python<'py>, key: String, value: String) -> PyResult<Bound<'py, PyAny>> {
        let journal = self.journal()?;
        blocking(py, move || journal.put(&key, &value))
    }

    /// Removes `key` (a missing key is fine); completes once the removal is on disk.
    fn delete<'py>(&self, py: Python<'py>, key: String) -> PyResult<Bound<'py, PyAny>> {
        let journal = self.journal()?;
        blocking(py, move || journal.delete(&key))
    }

    /// Applies puts (`(key, value)`) and deletes (`(key, None)`) atomically: after a crash
    /// either all of them are visible or none.
    fn apply<'py>(
        &self,
        py: Python<'py>,
        ops: Vec<(String, Option<String>)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ops = ops
            .into_iter()
            .map(|(key, value)| match value {
                Some(value) => JournalOp::Put { key, value },
                None => JournalOp::Delete { key },
            })
            .collect();
        let journal = self.journal()?;
        blocking(py, move || journal.apply(ops))
    }

    /// Releases the file and its lock (at once, unless writes are still in flight).
    fn close(&self) {
        self.journal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Live keys.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.journal()?.len())
    }

    #[getter]
    fn path(&self) -> PyResult<PathBuf> {
        Ok(self.journal()?.path().to_path_buf())
    }
}
