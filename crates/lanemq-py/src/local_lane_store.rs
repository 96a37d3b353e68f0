//! `LocalLaneStore`: the local (SQLite) store of lanes shared by processes, for Python. Its
//! methods are the `LaneStore` protocol's (python/lanemq/lanes/_store.py); each runs its
//! transaction on tokio's blocking pool and is awaited from asyncio (through `ready::resolve`,
//! as the journal's writes are), so a busy file never stalls the event loop.

use std::path::PathBuf;
use std::sync::Arc;

use lanemq_core::jobs::BoxFuture;
use lanemq_core::lanes::shared::{self, LaneSpec, NewCommand};
use lanemq_core::{CoreError, CoreResult};
use pyo3::prelude::*;

use crate::ready;

/// The contract's `LaneSpec` tuple, as Python gives it.
type SpecTuple = (
    String,
    i64,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Vec<(f64, i64)>,
);

#[pyclass(frozen, module = "lanemq._core")]
pub struct LocalLaneStore {
    store: Arc<shared::LocalLaneStore>,
}

/// Awaits `work` from asyncio, run on the blocking pool.
fn blocking<'py, T>(
    py: Python<'py>,
    work: impl FnOnce() -> CoreResult<T> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>>
where
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let future: BoxFuture<T> = Box::pin(async move {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|e| CoreError::Storage(format!("lanes store task failed: {e}")))?
    });
    ready::resolve(py, future, Ok, false)
}

fn spec((lane_id, priority, min, max, permits, per_ms, deadline, steps): SpecTuple) -> LaneSpec {
    LaneSpec {
        lane_id,
        priority,
        min_concurrency: min,
        max_concurrency: max,
        rate_permits: permits,
        rate_per_ms: per_ms,
        boost_deadline_ms: deadline,
        boost_steps: steps,
    }
}

#[pymethods]
impl LocalLaneStore {
    /// Opens (creating them if needed) `<directory>/<name>.lanes.db` and its directory.
    #[staticmethod]
    fn open(py: Python<'_>, directory: PathBuf, name: String) -> PyResult<Bound<'_, PyAny>> {
        blocking(py, move || {
            let store = shared::LocalLaneStore::open(&directory, &name)?;
            Ok(LocalLaneStore {
                store: Arc::new(store),
            })
        })
    }

    #[pyo3(signature = (config, lanes, global_max))]
    fn setup<'py>(
        &self,
        py: Python<'py>,
        config: String,
        lanes: Vec<SpecTuple>,
        global_max: Option<i64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        let lanes: Vec<LaneSpec> = lanes.into_iter().map(spec).collect();
        blocking(py, move || store.setup(&config, &lanes, global_max))
    }

    fn join<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        names: Vec<String>,
        lease_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.join(&pid, &names, lease_ms))
    }

    fn renew<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        names: Vec<String>,
        lease_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.renew(&pid, &names, lease_ms))
    }

    fn leave<'py>(&self, py: Python<'py>, pid: String) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.leave(&pid))
    }

    #[pyo3(signature = (submitter, lane, name, owner, payload))]
    fn enqueue<'py>(
        &self,
        py: Python<'py>,
        submitter: String,
        lane: i64,
        name: Option<String>,
        owner: Option<String>,
        payload: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || {
            store.enqueue(
                &submitter,
                lane,
                name.as_deref(),
                owner.as_deref(),
                payload.as_deref(),
            )
        })
    }

    /// `enqueue` of each (lane, name, owner, payload), in order, in one transaction.
    fn enqueue_many<'py>(
        &self,
        py: Python<'py>,
        submitter: String,
        commands: Vec<NewCommand>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.enqueue_many(&submitter, &commands))
    }

    fn claim<'py>(&self, py: Python<'py>, pid: String, max_n: i64) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.claim(&pid, max_n))
    }

    fn complete<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        command_id: i64,
        result: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.complete(&pid, command_id, &result))
    }

    /// `complete` of each (command_id, result), in one transaction.
    fn complete_many<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        results: Vec<(i64, String)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.complete_many(&pid, &results))
    }

    #[pyo3(signature = (pid, command_id, error, retry_in_ms, command_type, letter_limit))]
    #[allow(clippy::too_many_arguments)]
    fn fail<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        command_id: i64,
        error: String,
        retry_in_ms: Option<i64>,
        command_type: String,
        letter_limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || {
            store.fail(
                &pid,
                command_id,
                &error,
                retry_in_ms,
                &command_type,
                letter_limit,
            )
        })
    }

    fn release<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        command_id: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.release(&pid, command_id))
    }

    fn cancel<'py>(&self, py: Python<'py>, command_id: i64) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.cancel(command_id))
    }

    fn outcomes<'py>(&self, py: Python<'py>, pid: String) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.outcomes(&pid))
    }

    /// Waits on the runtime (not a blocking thread): between its checks of the wake counter
    /// it sleeps on the file's doorbell. The wake is recorded as seen only when it reaches the
    /// awaiting caller (the hub converts no outcome for a cancelled future), so a cancelled
    /// wait leaves it to the next.
    fn wait<'py>(
        &self,
        py: Python<'py>,
        pid: String,
        timeout_ms: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        let future: BoxFuture<Option<i64>> =
            Box::pin(Arc::clone(&store).wait(pid.clone(), timeout_ms));
        ready::resolve(
            py,
            future,
            move |woken| {
                if let Some(count) = woken {
                    store.saw(&pid, count);
                }
                Ok(())
            },
            false,
        )
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.stats())
    }

    fn dead_letters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.dead_letters())
    }

    fn clear_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let store = Arc::clone(&self.store);
        blocking(py, move || store.clear_all())
    }

    /// Closes the file (operations after it fail with a StorageError).
    fn close(&self) {
        self.store.close();
    }

    /// The store's file.
    #[getter]
    fn path(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }
}
