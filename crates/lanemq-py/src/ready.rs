//! `Ready`: an awaitable that is already resolved. A backend call whose future finished on its
//! first poll (every in-process operation) returns one, so awaiting it costs no event-loop
//! round trip and no runtime hop.

use std::task::{Context, Poll, Waker};

use lanemq_core::jobs::BoxFuture;
use lanemq_core::CoreResult;
use pyo3::exceptions::PyStopIteration;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::BoundObject;

use crate::errors::to_py;
use crate::hub::{Hub, Park};

#[pyclass(module = "lanemq._core")]
pub struct Ready {
    outcome: Option<PyResult<Py<PyAny>>>,
}

#[pymethods]
impl Ready {
    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.outcome.take() {
            Some(Ok(value)) => Err(PyStopIteration::new_err((value,))),
            Some(Err(error)) => Err(error),
            None => Err(PyStopIteration::new_err((py.None(),))),
        }
    }
}

/// Turns a backend future into a Python awaitable: with `poll_first`, a `Ready` if the future
/// completes on its first poll (made here, on the caller's thread), otherwise an asyncio
/// future that the loop's hub resolves, polling the future on the loop's thread when it is
/// woken (`Hub::park`); without, an asyncio future driven by the tokio runtime. `convert`
/// maps the value to something Python can hold.
///
/// A backend whose calls wait on a server is not polled first: that poll would hand the
/// request to its connection task, waking the runtime thread, and the spawn below would wake
/// it again: more context switches per awaited Redis add (counted in benches/history/5-10.md).
pub fn resolve<'py, T, U, F>(
    py: Python<'py>,
    mut future: BoxFuture<T>,
    convert: F,
    poll_first: bool,
) -> PyResult<Bound<'py, PyAny>>
where
    T: Send + 'static,
    U: for<'a> IntoPyObject<'a> + Send + 'static,
    F: FnOnce(T) -> PyResult<U> + Send + 'static,
{
    let polled = if !poll_first {
        Poll::Pending
    } else {
        // Timers and notifications created during the first poll need the runtime's context.
        let _runtime = crate::runtime::runtime().enter();
        future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    };
    match polled {
        Poll::Ready(result) => already(py, to_python(py, result, convert)),
        // An in-process future is woken by the thread that completes it (the local queue's
        // writer): it rings the loop's hub directly, no runtime task relaying the wake-up.
        Poll::Pending if poll_first => {
            let (asyncio_future, hub) = hub_for(py)?;
            let parked = Box::new(Park {
                future,
                convert: Some(convert),
            });
            hub.borrow().park(py, &asyncio_future, parked)?;
            Ok(asyncio_future)
        }
        Poll::Pending => {
            let (asyncio_future, hub) = hub_for(py)?;
            spawn_into(&hub, &asyncio_future, future, convert);
            Ok(asyncio_future)
        }
    }
}

/// A backend call's outcome as its awaitable gives it: the value `convert` makes, or the error
/// as a Python exception.
pub fn to_python<T, U>(
    py: Python<'_>,
    outcome: CoreResult<T>,
    convert: impl FnOnce(T) -> PyResult<U>,
) -> PyResult<Py<PyAny>>
where
    U: for<'a> IntoPyObject<'a>,
{
    let value = convert(outcome.map_err(to_py)?)?;
    Ok(value
        .into_pyobject(py)
        .map_err(Into::into)?
        .into_any()
        .unbind())
}

/// An awaitable that gives `outcome` at once.
pub fn already(py: Python<'_>, outcome: PyResult<Py<PyAny>>) -> PyResult<Bound<'_, PyAny>> {
    Ok(Bound::new(
        py,
        Ready {
            outcome: Some(outcome),
        },
    )?
    .into_any())
}

/// A new asyncio future of the running loop, and the loop's hub (`lanemq._hub.hub_for`).
pub fn hub_for(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, Hub>)> {
    static HUB_FOR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    HUB_FOR
        .import(py, "lanemq._hub", "hub_for")?
        .call0()?
        .extract::<(Bound<'_, PyAny>, Bound<'_, Hub>)>()
}

/// Runs `future` on the tokio runtime and resolves `asyncio_future` (of `hub`'s loop) with its
/// converted outcome. The loop's hub resolves it; the runtime task never touches Python.
pub fn spawn_into<T, U, F>(
    hub: &Bound<'_, Hub>,
    asyncio_future: &Bound<'_, PyAny>,
    future: BoxFuture<T>,
    convert: F,
) where
    T: Send + 'static,
    U: for<'a> IntoPyObject<'a> + Send + 'static,
    F: FnOnce(T) -> PyResult<U> + Send + 'static,
{
    let finish = hub.borrow().register(asyncio_future.clone().unbind());
    crate::runtime::runtime().spawn(async move {
        let outcome = future.await;
        finish(Box::new(move |py: Python<'_>| {
            to_python(py, outcome, convert)
        }));
    });
}
