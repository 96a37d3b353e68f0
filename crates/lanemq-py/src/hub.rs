//! `Hub`: how results of Rust futures reach asyncio without tokio touching Python.
//!
//! A pending backend future runs on the tokio runtime. When it finishes, its task only pushes
//! the (still Rust) outcome onto the hub's queue and writes one byte to a socket that the event
//! loop watches (`loop.add_reader`); the loop thread then drains the queue, turns outcomes into
//! Python objects and resolves the asyncio futures. No tokio thread ever takes the GIL or drops
//! a Python object, so a task that finishes while the interpreter shuts down cannot crash it
//! (the failure mode of resolving futures from runtime threads), and completions that arrive
//! together are delivered in one loop callback.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::intern;
use pyo3::prelude::*;

/// Turns a finished future's outcome into the value (or exception) for its asyncio future.
pub type Deliver = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

struct Shared {
    done: Mutex<Vec<(u64, Deliver)>>,
    bell: UnixStream,
}

impl Shared {
    fn push(&self, token: u64, deliver: Deliver) {
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((token, deliver));
        // A full socket buffer means a wake-up is already pending: nothing is lost.
        let _ = (&self.bell).write(&[1]);
    }
}

/// One per event loop (see `lanemq._hub`).
#[pyclass(module = "lanemq._core")]
pub struct Hub {
    shared: Arc<Shared>,
    listener: UnixStream,
    waiting: Mutex<HashMap<u64, Py<PyAny>>>,
    next: AtomicU64,
}

#[pymethods]
impl Hub {
    #[new]
    fn new() -> PyResult<Self> {
        let (bell, listener) = UnixStream::pair()?;
        bell.set_nonblocking(true)?;
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared {
            done: Mutex::new(Vec::new()),
            bell,
        });
        Ok(Self {
            shared,
            listener,
            waiting: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        })
    }

    /// The file descriptor the event loop watches for readability.
    fn fileno(&self) -> i32 {
        self.listener.as_raw_fd()
    }

    /// Resolves the asyncio futures of every finished Rust future (called by the loop).
    fn drain(&self, py: Python<'_>) -> PyResult<()> {
        let mut sink = [0u8; 256];
        loop {
            match (&self.listener).read(&mut sink) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let done = std::mem::take(&mut *self.shared.done.lock().unwrap_or_else(|e| e.into_inner()));
        for (token, deliver) in done {
            let future = self
                .waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&token);
            let Some(future) = future else { continue };
            let future = future.bind(py);
            if !is_done(future)? {
                resolve_with(future, deliver(py))?;
            }
        }
        Ok(())
    }

    /// Futures handed out and not yet resolved.
    fn __len__(&self) -> usize {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Hub {
    /// Registers `future` (an asyncio future of this hub's loop) and returns the function a
    /// runtime task calls, from any thread, with the outcome.
    pub fn register(&self, future: Py<PyAny>) -> impl FnOnce(Deliver) + Send + 'static {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, future);
        let shared = Arc::clone(&self.shared);
        move |deliver| shared.push(token, deliver)
    }
}

/// Whether an asyncio future is done already. Only its caller cancelling it does that before
/// its outcome comes, and the outcome is then dropped.
pub fn is_done(future: &Bound<'_, PyAny>) -> PyResult<bool> {
    // Interned: a method name from a &str is a new Python string on every call.
    future
        .call_method0(intern!(future.py(), "done"))?
        .is_truthy()
}

/// Resolves an asyncio future with `outcome`: its value, or its exception.
pub fn resolve_with(future: &Bound<'_, PyAny>, outcome: PyResult<Py<PyAny>>) -> PyResult<()> {
    let py = future.py();
    match outcome {
        Ok(value) => future.call_method1(intern!(py, "set_result"), (value,))?,
        Err(error) => future.call_method1(intern!(py, "set_exception"), (error.value(py),))?,
    };
    Ok(())
}
