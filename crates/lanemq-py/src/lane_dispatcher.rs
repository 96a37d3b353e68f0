//! `LaneDispatcher`: the Rust lanes' dispatcher as the Python `QueueManager` drives it. Each
//! command carries the manager's handle object, so `pop` hands the runner the handle itself and
//! Python keeps no id-to-handle map. Time is a monotonic clock read here, so Python never passes
//! timestamps on the hot path. `lanemq._core` also exports it as `LaneScheduler`, its old name.

use std::time::Instant;

use lanemq_core::lanes::{self as core, CommandFailOutcome, FailKind, Micros, Signal};
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::bridge::{count, micros_to_seconds, wall_clock_ms};
use crate::core_args::{CoreArg, Text};
use crate::dead_letter::DeadLetter;
use crate::errors::to_py;
use crate::lane_config::{AlertConfig, LaneConfig};

#[pyclass(module = "lanemq._core")]
pub struct LaneDispatcher {
    /// `None` only after the garbage collector cleared a dropped manager's handles.
    core: core::Dispatcher<Option<Py<PyAny>>>,
    origin: Instant,
}

impl LaneDispatcher {
    fn now(&self) -> Micros {
        self.origin.elapsed().as_micros() as Micros
    }

    fn handle(&self, py: Python<'_>, id: u64) -> Option<Py<PyAny>> {
        self.core
            .payload(id)
            .and_then(|h| h.as_ref().map(|h| h.clone_ref(py)))
    }
}

#[pymethods]
impl LaneDispatcher {
    #[new]
    #[pyo3(signature = (lanes, max_concurrency=None, dead_letter_capacity=1000, alerts=None))]
    fn new(
        lanes: Vec<LaneConfig>,
        max_concurrency: Option<i64>,
        dead_letter_capacity: i64,
        alerts: Option<AlertConfig>,
    ) -> PyResult<Self> {
        let config = core::DispatcherConfig {
            lanes: lanes.into_iter().map(|l| l.inner).collect(),
            max_concurrency: max_concurrency
                .map(|m| count("max_concurrency", m, 1))
                .transpose()?,
            dead_letter_capacity: count("dead_letter_capacity", dead_letter_capacity, 0)? as usize,
            alerts: alerts.map(|a| a.inner).unwrap_or_default(),
        };
        let origin = Instant::now();
        Ok(Self {
            core: core::Dispatcher::new(config, 0).map_err(to_py)?,
            origin,
        })
    }

    /// Lane ids in configuration order; a lane's index is its position here.
    fn lane_ids(&self) -> Vec<String> {
        (0..self.core.lane_count())
            .map(|i| self.core.lane_config(i).lane_id.clone())
            .collect()
    }

    /// The lane's index, or `UnknownLaneError`.
    fn lane_index(&self, lane_id: Text) -> PyResult<usize> {
        self.core
            .lane_index(&lane_id.core("lane_id")?)
            .map_err(to_py)
    }

    /// The lane's per-attempt timeout in seconds, if it has one.
    fn lane_timeout(&self, lane: usize) -> Option<f64> {
        self.core.lane_config(lane).timeout.map(micros_to_seconds)
    }

    /// How many commands may run at once over all lanes.
    #[getter]
    fn capacity(&self) -> u32 {
        self.core.capacity()
    }

    /// Commands submitted and not finished (pending, running or waiting to retry).
    #[getter]
    fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    #[getter]
    fn accepting(&self) -> bool {
        self.core.is_accepting()
    }

    /// Queues a command, with its handle, at the back of lane number `lane`; returns its id.
    fn push(&mut self, lane: usize, handle: Py<PyAny>) -> PyResult<u64> {
        let now = self.now();
        self.core.push(lane, now, Some(handle)).map_err(to_py)
    }

    /// The handle of the next command to start now, if any may start.
    fn pop(&mut self, py: Python<'_>) -> Option<Py<PyAny>> {
        let now = self.now();
        let started = self.core.pop(now)?;
        self.handle(py, started.id)
    }

    /// Marks a running command done and, in the same call, starts the next one if any may
    /// start, returning its handle.
    fn complete_and_pop(&mut self, py: Python<'_>, id: u64) -> PyResult<Option<Py<PyAny>>> {
        let now = self.now();
        self.core.complete(id, now).map_err(to_py)?;
        Ok(self.core.pop(now).and_then(|s| self.handle(py, s.id)))
    }

    /// Marks a running command done without starting another: for a runner that stops (it is
    /// being cancelled) right after the command finished.
    fn complete(&mut self, id: u64) -> PyResult<()> {
        let now = self.now();
        self.core.complete(id, now).map(drop).map_err(to_py)
    }

    /// Handles of the commands waiting to start (pending or waiting to retry), oldest first.
    fn waiting(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.core
            .waiting_payloads()
            .filter_map(|(_, h)| h.as_ref().map(|h| h.clone_ref(py)))
            .collect()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for handle in self.core.payloads() {
            visit.call(handle)?;
        }
        Ok(())
    }

    fn __clear__(&mut self) {
        for handle in self.core.payloads_mut() {
            *handle = None;
        }
    }

