//! Calls on a connection that the caller's event loop drives.
//!
//! A backend's ordinary calls run on the tokio runtime, which costs an awaited call two thread
//! hand-offs (to the runtime and back to the event loop). On a machine of two cores a bare
//! round trip that way took 93-144 us, against 53-66 us on a socket the loop watches itself
//! (`benches/round_trip.py` has the latter). A backend that can also speak
//! over a plain non-blocking socket offers `WireCalls`: each call comes back as the request's
//! bytes and a function that reads its reply. The bindings write the request from the caller's
//! thread, the event loop reads the socket when it is readable, and replies are matched to
//! requests in order, as the server answers them.

use std::io;

use super::{BoxFuture, Completion, Job, Millis, NewJob};
use crate::CoreResult;

/// A non-blocking connection to the backend's server, speaking its protocol.
pub trait Wire: Send {
    /// The descriptor the event loop watches.
    fn fileno(&self) -> i32;
    /// The server, for messages (never with a password).
    fn address(&self) -> &str;
    /// Writes what the socket takes now (`WouldBlock` when it takes nothing).
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize>;
    /// Reads what has arrived (`Ok(0)`: the server closed the connection).
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize>;
    /// The length of the first whole reply in `buffered`, `None` while it is incomplete, or an
    /// error if the bytes are not the protocol (the connection is then unusable).
    fn frame(&self, buffered: &[u8]) -> Result<Option<usize>, String>;
}

/// How a reply ends a call.
pub enum Settled<T> {
    Done(CoreResult<T>),
    /// The reply asks for more than this call can do on the wire (the server lost its scripts,
    /// or a flow needs another queue linked first, or a claimed job's scheduler needs
    /// upkeep): the rest runs as an ordinary call. Scripts that refuse that way wrote nothing.
    Continue(BoxFuture<T>),
}

/// Reads the one reply to a `WireCall`'s request; `None` when the request never reached the
/// server whole (the wire broke while writing it), so the call goes on the ordinary way.
pub type Settle<T> = Box<dyn FnOnce(Option<&[u8]>) -> Settled<T> + Send>;

/// A call ready for the wire: the request's bytes and how to read its reply.
pub struct WireCall<T> {
    pub request: Vec<u8>,
    pub settle: Settle<T>,
}

/// Each completion's outcome, and the jobs claimed after them.
pub type CompletedAndClaimed = (Vec<CoreResult<()>>, Vec<Job>);

/// The calls a backend offers on a wire: the hot path of adding, claiming and completing. Each
/// refuses bad input at once (nothing is written), as the ordinary call does.
pub trait WireCalls: Send + Sync {
    /// Opens a new wire (connected and authenticated, in non-blocking mode).
    fn open(&self) -> BoxFuture<Box<dyn Wire>>;
    fn add(&self, job: NewJob, now: Millis) -> CoreResult<WireCall<(Job, bool)>>;
    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> CoreResult<WireCall<Vec<(Job, bool)>>>;
    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<WireCall<Vec<Job>>>;
    fn complete_many(
        &self,
        items: Vec<Completion>,
        now: Millis,
    ) -> CoreResult<WireCall<Vec<CoreResult<()>>>>;
    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<WireCall<CompletedAndClaimed>>;
}
