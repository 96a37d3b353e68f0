//! `WireLink`: a backend's wire (`lanemq_redis::Wire`) driven by one asyncio event loop,
//! and `Wired`, a queue's share of its server's wire, kept open and attached to the loop that
//! uses it (one wire per server: the queues of one server share it).
//!
//! A call writes its request from the caller's thread (the loop's) and gets an asyncio future;
//! the loop calls `on_readable` when replies arrive, and they resolve the futures in the order
//! the requests went out. No runtime thread takes part: the two thread hand-offs it saves are
//! a measured part of an awaited add on a small machine (benches/history/5-10.md, `round_trip.py`).
//!
//! A wire serves one loop: a queue used from another loop meanwhile makes ordinary calls. A
//! broken wire fails the calls it had sent (as a dropped connection does) and sends the rest
//! the ordinary way; the queue then opens a new wire in the background, and makes ordinary
//! calls until it is there. A wire whose oldest call has had no reply for `RESPONSE_TIMEOUT`
//! is broken too: nothing closes a connection that stopped answering (a partition, a stalled
//! proxy), so a watch the loop runs once a second while calls wait looks for one.

use std::collections::{HashMap, VecDeque};
use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::{Duration, Instant};

use lanemq_core::{CoreError, CoreResult};
use lanemq_redis::{Settle, Settled, Wire, WireCall, WireCalls, RESPONSE_TIMEOUT};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, PyOnceLock};

use crate::errors::to_py;
use crate::hub::{is_done, resolve_with};
use crate::ready;

/// How long a queue makes ordinary calls after it failed to open a wire, before it tries again.
const RETRY_OPEN: Duration = Duration::from_secs(1);

/// How much one read takes at most.
const READ_CHUNK: usize = 64 * 1024;

/// How often the loop looks for a call that has waited too long, while calls wait.
const WATCH_EVERY: f64 = 1.0;

/// Reads a call's reply (`None`: the request never reached the server whole) and resolves its
/// asyncio future with it.
type Resolve = Box<dyn FnOnce(Python<'_>, Option<&[u8]>, &Bound<'_, PyAny>) -> PyResult<()> + Send>;

fn resolver<T, U, F>(settle: Settle<T>, convert: F) -> Resolve
where
    T: Send + 'static,
    U: for<'a> IntoPyObject<'a> + Send + 'static,
    F: FnOnce(T) -> PyResult<U> + Send + 'static,
{
    Box::new(move |py, reply, future| {
        if is_done(future)? {
            return Ok(());
        }
        match settle(reply) {
            Settled::Done(outcome) => resolve_with(future, ready::to_python(py, outcome, convert)),
            Settled::Continue(rest) => {
                let (_, hub) = ready::hub_for(py)?;
                ready::spawn_into(&hub, future, rest, convert);
                Ok(())
            }
        }
    })
}

struct Waiting {
    future: Py<PyAny>,
    resolve: Resolve,
    /// Where its request ends in the bytes the link sends (counted as `written` is).
    end: u64,
    /// When it was made: a reply later than `RESPONSE_TIMEOUT` breaks the link.
    made: Instant,
}

struct LinkState {
    /// `None` once the link is closed or broken.
    wire: Option<Box<dyn Wire>>,
    /// Bytes not written yet. The loop watches for writability exactly while there are some.
    unsent: Vec<u8>,
    /// Bytes written since the link opened.
    written: u64,
    received: Vec<u8>,
    /// Where reads land first: allocated once, as zeroing it costs more than the copy.
    chunk: Box<[u8]>,
    waiting: VecDeque<Waiting>,
    /// Closed by its queue: it takes no new call and detaches when the last reply is in.
    closing: bool,
}