    /// Records a failed attempt. Returns `(retry_delay, attempt)`: the seconds until the retry,
    /// or `None` when the command was dead-lettered, and the number of the attempt that failed.
    fn fail(
        &mut self,
        id: u64,
        timed_out: bool,
        retryable: bool,
        error: &str,
        command_type: &str,
    ) -> PyResult<(Option<f64>, u32)> {
        let now = self.now();
        let attempt = self.core.attempt(id).unwrap_or(0);
        let kind = if timed_out {
            FailKind::Timeout
        } else {
            FailKind::Error
        };
        let outcome = self
            .core
            .fail(
                id,
                now,
                kind,
                retryable,
                error,
                command_type,
                wall_clock_ms(),
            )
            .map_err(to_py)?;
        Ok(match outcome {
            CommandFailOutcome::Retry { delay, .. } => (Some(micros_to_seconds(delay)), attempt),
            CommandFailOutcome::DeadLettered { .. } => (None, attempt),
        })
    }

    /// Withdraws a command (pending, waiting to retry, or running once its code has stopped).
    fn cancel(&mut self, id: u64) -> PyResult<()> {
        self.core.cancel(id).map_err(to_py)
    }

    /// The attempt number of a command (0 before its first start).
    fn attempt(&self, id: u64) -> Option<u32> {
        self.core.attempt(id)
    }

    /// Seconds until a retry or a rate-limit token comes due, if something waits on time.
    fn next_wake(&mut self) -> Option<f64> {
        let now = self.now();
        self.core.next_wake(now).map(micros_to_seconds)
    }

    /// Refuses further pushes with `ShutdownError`.
    fn shutdown(&mut self) {
        self.core.shutdown();
    }

    /// Per lane: priority, pending, active, retrying, min_concurrency, max_concurrency.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for lane in self.core.stats() {
            let entry = PyDict::new(py);
            entry.set_item("priority", lane.priority)?;
            entry.set_item("pending", lane.pending)?;
            entry.set_item("active", lane.active)?;
            entry.set_item("retrying", lane.retrying)?;
            entry.set_item("min_concurrency", lane.min_concurrency)?;
            entry.set_item("max_concurrency", lane.max_concurrency)?;
            out.set_item(lane.lane_id, entry)?;
        }
        Ok(out)
    }

    /// Counts every lane's counters and latency samples from zero again.
    fn reset_metrics(&mut self) {
        self.core.reset_metrics();
    }

    /// Per lane: counters, and latency and queue-wait percentiles in seconds.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (lane_id, m) in self.core.metrics() {
            let entry = PyDict::new(py);
            entry.set_item("submitted", m.submitted)?;
            entry.set_item("started", m.started)?;
            entry.set_item("completed", m.completed)?;
            entry.set_item("failed", m.failed)?;
            entry.set_item("timed_out", m.timed_out)?;
            entry.set_item("retried", m.retried)?;
            entry.set_item("dead_lettered", m.dead_lettered)?;
            entry.set_item("cancelled", m.cancelled)?;
            entry.set_item("latency", percentiles(py, &m.latency.percentiles())?)?;
            entry.set_item("queue_wait", percentiles(py, &m.queue_wait.percentiles())?)?;
            out.set_item(lane_id, entry)?;
        }
        Ok(out)
    }

    /// Dead letters, oldest first.
    fn dead_letters(&self) -> Vec<DeadLetter> {
        self.core
            .dead_letters()
            .map(|l| DeadLetter { inner: l.clone() })
            .collect()
    }

    /// Puts a letter in the queue (used to restore stored letters); the oldest drop past capacity.
    fn add_dead_letter(&mut self, letter: DeadLetter) {
        self.core.add_dead_letter(letter.inner);
    }

    /// Signals raised since the last call: `(kind, lane_id, level, value)` where kind is
    /// "pressure", "idle", "queue_depth" or "latency"; level is "" or "warning"/"critical";
    /// value is the pending count or the latency in seconds.
    fn take_signals(&mut self) -> Vec<(&'static str, String, &'static str, f64)> {
        let signals = self.core.take_signals();
        signals
            .into_iter()
            .map(|signal| {
                let (kind, lane, level, value) = match signal {
                    Signal::Pressure { lane, pending } => ("pressure", lane, "", pending as f64),
                    Signal::Idle { lane } => ("idle", lane, "", 0.0),
                    Signal::DepthAlert {
                        lane,
                        level,
                        pending,
                    } => ("queue_depth", lane, level.as_str(), pending as f64),
                    Signal::LatencyAlert {
                        lane,
                        level,
                        latency,
                    } => ("latency", lane, level.as_str(), micros_to_seconds(latency)),
                };
                (
                    kind,
                    self.core.lane_config(lane).lane_id.clone(),
                    level,
                    value,
                )
            })
            .collect()
    }
}

fn percentiles<'py>(py: Python<'py>, p: &core::Percentiles) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("count", p.count)?;
    out.set_item("p50", micros_to_seconds(p.p50))?;
    out.set_item("p90", micros_to_seconds(p.p90))?;
    out.set_item("p95", micros_to_seconds(p.p95))?;
    out.set_item("p99", micros_to_seconds(p.p99))?;
    Ok(out)
}
