//! `JobOptions`, `Backoff` and `KeepJobs`: job options validated on construction, so a bad value
//! raises before anything is written.

use lanemq_core::jobs::{self as core, BackoffKind, Retention};
use pyo3::prelude::*;

use crate::bridge::{count, millis_to_seconds, seconds_to_millis, Int};
use crate::errors::{invalid, to_py};

/// How long to wait before retrying a failed job.
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct Backoff {
    pub inner: core::Backoff,
}

#[pymethods]
impl Backoff {
    /// The same `delay` seconds before every retry.
    #[staticmethod]
    fn fixed(delay: f64) -> PyResult<Self> {
        let delay = seconds_to_millis("backoff delay", delay)?;
        Ok(Self {
            inner: core::Backoff {
                kind: BackoffKind::Fixed,
                delay,
                jitter: 0.0,
            },
        })
    }

    /// `delay * 2^(n-1)` seconds before retry n; `jitter` (0..1) takes up to that fraction off.
    #[staticmethod]
    #[pyo3(signature = (delay, jitter=0.0))]
    fn exponential(delay: f64, jitter: f64) -> PyResult<Self> {
        let delay = seconds_to_millis("backoff delay", delay)?;
        let inner = core::Backoff {
            kind: BackoffKind::Exponential,
            delay,
            jitter,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner.kind {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Exponential => "exponential",
        }
    }
    #[getter]
    fn delay(&self) -> f64 {
        millis_to_seconds(self.inner.delay)
    }
    #[getter]
    fn jitter(&self) -> f64 {
        self.inner.jitter
    }
    /// Seconds before retry number `retry` (1-based), without jitter.
    fn delay_for(&self, retry: i64) -> PyResult<f64> {
        Ok(millis_to_seconds(
            self.inner.delay_for(count("retry", retry, 1)?, 0.0),
        ))
    }
    fn __repr__(&self) -> String {
        format!(
            "Backoff.{}({}, jitter={})",
            self.kind(),
            self.delay(),
            self.inner.jitter
        )
    }
}

/// Which finished jobs to keep: at most `count` newest, none older than `age` seconds; at
/// most `limit` removed per pass.
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct KeepJobs {
    pub inner: Retention,
}

#[pymethods]
impl KeepJobs {
    #[new]
    #[pyo3(signature = (age=None, count=None, limit=None))]
    fn new(age: Option<f64>, count: Option<i64>, limit: Option<i64>) -> PyResult<Self> {
        let to_u64 = |field: &str, v: i64| {
            if v < 0 {
                Err(invalid(field, v, "must be >= 0"))
            } else {
                Ok(v as u64)
            }
        };
        Ok(Self {
            inner: Retention::Keep {
                count: count.map(|c| to_u64("count", c)).transpose()?,
                age: age.map(|a| seconds_to_millis("age", a)).transpose()?,
                limit: limit.map(|l| to_u64("limit", l)).transpose()?,
            },
        })
    }
    fn __repr__(&self) -> String {
        format!("KeepJobs({:?})", self.inner)
    }
}

/// `True` removes at once, `False`/`None` keeps all, an int keeps that many, or a `KeepJobs`.
fn retention(field: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Retention> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Retention::KeepAll);
    };
    if let Ok(flag) = value.cast::<pyo3::types::PyBool>() {
        return Ok(if flag.is_true() {
            Retention::RemoveAll
        } else {
            Retention::KeepAll
        });
    }
    if let Ok(keep) = value.extract::<KeepJobs>() {
        return Ok(keep.inner);
    }
    match value.extract::<i64>() {
        Ok(n) if n >= 0 => Ok(Retention::Keep {
            count: Some(n as u64),
            age: None,
            limit: None,
        }),
        _ => Err(invalid(
            field,
            value.repr()?,
            "must be True, False, a count >= 0 or KeepJobs",
        )),
    }
}

/// Options of one job (also accepted as keywords by `add`).
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct JobOptions {
    pub inner: core::JobOptions,
}

#[pymethods]
impl JobOptions {
    #[new]
    #[pyo3(signature = (job_id=None, priority=Int::of(0), lifo=false, delay=0.0, attempts=Int::of(1),
        backoff=None, timeout=None, remove_on_complete=None, remove_on_fail=None,
        max_stalled_count=Int::of(1)),
        text_signature = "(job_id=None, priority=0, lifo=False, delay=0.0, attempts=1, backoff=None, \
            timeout=None, remove_on_complete=None, remove_on_fail=None, max_stalled_count=1)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        job_id: Option<String>,
        priority: Int,
        lifo: bool,
        delay: f64,
        attempts: Int,
        backoff: Option<Backoff>,
        timeout: Option<f64>,
        remove_on_complete: Option<&Bound<'_, PyAny>>,
        remove_on_fail: Option<&Bound<'_, PyAny>>,
        max_stalled_count: Int,
    ) -> PyResult<Self> {
        let priority = priority.get("priority")?;
        let attempts = attempts.get("attempts")?;
        let max_stalled_count = max_stalled_count.get("max_stalled_count")?;
        if priority < 0 || priority > i64::from(core::MAX_PRIORITY) {
            return Err(invalid(
                "priority",
                priority,
                &format!("must be between 0 and {}", core::MAX_PRIORITY),
            ));
        }
        if attempts < 1 {
            return Err(invalid("attempts", attempts, "must be at least 1"));
        }
        let timeout = match timeout {
            Some(t) if t <= 0.0 || !t.is_finite() => {
                return Err(invalid("timeout", t, "must be > 0 seconds"))
            }
            Some(t) => Some(seconds_to_millis("timeout", t)?.max(1)),
            None => None,
        };
        let inner = core::JobOptions {
            job_id,
            priority: priority as u32,
            lifo,
            delay: seconds_to_millis("delay", delay)?,
            attempts: count("attempts", attempts, 1)?,
            backoff: backoff.map(|b| b.inner),
            timeout,
            remove_on_complete: retention("remove_on_complete", remove_on_complete)?,
            remove_on_fail: retention("remove_on_fail", remove_on_fail)?,
            max_stalled_count: count("max_stalled_count", max_stalled_count, 0)?,
            dedup: None,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }

    #[getter]
    fn job_id(&self) -> Option<&str> {
        self.inner.job_id.as_deref()
    }
    #[getter]
    fn priority(&self) -> u32 {
        self.inner.priority
    }
    #[getter]
    fn lifo(&self) -> bool {
        self.inner.lifo
    }
    #[getter]
    fn delay(&self) -> f64 {
        millis_to_seconds(self.inner.delay)
    }
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.inner.backoff.clone().map(|inner| Backoff { inner })
    }
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.inner.timeout.map(millis_to_seconds)
    }
    #[getter]
    fn max_stalled_count(&self) -> u32 {
        self.inner.max_stalled_count
    }
    /// The options as JSON (as backends store them).
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner).unwrap_or_default()
    }
    fn __repr__(&self) -> String {
        format!("JobOptions({})", self.to_json())
    }
}