impl LinkState {
    /// Writes what the socket takes of `unsent`; an error breaks the link.
    fn flush(&mut self) -> Result<(), String> {
        let Some(wire) = self.wire.as_mut() else {
            return Err("closed".into());
        };
        let mut done = 0;
        while done < self.unsent.len() {
            match wire.write(&self.unsent[done..]) {
                Ok(0) => return Err("the connection took no bytes".into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        self.unsent.drain(..done);
        self.written += done as u64;
        Ok(())
    }
}

/// What a broken or closed link leaves to finish outside its lock.
struct Ended {
    wire: Option<Box<dyn Wire>>,
    /// Calls whose request went out whole: their outcome is unknown.
    sent: Vec<Waiting>,
    /// Calls whose request did not: they go on the ordinary way.
    unsent: Vec<Waiting>,
    /// Whether the loop was watching for writability.
    writing: bool,
}

#[pyclass(frozen, module = "lanemq._core")]
pub struct WireLink {
    event_loop: Py<PyAny>,
    fd: i32,
    address: String,
    state: Mutex<LinkState>,
    /// Whether the loop has a watch scheduled (`on_watch`). Only the loop's thread calls.
    watched: AtomicBool,
}

#[pymethods]
impl WireLink {
    /// Reads what arrived and resolves the calls it answers (called by the loop).
    fn on_readable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let link = slf.get();
        let mut state = link.lock(py);
        let mut broken: Option<String> = None;
        let st = &mut *state;
        loop {
            let Some(wire) = st.wire.as_mut() else {
                return Ok(()); // a late callback of a link already ended
            };
            match wire.read(&mut st.chunk) {
                Ok(0) => {
                    broken = Some("the server closed the connection".into());
                    break;
                }
                Ok(n) => {
                    st.received.extend_from_slice(&st.chunk[..n]);
                    if n < st.chunk.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    broken = Some(e.to_string());
                    break;
                }
            }
        }
        let mut answered = Vec::new();
        let mut at = 0;
        while let Some(wire) = state.wire.as_ref() {
            match wire.frame(&state.received[at..]) {
                Ok(Some(len)) => match state.waiting.pop_front() {
                    Some(call) => {
                        answered.push((call, at..at + len));
                        at += len;
                    }
                    None => {
                        broken = Some("a reply came that no call asked for".into());
                        break;
                    }
                },
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        let received = std::mem::take(&mut state.received);
        state.received = received[at..].to_vec();
        let ended = match &broken {
            Some(_) => Some(Self::end(&mut state)),
            None if state.closing && state.waiting.is_empty() => Some(Self::end(&mut state)),
            None => None,
        };
        drop(state);
        let mut first_error = None;
        for (call, range) in answered {
            let future = call.future.bind(py);
            if let Err(e) = (call.resolve)(py, Some(&received[range]), future) {
                first_error.get_or_insert(e);
            }
        }
        if let Some(ended) = ended {
            link.finish(py, ended, broken.as_deref().unwrap_or("closed"))?;
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Breaks the link if its oldest call has waited longer than `RESPONSE_TIMEOUT`, else
    /// looks again in `WATCH_EVERY` while calls wait (called by the loop).
    fn on_watch(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let link = slf.get();
        let mut state = link.lock(py);
        let oldest = state.waiting.front().map(|call| call.made);
        if state.wire.is_none() || oldest.is_none() {
            link.watched.store(false, Ordering::Relaxed);
            return Ok(());
        }
        if oldest.is_some_and(|made| made.elapsed() >= RESPONSE_TIMEOUT) {
            let ended = Self::end(&mut state);
            drop(state);
            link.watched.store(false, Ordering::Relaxed);
            let why = format!(
                "no reply within {}s: the connection no longer answers",
                RESPONSE_TIMEOUT.as_secs()
            );
            return link.finish(py, ended, &why);
        }
        drop(state);
        Self::watch(slf)
    }

    /// Writes what is left to send (called by the loop while some is).
    fn on_writable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let link = slf.get();
        let mut state = link.lock(py);
        match state.flush() {
            Ok(()) if state.unsent.is_empty() => {
                drop(state);
                link.event_loop
                    .call_method1(py, "remove_writer", (link.fd,))?;
                Ok(())
            }
            Ok(()) => Ok(()),
            Err(why) => {
                let ended = Self::end(&mut state);
                drop(state);
                link.finish(py, ended, &why)
            }
        }
    }
}

impl WireLink {
    /// Makes a link of `wire` and has `event_loop` watch it.
    fn attach<'py>(
        py: Python<'py>,
        wire: Box<dyn Wire>,
        event_loop: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (fd, address) = (wire.fileno(), wire.address().to_owned());
        let link = Bound::new(
            py,
            Self {
                event_loop: event_loop.clone().unbind(),
                fd,
                address,
                state: Mutex::new(LinkState {
                    wire: Some(wire),
                    unsent: Vec::new(),
                    written: 0,
                    received: Vec::new(),
                    chunk: vec![0; READ_CHUNK].into_boxed_slice(),
                    waiting: VecDeque::new(),
                    closing: false,
                }),
                watched: AtomicBool::new(false),
            },
        )?;
        event_loop.call_method1("add_reader", (fd, link.getattr("on_readable")?))?;
        Ok(link)
    }

    fn lock(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, LinkState> {
        self.state
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Has the loop run `on_watch` in `WATCH_EVERY`.
    fn watch(slf: &Bound<'_, Self>) -> PyResult<()> {
        let link = slf.get();
        link.watched.store(true, Ordering::Relaxed);
        let watch = slf.getattr(intern!(slf.py(), "on_watch"))?;
        link.event_loop
            .bind(slf.py())
            .call_method1(intern!(slf.py(), "call_later"), (WATCH_EVERY, watch))?;
        Ok(())
    }

    fn usable(&self, py: Python<'_>) -> bool {
        let state = self.lock(py);
        state.wire.is_some() && !state.closing
    }

    /// Sends `call`; awaits its outcome, converted by `convert`. A call refused before it was
    /// made raises when awaited, as the ordinary call would.
    pub fn call<'py, T, U, F>(
        slf: &Bound<'py, Self>,
        call: CoreResult<WireCall<T>>,
        convert: F,
    ) -> PyResult<Bound<'py, PyAny>>
    where
        T: Send + 'static,
        U: for<'a> IntoPyObject<'a> + Send + 'static,
        F: FnOnce(T) -> PyResult<U> + Send + 'static,
    {
        let py = slf.py();
        let call = match call {
            Ok(call) => call,
            Err(error) => return ready::already(py, Err(to_py(error))),
        };
        let link = slf.get();
        let future = link
            .event_loop
            .bind(py)
            .call_method0(intern!(py, "create_future"))?;
        let resolve = resolver(call.settle, convert);
        if !link.watched.load(Ordering::Relaxed) {
            Self::watch(slf)?; // (it finds this call there: the loop runs it later)
        }
        let mut state = link.lock(py);
        if state.wire.is_none() || state.closing {
            drop(state);
            resolve(py, None, &future)?;
            return Ok(future);
        }
        let writing = !state.unsent.is_empty();
        state.unsent.extend_from_slice(&call.request);
        let end = state.written + state.unsent.len() as u64;
        state.waiting.push_back(Waiting {
            future: future.clone().unbind(),
            resolve,
            end,
            made: Instant::now(),
        });
        if writing {
            return Ok(future); // behind bytes the loop's writer callback is sending
        }
        match state.flush() {
            Ok(()) if state.unsent.is_empty() => Ok(future),
            Ok(()) => {
                drop(state);
                let writable = slf.getattr("on_writable")?;
                link.event_loop
                    .call_method1(py, "add_writer", (link.fd, writable))?;
                Ok(future)
            }
            Err(why) => {
                let ended = Self::end(&mut state);
                drop(state);
                link.finish(py, ended, &why)?;
                Ok(future)
            }
        }
    }

    /// Takes the link apart (under its lock); `finish` does the rest.
    fn end(state: &mut LinkState) -> Ended {
        let written = state.written;
        let (sent, unsent) = state
            .waiting
            .drain(..)
            .partition(|call| call.end <= written);
        let writing = !state.unsent.is_empty();
        state.unsent.clear();
        Ended {
            wire: state.wire.take(),
            sent,
            unsent,
            writing,
        }
    }

    /// Stops the loop watching the socket, closes it, fails the calls that were sent and
    /// sends the others the ordinary way.
    fn finish(&self, py: Python<'_>, ended: Ended, why: &str) -> PyResult<()> {
        let event_loop = self.event_loop.bind(py);
        if ended.wire.is_some() {
            event_loop.call_method1("remove_reader", (self.fd,))?;
            if ended.writing {
                event_loop.call_method1("remove_writer", (self.fd,))?;
            }
        }
        drop(ended.wire);
        let lost = CoreError::Connection(format!("redis at {}: {why}", self.address));
        for call in ended.sent {
            let future = call.future.bind(py);
            if !is_done(future)? {
                resolve_with(future, Err(to_py(lost.clone())))?;
            }
        }
        for call in ended.unsent {
            (call.resolve)(py, None, call.future.bind(py))?;
        }
        Ok(())
    }

    /// Takes no new call; detaches once the calls it has are answered.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut state = self.lock(py);
        state.closing = true;
        if !state.waiting.is_empty() {
            return Ok(());
        }
        let ended = Self::end(&mut state);
        drop(state);
        self.finish(py, ended, "closed")
    }
}

enum Slot {
    /// Not opened yet (or closed by the server's last queue): opened by the next call.
    Idle,
    /// Open, and not yet watched by a loop.
    Spare(Box<dyn Wire>),
    Attached(Py<WireLink>),
    Opening,
    /// Opening failed: try again after this.
    Down(Instant),
}

/// A server's wire, shared by the queues of that server (`Server::id`).
struct SharedSlot {
    slot: Mutex<Slot>,
    /// Queues holding it open: the last one's close closes the wire.
    users: AtomicUsize,
}

static SLOTS: LazyLock<Mutex<HashMap<u64, Weak<SharedSlot>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A queue's share of its server's wire: opened when a call first needs it (in the
/// background; calls go the ordinary way meanwhile), attached to the first loop that calls,
/// opened again in the background when it breaks. One wire serves every queue of a server.
pub struct Wired {
    pub calls: Arc<dyn WireCalls>,
    shared: Arc<SharedSlot>,
    closed: AtomicBool,
    server_id: u64,
}

impl Wired {
    /// The share of the wire of server `server_id` for a queue whose calls are `calls`.
    pub fn shared(calls: Arc<dyn WireCalls>, server_id: u64) -> Self {
        let mut slots = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|_, slot| slot.strong_count() > 0);
        let shared = match slots.get(&server_id).and_then(Weak::upgrade) {
            Some(shared) => shared,
            None => {
                let shared = Arc::new(SharedSlot {
                    slot: Mutex::new(Slot::Idle),
                    users: AtomicUsize::new(0),
                });
                slots.insert(server_id, Arc::downgrade(&shared));
                shared
            }
        };
        shared.users.fetch_add(1, Ordering::AcqRel);
        Self {
            calls,
            shared,
            closed: AtomicBool::new(false),
            server_id,
        }
    }

    /// The server whose wire this is a share of.
    pub fn server_id(&self) -> u64 {
        self.server_id
    }

    /// The link to make a call on from the running loop, if the wire is there for it.
    pub fn link<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, WireLink>>> {
        static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let Ok(event_loop) = GET_RUNNING_LOOP
            .import(py, "asyncio", "get_running_loop")?
            .call0()
        else {
            return Ok(None); // no loop: the ordinary call raises as it always did
        };
        let mut slot = self
            .shared
            .slot
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Slot::Attached(link) => {
                let link = link.bind(py);
                let same_loop = link.get().event_loop.bind(py).is(&event_loop);
                if same_loop && link.get().usable(py) {
                    return Ok(Some(link.clone()));
                }
                let old_loop = link.get().event_loop.bind(py);
                if same_loop || old_loop.call_method0("is_closed")?.is_truthy()? {
                    link.get().close(py)?;
                    *slot = Slot::Opening;
                    self.reopen();
                }
                Ok(None)
            }
            Slot::Spare(_) => {
                let Slot::Spare(mut wire) = std::mem::replace(&mut *slot, Slot::Opening) else {
                    unreachable!("matched above");
                };
                // Nobody watched it while it waited: the server may have closed it since.
                let mut probe = [0u8; 1];
                let idle =
                    matches!(wire.read(&mut probe), Err(e) if e.kind() == ErrorKind::WouldBlock);
                if !idle {
                    self.reopen();
                    return Ok(None);
                }
                match WireLink::attach(py, wire, &event_loop) {
                    Ok(link) => {
                        *slot = Slot::Attached(link.clone().unbind());
                        Ok(Some(link))
                    }
                    Err(_) => {
                        *slot = Slot::Down(Instant::now() + RETRY_OPEN);
                        Ok(None)
                    }
                }
            }
            Slot::Idle => {
                *slot = Slot::Opening;
                self.reopen();
                Ok(None)
            }
            Slot::Down(at) if Instant::now() >= *at => {
                *slot = Slot::Opening;
                self.reopen();
                Ok(None)
            }
            Slot::Down(_) | Slot::Opening => Ok(None),
        }
    }

    /// Opens a new wire on the runtime; it waits as `Spare` for the next call.
    fn reopen(&self) {
        crate::runtime::runtime().spawn(self.opening());
    }

    /// Opens the wire (the slot is `Opening`); it waits as `Spare` for the next call.
    fn opening(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (calls, shared) = (Arc::clone(&self.calls), Arc::clone(&self.shared));
        async move {
            let opened = calls.open().await;
            let mut slot = shared.slot.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(*slot, Slot::Opening) {
                *slot = match opened {
                    Ok(wire) => Slot::Spare(wire),
                    Err(_) => Slot::Down(Instant::now() + RETRY_OPEN),
                };
            }
        }
    }

    /// Opens the wire now unless it is open or opening (`connect` awaits it, so the calls
    /// after it take the wire).
    pub fn prepare(&self, py: Python<'_>) -> Option<impl std::future::Future<Output = ()> + Send> {
        let mut slot = self
            .shared
            .slot
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        match &*slot {
            Slot::Idle | Slot::Down(_) => {
                *slot = Slot::Opening;
                Some(self.opening())
            }
            Slot::Spare(_) | Slot::Attached(_) | Slot::Opening => None,
        }
    }

    /// The queue closes: once every queue of the server has, the wire takes no new call and
    /// closes once the last is answered.
    pub fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.closed.swap(true, Ordering::AcqRel)
            || self.shared.users.fetch_sub(1, Ordering::AcqRel) != 1
        {
            return Ok(());
        }
        let mut slot = self
            .shared
            .slot
            .lock_py_attached(py)
            .unwrap_or_else(|e| e.into_inner());
        if let Slot::Attached(link) = std::mem::replace(&mut *slot, Slot::Idle) {
            link.bind(py).get().close(py)?;
        }
        Ok(())
    }
}

impl Drop for Wired {
    fn drop(&mut self) {
        // Dropped without close: the wire stays for the server's other queues (or until the
        // last share goes, with its link's loop).
        if !self.closed.swap(true, Ordering::AcqRel) {
            self.shared.users.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
