//! `WorkerBook`: the core's worker bookkeeping as `JobWorker` drives it. A running job is named
//! by its asyncio task, by address: the book holds the task, so no other object has that
//! address while the job runs, and the task's done callback finds the job with no dict on the
//! Python side. An outcome keeps its job and the tuple the queue's batch call takes, made when
//! the outcome is recorded. Time is a monotonic clock read here, as in `LaneDispatcher`.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use lanemq_core::lanes::Micros;
use lanemq_core::worker::{self as core, Outcome, Turn};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySet, PyString, PyTuple};

use crate::bridge::{count, micros_to_seconds};
use crate::errors::to_py;
use crate::job_record::JobRecord;

/// A running job: its task and the `Job`.
struct Running {
    task: Py<PyAny>,
    job: Py<PyAny>,
}

/// An outcome waiting to be reported: the `Job`, and its item for the queue's batch call.
struct Recorded {
    job: Py<PyAny>,
    item: Py<PyTuple>,
}

type Book = core::WorkerBook<usize, Running, Recorded>;

fn key(task: &Bound<'_, PyAny>) -> usize {
    task.as_ptr() as usize
}

/// The `JobRecord` a `Job` wraps (its `_record` slot), read in Rust: the book reads a job's
/// id, token and timeout once per job, and through `Job`'s properties each read was a
/// Python-level call of its own. `None` for an object that is not a `Job` as `lanemq.job`
/// makes it: it is read through its attributes then.
fn record_of<'py>(job: &Bound<'py, PyAny>) -> Option<Bound<'py, JobRecord>> {
    let record = job.getattr(intern!(job.py(), "_record")).ok()?;
    record.cast_into::<JobRecord>().ok()
}

/// The job's id and lock token (`""` for none), as the queue's calls take them.
fn lease<'py>(job: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let py = job.py();
    if let Some(record) = record_of(job) {
        let record = record.get();
        let id = PyString::new(py, record.id_str()).into_any();
        let token = match record.lock_token_str() {
            Some(token) => PyString::new(py, token).into_any(),
            None => intern!(py, "").clone().into_any(),
        };
        return Ok((id, token));
    }
    let id = job.getattr(intern!(py, "id"))?;
    let token = job.getattr(intern!(py, "lock_token"))?;
    let token = if token.is_none() {
        intern!(py, "").clone().into_any()
    } else {
        token
    };
    Ok((id, token))
}

/// Whether `add_children` parked the job: `Job`'s `_parked` slot, which its `parked` property
/// reads (the property for another object).
fn parked(job: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = job.py();
    match job.getattr(intern!(py, "_parked")) {
        Ok(flag) => flag.is_truthy(),
        Err(_) => job.getattr(intern!(py, "parked"))?.is_truthy(),
    }
}

#[pyclass(module = "lanemq._core")]
pub struct WorkerBook {
    core: Book,
    origin: Instant,
    /// What the first call that failed since the last turn raised: that turn raises it.
    error: Option<Py<PyAny>>,
    /// The worker's done callback, its job timers and the tasks close() releases (`watch`):
    /// `task_done` hands a task to the callback unless it returned with neither a timer nor
    /// a release pending.
    watched: Option<Watched>,
    /// The future the worker's loop waits on, if it waits: the first job to end sets it.
    wake: Option<Py<PyAny>>,
    /// The jobs claimed ahead (remote backends), in claim order: active and leased, started
    /// as slots free (`admit`, `due`); the core counts them.
    ahead: VecDeque<Py<PyAny>>,
}

struct Watched {
    done: Py<PyAny>,
    timers: Py<PyDict>,
    releasing: Py<PySet>,
    /// `encode(job_id, result)`: the result's JSON as the queue's completion calls take it,
    /// or `TypeError` (not JSON) / `ValueError` (over the payload limit).
    encode: Py<PyAny>,
}

impl WorkerBook {
    /// Takes the held jobs, oldest first, that the free slots let start now.
    fn start_due(&mut self) -> Vec<Py<PyAny>> {
        let n = (self.core.open() as usize).min(self.ahead.len());
        self.core.unhold_ahead(n as u32);
        self.ahead.drain(..n).collect()
    }

