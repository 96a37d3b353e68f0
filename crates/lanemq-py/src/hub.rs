//! `Hub`: how results of Rust futures reach asyncio without tokio touching Python.
//!
//! A pending backend future runs on the tokio runtime. When it finishes, its task only pushes
//! the (still Rust) outcome onto the hub's queue and writes one byte to a socket that the event
//! loop watches (`loop.add_reader`); the loop thread then drains the queue, turns outcomes into
//! Python objects and resolves the asyncio futures. No tokio thread ever takes the GIL or drops
//! a Python object, so a task that finishes while the interpreter shuts down cannot crash it
//! (the failure mode of resolving futures from runtime threads), and completions that arrive
//! together are delivered in one loop callback.
//!
//! An in-process backend's future (the local queue's: its answer comes from a writer thread)
//! is parked in the hub instead, its waker being the hub's bell: the thread that completes it
//! rings the loop directly, and the loop polls it again. A tokio task in between only relayed
//! the wake-up: a third thread hand-off per awaited call (benches/jobs.py, `add`).

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::intern;
use pyo3::prelude::*;

/// Turns a finished future's outcome into the value (or exception) for its asyncio future.
pub type Deliver = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A future parked in the hub: polled on the loop's thread whenever its waker rings.
pub trait Parked: Send {
    /// Polls it; its outcome for the asyncio future once it is done.
    fn poll_outcome(&mut self, py: Python<'_>, cx: &mut Context<'_>)
        -> Option<PyResult<Py<PyAny>>>;
    /// Lets it finish on the runtime, its outcome dropped (the loop is gone).
    fn detach(self: Box<Self>);
}

struct ParkedEntry {
    future: Py<PyAny>,
    parked: Box<dyn Parked>,
    waker: Waker,
}

/// What the loop has to do when it drains.
#[derive(Default)]
struct Inbox {
    done: Vec<(u64, Deliver)>,
    /// Parked futures whose waker rang.
    woken: Vec<u64>,
}

struct Shared {
    inbox: Mutex<Inbox>,
    bell: UnixStream,
}

impl Shared {
    fn push(&self, token: u64, deliver: Deliver) {
        self.deliver(|inbox| inbox.done.push((token, deliver)));
    }

    fn wake(&self, token: u64) {
        self.deliver(|inbox| inbox.woken.push(token));
    }

    fn deliver(&self, put: impl FnOnce(&mut Inbox)) {
        let mut inbox = self.inbox.lock().unwrap_or_else(|e| e.into_inner());
        // The loop reads the bell before it takes the inbox: a non-empty inbox has a byte
        // on the way already (one write per drain, not per completion).
        let ring = inbox.done.is_empty() && inbox.woken.is_empty();
        put(&mut inbox);
        drop(inbox);
        if ring {
            // A full socket buffer means a wake-up is already pending: nothing is lost.
            let _ = (&self.bell).write(&[1]);
        }
    }
}

/// The waker of a parked future: rings the hub from whichever thread completes it.
struct Bell {
    shared: Arc<Shared>,
    token: u64,
}

impl Wake for Bell {
    fn wake(self: Arc<Self>) {
        self.shared.wake(self.token);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.wake(self.token);
    }
}

/// One per event loop (see `lanemq._hub`).
#[pyclass(module = "lanemq._core")]
pub struct Hub {
    shared: Arc<Shared>,
    listener: UnixStream,
    waiting: Mutex<HashMap<u64, Py<PyAny>>>,
    parked: Mutex<HashMap<u64, ParkedEntry>>,
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
            inbox: Mutex::new(Inbox::default()),
            bell,
        });
        Ok(Self {
            shared,
            listener,
            waiting: Mutex::new(HashMap::new()),
            parked: Mutex::new(HashMap::new()),
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
        let inbox =
            std::mem::take(&mut *self.shared.inbox.lock().unwrap_or_else(|e| e.into_inner()));
        // One parked future's failure must not strand the others that were woken.
        let mut first_error = None;
        for token in inbox.woken {
            if let Err(error) = self.poll_parked(py, token) {
                first_error.get_or_insert(error);
            }
        }
        for (token, deliver) in inbox.done {
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
        first_error.map_or(Ok(()), Err)
    }

    /// Futures handed out and not yet resolved.
    fn __len__(&self) -> usize {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).len()
            + self.parked.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let parked = std::mem::take(&mut *self.parked.lock().unwrap_or_else(|e| e.into_inner()));
        for (_, entry) in parked {
            entry.parked.detach();
        }
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

    /// Resolves `future` (an asyncio future of this hub's loop) with `parked`'s outcome: at
    /// once if it is done on this poll, else when the loop polls it after its waker rang.
    /// Called on the loop's thread, as `drain` is, so no drain runs between the poll and the
    /// parking (a wake-up meanwhile finds it parked).
    pub fn park(
        &self,
        py: Python<'_>,
        future: &Bound<'_, PyAny>,
        mut parked: Box<dyn Parked>,
    ) -> PyResult<()> {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        let waker = Waker::from(Arc::new(Bell {
            shared: Arc::clone(&self.shared),
            token,
        }));
        let polled = {
            let _runtime = crate::runtime::runtime().enter();
            parked.poll_outcome(py, &mut Context::from_waker(&waker))
        };
        match polled {
            Some(outcome) => resolve_with(future, outcome),
            None => {
                let entry = ParkedEntry {
                    future: future.clone().unbind(),
                    parked,
                    waker,
                };
                self.parked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(token, entry);
                Ok(())
            }
        }
    }

    /// Polls the parked future `token` (its waker rang): resolves its asyncio future if it is
    /// done, else parks it again. One whose asyncio future was cancelled still runs to its end
    /// (its later steps may write), as a runtime task would.
    fn poll_parked(&self, py: Python<'_>, token: u64) -> PyResult<()> {
        let entry = self
            .parked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token);
        // A second wake-up of one already done.
        let Some(mut entry) = entry else {
            return Ok(());
        };
        let polled = {
            let _runtime = crate::runtime::runtime().enter();
            entry
                .parked
                .poll_outcome(py, &mut Context::from_waker(&entry.waker))
        };
        match polled {
            Some(outcome) => {
                let future = entry.future.bind(py);
                if is_done(future)? {
                    return Ok(());
                }
                resolve_with(future, outcome)
            }
            None => {
                self.parked
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(token, entry);
                Ok(())
            }
        }
    }
}

/// A backend future and the conversion of its outcome, as the hub parks it.
pub struct Park<T, F> {
    pub future: lanemq_core::jobs::BoxFuture<T>,
    pub convert: Option<F>,
}

impl<T, U, F> Parked for Park<T, F>
where
    T: Send + 'static,
    U: for<'a> IntoPyObject<'a> + Send + 'static,
    F: FnOnce(T) -> PyResult<U> + Send + 'static,
{
    fn poll_outcome(
        &mut self,
        py: Python<'_>,
        cx: &mut Context<'_>,
    ) -> Option<PyResult<Py<PyAny>>> {
        let Poll::Ready(outcome) = self.future.as_mut().poll(cx) else {
            return None;
        };
        let convert = self.convert.take()?;
        Some(crate::ready::to_python(py, outcome, convert))
    }

    fn detach(self: Box<Self>) {
        let Park { future, convert } = *self;
        drop(convert); // here, on the thread that holds Python
        crate::runtime::runtime().spawn(async move {
            let _ = future.await;
        });
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
