//! Calls on a connection that the caller's event loop drives (`wire::Wire`), and
//! `RedisJobBackend`'s.
//!
//! A backend's ordinary calls run on the tokio runtime, which costs an awaited call two thread
//! hand-offs (to the runtime and back to the event loop). On a machine of two cores a bare
//! round trip that way took 93-144 us, against 53-66 us on a socket the loop watches itself
//! (`benches/round_trip.py` has the latter). A backend that can also speak over a plain
//! non-blocking socket offers `WireCalls`: each call comes back as the request's bytes and a
//! function that reads its reply. The bindings write the request from the caller's thread, the
//! event loop reads the socket when it is readable, and replies are matched to requests in
//! order, as the server answers them.
//!
//! `RedisJobBackend`'s wire calls are the same script calls as the ordinary ones, with the same
//! arguments and replies. A reply that `run` would answer by calling again (the server lost the
//! library, a flow needs a queue linked) and a claim of a scheduler's job (whose upkeep takes
//! more calls) go on as the ordinary call.
//!
//! Only this backend (and the bindings, which drive it) speak this: an in-process backend has
//! no socket for a loop to watch, so it is no part of the job contract in `lanemq-core`.

use std::sync::Arc;

use lanemq_core::jobs::{BoxFuture, Completion, Job, JobLifecycle, Millis, NewJob};
use lanemq_core::CoreResult;
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode;
use crate::job_backend::RedisJobBackend;
use crate::resp;
use crate::scripts::{self, LuaScript};
use crate::wire::{RedisWire, Wire};

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

impl RedisJobBackend {
    /// A wire call of `script` with `args`. `state` is what reading the reply needs: `decode`
    /// reads a successful reply with it, `again` makes the ordinary call from it for the
    /// replies `run` handles by itself.
    fn wire_call<S: Send + 'static, T: Send + 'static>(
        &self,
        script: &LuaScript,
        args: &[String],
        state: S,
        decode: impl FnOnce(&Arc<RedisBackend>, Value, S) -> Settled<T> + Send + 'static,
        again: impl FnOnce(Self, S) -> BoxFuture<T> + Send + 'static,
    ) -> WireCall<T> {
        let request = self.backend().request(script, args);
        let ordinary = self.clone();
        let settle: Settle<T> = Box::new(move |bytes| {
            let Some(bytes) = bytes else {
                return Settled::Continue(again(ordinary, state));
            };
            let backend = ordinary.backend();
            match resp::decode(bytes).and_then(Value::extract_error) {
                Ok(value) => decode(backend, value, state),
                Err(e) if backend.runs_again(&e) => Settled::Continue(again(ordinary, state)),
                Err(e) => Settled::Done(Err(backend.target.error(e))),
            }
        });
        WireCall { request, settle }
    }
}

/// Claimed jobs as a wire call ends: done, unless one belongs to a scheduler, whose upkeep
/// (`after_claim`) takes further calls. `wrap` makes the call's value from them.
fn after_claim<T: Send + 'static>(
    backend: &Arc<RedisBackend>,
    claimed: Vec<Job>,
    now: Millis,
    wrap: impl FnOnce(Vec<Job>) -> T + Send + 'static,
) -> Settled<T> {
    if claimed.iter().all(|job| job.options.scheduler.is_none()) {
        return Settled::Done(Ok(wrap(claimed)));
    }
    let backend = Arc::clone(backend);
    Settled::Continue(Box::pin(async move {
        backend.after_claim(&claimed, now).await;
        Ok(wrap(claimed))
    }))
}

fn done<T>(outcome: CoreResult<T>) -> Settled<T> {
    Settled::Done(outcome)
}

impl WireCalls for RedisJobBackend {
    fn open(&self) -> BoxFuture<Box<dyn Wire>> {
        let server = self.backend().server();
        Box::pin(async move {
            // Reachable and the credentials good first (as the command connection says), so a
            // server that does not answer costs no blocking thread for long.
            server.commands().await?;
            tokio::task::spawn_blocking(move || {
                RedisWire::open(server.info(), server.address(), server.connect_timeout())
                    .map(|wire| Box::new(wire) as Box<dyn Wire>)
            })
            .await
            .map_err(|e| lanemq_core::CoreError::Connection(e.to_string()))?
        })
    }

    fn add(&self, job: NewJob, now: Millis) -> CoreResult<WireCall<(Job, bool)>> {
        let args =
            self.backend()
                .add_args(std::slice::from_ref(&job), now, self.max_payload_bytes())?;
        Ok(self.wire_call(
            &scripts::ADD,
            &args,
            job,
            move |_, reply, job| {
                done(decode::added_jobs(reply, vec![job], now).map(|mut added| added.remove(0)))
            },
            move |ordinary, job| JobLifecycle::add(&ordinary, job, now),
        ))
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> CoreResult<WireCall<Vec<(Job, bool)>>> {
        let args = self
            .backend()
            .add_args(&jobs, now, self.max_payload_bytes())?;
        Ok(self.wire_call(
            &scripts::ADD,
            &args,
            jobs,
            move |_, reply, jobs| done(decode::added_jobs(reply, jobs, now)),
            move |ordinary, jobs| JobLifecycle::add_bulk(&ordinary, jobs, now),
        ))
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<WireCall<Vec<Job>>> {
        let args = self.backend().claim_args(&worker_id, lease, max_jobs, now);
        Ok(self.wire_call(
            &scripts::CLAIM,
            &args,
            worker_id,
            move |backend, reply, worker_id| match backend.claimed(reply, &worker_id, lease, now) {
                Ok(claimed) => after_claim(backend, claimed, now, |jobs| jobs),
                Err(e) => done(Err(e)),
            },
            move |ordinary, worker_id| {
                JobLifecycle::claim(&ordinary, worker_id, lease, max_jobs, now)
            },
        ))
    }

    fn complete_many(
        &self,
        items: Vec<Completion>,
        now: Millis,
    ) -> CoreResult<WireCall<Vec<CoreResult<()>>>> {
        let args = self.backend().complete_args(&items, now);
        Ok(self.wire_call(
            &scripts::COMPLETE,
            &args,
            items,
            move |_, reply, items| done(RedisBackend::completed(&items, reply)),
            move |ordinary, items| JobLifecycle::complete_many(&ordinary, items, now),
        ))
    }

    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> CoreResult<WireCall<CompletedAndClaimed>> {
        let mut args = self.backend().claim_args(&worker_id, lease, max_jobs, now);
        RedisBackend::push_completions(&mut args, &items);
        Ok(self.wire_call(
            &scripts::COMPLETE_CLAIM,
            &args,
            (items, worker_id),
            move |backend, reply, (items, worker_id)| match backend
                .completed_and_claimed(&items, reply, &worker_id, lease, now)
            {
                Ok((outcomes, claimed)) => {
                    after_claim(backend, claimed, now, |jobs| (outcomes, jobs))
                }
                Err(e) => done(Err(e)),
            },
            move |ordinary, (items, worker_id)| {
                JobLifecycle::complete_and_claim(&ordinary, items, worker_id, lease, max_jobs, now)
            },
        ))
    }
}