    fn held_jobs<'a>(&'a self) -> impl Iterator<Item = &'a Py<PyAny>> + 'a {
        self.core
            .running_jobs()
            .map(|running| &running.job)
            .chain(&self.ahead)
    }

    fn now(&self) -> Micros {
        self.origin.elapsed().as_micros() as Micros
    }

    fn record(&mut self, kind: Outcome, job: Py<PyAny>, item: Bound<'_, PyTuple>) {
        let item = item.unbind();
        self.core.record(kind, Recorded { job, item });
    }

    fn batch(kind: Outcome, outcomes: Vec<Recorded>) -> OutcomeBatch {
        OutcomeBatch { kind, outcomes }
    }
}

#[pymethods]
impl WorkerBook {
    /// `prefetch`: jobs a remote worker may claim ahead beyond its concurrency (None: as
    /// many as the concurrency, up to 10; 0: none); in process none are.
    #[new]
    #[pyo3(signature = (concurrency, remote, prefetch=None))]
    fn new(concurrency: i64, remote: bool, prefetch: Option<i64>) -> PyResult<Self> {
        let concurrency = count("concurrency", concurrency, 1)?;
        let prefetch = prefetch.map(|n| count("prefetch", n, 0)).transpose()?;
        let mut core = Book::new(concurrency, remote).map_err(to_py)?;
        core.set_prefetch(prefetch);
        Ok(Self {
            core,
            origin: Instant::now(),
            error: None,
            watched: None,
            wake: None,
            ahead: VecDeque::new(),
        })
    }

    /// Jobs that may be claimed ahead beyond the concurrency now (0 in process).
    #[getter]
    fn prefetch(&self) -> u32 {
        self.core.prefetch()
    }

    /// Jobs claimed ahead, not started yet.
    #[getter]
    fn ahead(&self) -> u32 {
        self.core.ahead()
    }

    /// `jobs` a claim returned: those the free slots let start now, the held ones first (in
    /// claim order); the rest are held, claimed ahead. The common case (nothing held, room
    /// for all) returns `jobs` itself.
    fn admit<'py>(&mut self, jobs: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyAny>> {
        let py = jobs.py();
        if self.ahead.is_empty() && jobs.len() <= self.core.open() as usize {
            return Ok(jobs.clone().into_any());
        }
        self.core.hold_ahead(jobs.len() as u32);
        self.ahead.extend(jobs.iter().map(Bound::unbind));
        Ok(PyList::new(py, self.start_due())?.into_any())
    }

    /// The held jobs the free slots let start now, oldest first (taken from the book).
    fn due(&mut self) -> Vec<Py<PyAny>> {
        self.start_due()
    }

    /// Every held job, oldest first (taken from the book): close gives them back.
    fn take_ahead(&mut self) -> Vec<Py<PyAny>> {
        self.core.unhold_ahead(self.ahead.len() as u32);
        self.ahead.drain(..).collect()
    }

    /// The held job `job_id`, taken from the book (its cancel drops it); None if not held.
    fn drop_ahead(&mut self, py: Python<'_>, job_id: &str) -> PyResult<Option<Py<PyAny>>> {
        let mut found = None;
        for (at, job) in self.ahead.iter().enumerate() {
            let (id, _) = lease(job.bind(py))?;
            if id.cast::<PyString>()?.to_str()? == job_id {
                found = Some(at);
                break;
            }
        }
        Ok(found.and_then(|at| {
            self.core.unhold_ahead(1);
            self.ahead.remove(at)
        }))
    }

    #[getter]
    fn concurrency(&self) -> u32 {
        self.core.concurrency()
    }

    #[setter]
    fn set_concurrency(&mut self, value: i64) -> PyResult<()> {
        let value = count("concurrency", value, 1)?;
        self.core.set_concurrency(value).map_err(to_py)
    }

    /// Jobs running.
    #[getter]
    fn running(&self) -> usize {
        self.core.running()
    }

    /// Outcomes of every kind waiting to be reported.
    #[getter]
    fn pending(&self) -> usize {
        self.core.pending()
    }

    /// Whether claims are held (`JobWorker.pause`): no job is claimed, running ones go on.
    #[getter]
    fn held(&self) -> bool {
        self.core.is_held()
    }

    #[setter]
    fn set_held(&mut self, held: bool) {
        self.core.set_held(held);
    }

    /// This worker's own claim limit: at most `max_jobs` started per `per_seconds` (None:
    /// none). The caller checked the values' types.
    #[pyo3(signature = (limit))]
    fn set_limit(&mut self, limit: Option<(u32, f64)>) -> PyResult<()> {
        let limit = limit.map(|(max, per)| core::ClaimLimit {
            max,
            // (a float-to-int cast saturates: a huge window is a window that never closes)
            per: (per * 1e6).ceil() as Micros,
        });
        self.core.set_limit(limit).map_err(to_py)
    }

    #[getter]
    fn processed(&self) -> u64 {
        self.core.counts().processed
    }

    #[getter]
    fn failed(&self) -> u64 {
        self.core.counts().failed
    }

    #[getter]
    fn attempts_failed(&self) -> u64 {
        self.core.counts().attempts_failed
    }

    // ------------------------------------------------------------------- running jobs

    /// `job` runs in `task`; returns the job's timeout in seconds, if it has one (read here:
    /// the worker needs it at once, and this saves it a call of its own per job).
    fn start(&mut self, task: &Bound<'_, PyAny>, job: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let timeout = match record_of(job) {
            Some(record) => record.get().timeout_secs(),
            None => job.getattr(intern!(job.py(), "timeout"))?.extract()?,
        };
        let running = Running {
            task: task.clone().unbind(),
            job: job.clone().unbind(),
        };
        self.core.start(key(task), running);
        if self.core.has_limit() {
            let now = self.now();
            self.core.count_start(now);
        }
        Ok(timeout)
    }

    /// `task` is done: its job, to record the outcome of; `None` if the book does not hold it,
    /// or if `add_children` parked the job (nothing to report).
    fn finish(&mut self, task: &Bound<'_, PyAny>) -> PyResult<Option<Py<PyAny>>> {
        let Some(running) = self.core.finish(&key(task)) else {
            return Ok(None);
        };
        let job = running.job.into_bound(task.py());
        Ok(if parked(&job)? {
            None
        } else {
            Some(job.unbind())
        })
    }

    /// `done(task)` is the worker's done callback for what `task_done` does not handle;
    /// `timers` (task -> timer) and `releasing` (tasks close() cancelled) are the worker's own,
    /// looked at on every call; `encode(job_id, result)` encodes a result that is not None
    /// when its job ends (`completed`).
    fn watch(
        &mut self,
        done: Py<PyAny>,
        timers: Py<PyDict>,
        releasing: Py<PySet>,
        encode: Py<PyAny>,
    ) {
        self.watched = Some(Watched {
            done,
            timers,
            releasing,
            encode,
        });
    }

    /// The future the worker's loop waits on now (None: it does not wait).
    #[getter]
    fn wake(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.wake.as_ref().map(|wake| wake.clone_ref(py))
    }

    #[setter]
    fn set_wake(&mut self, wake: Option<Py<PyAny>>) {
        self.wake = wake;
    }

    /// The done callback of a job's task. The common ending, in Rust (a Python-level callback
    /// was a visible part of a job's cost): the task returned, no timer and no release
    /// pending; its completion is recorded (as `completed`) and the loop woken. Anything else
    /// (an exception, a cancellation, a timer, a release) goes to the worker's callback.
    fn task_done(slf: &Bound<'_, Self>, task: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let done = {
            let book = slf.borrow();
            let Some(watched) = &book.watched else {
                return Err(PyRuntimeError::new_err("WorkerBook.watch was not called"));
            };
            let plain = watched.timers.bind(py).is_empty() && watched.releasing.bind(py).is_empty();
            if !plain {
                watched.done.clone_ref(py)
            } else {
                // `result()` alone: it returns what the task returned, and raises for a task
                // that raised or was cancelled, which the worker's callback then reads again
                // with `exception()` (one call per job fewer than asking `exception()` first).
                match task.call_method0(intern!(py, "result")) {
                    Ok(result) => {
                        drop(book);
                        let wake = {
                            let mut book = slf.borrow_mut();
                            book.completed(task, &result)?;
                            book.wake.take()
                        };
                        if let Some(wake) = wake {
                            let wake = wake.bind(py);
                            if !wake.call_method0(intern!(py, "done"))?.is_truthy()? {
                                wake.call_method1(intern!(py, "set_result"), (py.None(),))?;
                            }
                        }
                        return Ok(());
                    }
                    // Raised, or cancelled (`result()` raises `CancelledError`).
                    Err(_) => watched.done.clone_ref(py),
                }
            }
        };
        done.call1(py, (task,))?;
        Ok(())
    }

    /// The tasks of the running jobs.
    fn tasks(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.core
            .running_jobs()
            .map(|r| r.task.clone_ref(py))
            .collect()
    }

    /// `(job_id, token)` of every running or held job that holds a lease (not parked), to
    /// renew: a job claimed ahead is renewed with the running ones, so stalled recovery never
    /// takes it while this worker lives.
    fn leases<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let mut held = Vec::with_capacity(self.core.running() + self.ahead.len());
        for job in self.held_jobs() {
            let job = job.bind(py);
            if !parked(job)? {
                held.push(lease(job)?);
            }
        }
        Ok(held)
    }

    /// The running or held jobs whose id is one of `ids`.
    fn holding(&self, py: Python<'_>, ids: Vec<String>) -> PyResult<Vec<Py<PyAny>>> {
        let ids: HashSet<String> = ids.into_iter().collect();
        let mut found = Vec::new();
        for job in self.held_jobs() {
            let job = job.bind(py);
            let id = job.getattr(intern!(py, "id"))?;
            if ids.contains(id.cast::<PyString>()?.to_str()?) {
                found.push(job.clone().unbind());
            }
        }
        Ok(found)
    }

    /// `(task, job)` of the running job `job_id`, if the book holds it: the one a cancel
    /// request for that id stops (`JobWorker`'s cancel road). A scan of the running jobs:
    /// requests are rare, and the book keys its jobs by task for the per-job path.
    fn running_job(
        &self,
        py: Python<'_>,
        job_id: &str,
    ) -> PyResult<Option<(Py<PyAny>, Py<PyAny>)>> {
        for running in self.core.running_jobs() {
            let job = running.job.bind(py);
            let id = match record_of(job) {
                Some(record) => record.get().id_str() == job_id,
                None => job.getattr(intern!(py, "id"))?.extract::<String>()? == job_id,
            };
            if id {
                return Ok(Some((
                    running.task.clone_ref(py),
                    running.job.clone_ref(py),
                )));
            }
        }
        Ok(None)
    }

    // ------------------------------------------------------------------------ outcomes

    /// `task` returned `result`: its job ends, and its completion waits to be reported
    /// (nothing to report if the book does not hold the task or the job parked). The common
    /// ending in one call; the others go through `finish`. A result that is not None is
    /// encoded now, once (`watch`'s `encode`): one the queue cannot take (not JSON, over the
    /// payload limit) fails its job alone, as if the processor had raised that error (retried
    /// by its policy), rather than the whole batch of completions it would be reported with.
    fn completed(&mut self, task: &Bound<'_, PyAny>, result: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = task.py();
        let Some(job) = self.finish(task)? else {
            return Ok(());
        };
        let job = job.into_bound(py);
        let (id, token) = lease(&job)?;
        let text = if result.is_none() {
            result.clone()
        } else {
            let Some(watched) = &self.watched else {
                return Err(PyRuntimeError::new_err("WorkerBook.watch was not called"));
            };
            match watched.encode.bind(py).call1((&id, result)) {
                Ok(text) => text,
                Err(refused)
                    if refused.is_instance_of::<PyTypeError>(py)
                        || refused.is_instance_of::<PyValueError>(py) =>
                {
                    let error = refused.into_value(py).into_bound(py).into_any();
                    let item = (id, token, error, py.None(), true).into_pyobject(py)?;
                    self.record(Outcome::Failed, job.unbind(), item);
                    return Ok(());
                }
                Err(other) => return Err(other),
            }
        };
        let item = (id, token, text).into_pyobject(py)?;
        self.record(Outcome::Completed, job.unbind(), item);
        Ok(())
    }

    /// `job`'s attempt failed with `error` (and `stacktrace`); retried unless `retry` is false
    /// or no attempt is left.
    fn fail(
        &mut self,
        job: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
        stacktrace: Option<&Bound<'_, PyString>>,
        retry: bool,
    ) -> PyResult<()> {
        let (id, token) = lease(job)?;
        let item = (id, token, error, stacktrace, retry).into_pyobject(job.py())?;
        self.record(Outcome::Failed, job.clone().unbind(), item);
        Ok(())
    }

    /// `job` goes back to waiting; with `pause` (a rate limit), no claims for that many seconds.
    /// The release is recorded even if `pause` is not a number (the `TypeError` comes after):
    /// the delay is whatever a processor put in its `RateLimitError`.
    #[pyo3(signature = (job, pause=None))]
    fn release(
        &mut self,
        job: &Bound<'_, PyAny>,
        pause: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (id, token) = lease(job)?;
        let item = (id, token).into_pyobject(job.py())?;
        self.record(Outcome::Released, job.clone().unbind(), item);
        if let Some(seconds) = pause {
            // A float-to-int cast saturates: a negative or NaN delay pauses nothing, an
            // infinite one for good (as the worker's arithmetic on loop time did).
            let delay = (seconds.extract::<f64>()? * 1e6) as Micros;
            let now = self.now();
            self.core.pause(now, delay);
        }
        Ok(())
    }

    fn take_completions(&mut self) -> OutcomeBatch {
        Self::batch(Outcome::Completed, self.core.take(Outcome::Completed))
    }

    fn take_failures(&mut self) -> OutcomeBatch {
        Self::batch(Outcome::Failed, self.core.take(Outcome::Failed))
    }

    fn take_releases(&mut self) -> OutcomeBatch {
        Self::batch(Outcome::Released, self.core.take(Outcome::Released))
    }

    /// A batch whose report failed: its outcomes go first in the next one (the batch is left
    /// empty).
    fn put_back(&mut self, mut batch: PyRefMut<'_, OutcomeBatch>) {
        let outcomes = std::mem::take(&mut batch.outcomes);
        self.core.put_back(batch.kind, outcomes);
    }

    // --------------------------------------------------------------------------- turns

    /// What the loop does now; raises what a call that failed since the last turn raised.
    fn turn(&mut self, py: Python<'_>) -> PyResult<WorkerTurn> {
        let now = self.now();
        match self.core.turn(now) {
            Turn::CallFailed => Err(self.error.take().map_or_else(
                || PyRuntimeError::new_err("a call failed and left no error"),
                |error| PyErr::from_value(error.into_bound(py)),
            )),
            Turn::Flush => Ok(WorkerTurn {
                flush: true,
                calls: PyList::empty(py).unbind(),
                idle_claim: 0,
                pause: None,
            }),
            Turn::Calls { calls, idle } => {
                let calls = calls
                    .into_iter()
                    .map(|call| {
                        let batch = Self::batch(Outcome::Completed, call.completions);
                        Ok((Py::new(py, batch)?, call.claim))
                    })
                    .collect::<PyResult<Vec<_>>>()?;
                Ok(WorkerTurn {
                    flush: false,
                    calls: PyList::new(py, calls)?.unbind(),
                    idle_claim: idle.claim,
                    pause: idle.pause.map(micros_to_seconds),
                })
            }
        }
    }

    /// A call of a turn returned, having claimed `got` of its `claim`.
    fn call_done(&mut self, claim: u32, got: u32) {
        self.core.call_done(claim, got);
    }

    /// A call of a turn failed with `error` (its completions are put back separately); the
    /// next turn raises it.
    fn call_failed(&mut self, claim: u32, error: &Bound<'_, PyAny>) {
        self.core.call_failed(claim);
        self.error.get_or_insert_with(|| error.clone().unbind());
    }

    /// The loop waited for work, claiming up to `asked` (0: it only slept) and getting `got`.
    fn idled(&mut self, asked: u32, got: u32) {
        self.core.idled(asked, got);
    }

    /// `(jobs that may be claimed now, seconds claims are still paused)`: no jobs while paused.
    fn claimable(&self) -> (u32, f64) {
        let now = self.now();
        (
            self.core.claimable(now),
            micros_to_seconds(self.core.paused_for(now)),
        )
    }

    /// A turn failed: seconds to wait before the next one (doubling per failure in a row).
    fn back_off(&mut self) -> f64 {
        micros_to_seconds(self.core.back_off())
    }

    /// `n` completions were accepted by the backend.
    fn count_completed(&mut self, n: u64) {
        self.core.count_completed(n);
    }

    /// A failed attempt was recorded; `retried` unless the job failed for good.
    fn count_failed(&mut self, retried: bool) {
        self.core.count_failed(retried);
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for running in self.core.running_jobs() {
            visit.call(&running.task)?;
            visit.call(&running.job)?;
        }
        for job in &self.ahead {
            visit.call(job)?;
        }
        for recorded in self.core.outcomes() {
            visit.call(&recorded.job)?;
            visit.call(&recorded.item)?;
        }
        if let Some(error) = &self.error {
            visit.call(error)?;
        }
        if let Some(watched) = &self.watched {
            visit.call(&watched.done)?;
            visit.call(&watched.timers)?;
            visit.call(&watched.releasing)?;
            visit.call(&watched.encode)?;
        }
        if let Some(wake) = &self.wake {
            visit.call(wake)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.core.clear();
        self.ahead.clear();
        self.error = None;
        self.watched = None;
        self.wake = None;
    }
}

/// What the loop does this turn: `flush` (report every outcome waiting, after the calls in
/// flight), or make `calls` (`(completions, claim)`: report those and claim up to `claim`
/// jobs, then tell the book `call_done` or `call_failed`) and, with none in flight and none
/// claimed, wait for work claiming up to `idle_claim` (0: none) or sleeping `pause` seconds.
#[pyclass(frozen, module = "lanemq._core")]
pub struct WorkerTurn {
    #[pyo3(get)]
    flush: bool,
    #[pyo3(get)]
    calls: Py<PyList>,
    #[pyo3(get)]
    idle_claim: u32,
    #[pyo3(get)]
    pause: Option<f64>,
}

/// Outcomes of one kind taken from a `WorkerBook` to be reported in one call: the `Job`s, and
/// the items the queue's batch call takes, in the same order.
#[pyclass(module = "lanemq._core")]
pub struct OutcomeBatch {
    kind: Outcome,
    outcomes: Vec<Recorded>,
}

#[pymethods]
impl OutcomeBatch {
    #[getter]
    fn jobs(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.outcomes.iter().map(|o| o.job.clone_ref(py)).collect()
    }

    /// `(job_id, token, result)` for completions, `(job_id, token, error, stacktrace, retry)`
    /// for failures, `(job_id, token)` for releases.
    #[getter]
    fn items(&self, py: Python<'_>) -> Vec<Py<PyTuple>> {
        self.outcomes.iter().map(|o| o.item.clone_ref(py)).collect()
    }

    fn __len__(&self) -> usize {
        self.outcomes.len()
    }

    /// Drops the outcomes once they are reported, so their jobs are freed before the jobs
    /// claimed in the same call start (the turn that made the batch still holds it): otherwise
    /// two batches of jobs live at once, and a batch of 100 crosses the collector's threshold
    /// of young objects every time (a collection per batch; none like this).
    fn clear(&mut self) {
        self.outcomes.clear();
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for recorded in &self.outcomes {
            visit.call(&recorded.job)?;
            visit.call(&recorded.item)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        self.outcomes.clear();
    }
}
