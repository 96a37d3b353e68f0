//! Lane configuration classes. Each validates on construction, so a bad value raises
//! `ConfigError` (a `ValueError`) naming it, before any manager exists.

use lanemq_core::lanes as core;
use pyo3::prelude::*;

use crate::bridge::{count, micros_to_seconds, positive_seconds, seconds_to_micros, Int, Seconds};
use crate::core_args::{CoreArg, Text};
use crate::errors::{invalid, to_py};

/// How a failed lane command is retried: `max_retries` retries after the first run.
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct RetryPolicy {
    pub inner: core::RetryPolicy,
}

#[pymethods]
impl RetryPolicy {
    #[new]
    #[pyo3(signature = (max_retries, initial_delay, multiplier=1.0, max_delay=None))]
    fn new(
        max_retries: i64,
        initial_delay: f64,
        multiplier: f64,
        max_delay: Option<f64>,
    ) -> PyResult<Self> {
        let initial = seconds_to_micros("initial_delay", initial_delay)?;
        let inner = core::RetryPolicy {
            max_retries: count("max_retries", max_retries, 0)?,
            initial_delay: initial,
            multiplier,
            max_delay: match max_delay {
                Some(seconds) => seconds_to_micros("max_delay", seconds)?,
                None => initial.max(30_000_000),
            },
        };
        if !multiplier.is_finite() || multiplier < 1.0 {
            return Err(invalid(
                "multiplier",
                multiplier,
                "must be a finite number >= 1",
            ));
        }
        if inner.max_delay < inner.initial_delay {
            return Err(invalid(
                "max_delay",
                max_delay.unwrap_or_default(),
                "must be >= initial_delay",
            ));
        }
        Ok(Self { inner })
    }

    /// No retry: the first failure is final.
    #[staticmethod]
    fn none() -> Self {
        Self {
            inner: core::RetryPolicy::none(),
        }
    }

    /// Waits 100 ms, 200 ms, 400 ms, ... (capped at 30 s) between `max_retries` retries.
    #[staticmethod]
    fn exponential(max_retries: i64) -> PyResult<Self> {
        Ok(Self {
            inner: core::RetryPolicy::exponential(count("max_retries", max_retries, 0)?),
        })
    }

    /// Waits `delay` seconds between `max_retries` retries.
    #[staticmethod]
    #[pyo3(signature = (max_retries, delay=1.0))]
    fn fixed(max_retries: i64, delay: f64) -> PyResult<Self> {
        let max_retries = count("max_retries", max_retries, 0)?;
        Ok(Self {
            inner: core::RetryPolicy::fixed(max_retries, seconds_to_micros("delay", delay)?),
        })
    }

    /// How many times a failed command is retried (0: never).
    #[getter]
    fn max_retries(&self) -> u32 {
        self.inner.max_retries
    }
    /// Seconds before the first retry.
    #[getter]
    fn initial_delay(&self) -> f64 {
        micros_to_seconds(self.inner.initial_delay)
    }
    /// What each retry's delay is multiplied by for the next (1.0: a fixed delay).
    #[getter]
    fn multiplier(&self) -> f64 {
        self.inner.multiplier
    }
    /// The cap on a retry's delay, in seconds.
    #[getter]
    fn max_delay(&self) -> f64 {
        micros_to_seconds(self.inner.max_delay)
    }

    /// Seconds to wait before retry number `retry` (1-based).
    fn delay_for(&self, retry: i64) -> PyResult<f64> {
        Ok(micros_to_seconds(
            self.inner.delay_for(count("retry", retry, 1)?),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "RetryPolicy(max_retries={}, initial_delay={}, multiplier={}, max_delay={})",
            self.inner.max_retries,
            micros_to_seconds(self.inner.initial_delay),
            self.inner.multiplier,
            micros_to_seconds(self.inner.max_delay)
        )
    }
}

/// At most `permits` command starts per `per` seconds (a token bucket; bursts up to `permits`).
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct RateLimit {
    pub inner: core::RateLimit,
}

impl RateLimit {
    fn build(permits: i64, per: core::Micros) -> PyResult<Self> {
        Ok(Self {
            inner: core::RateLimit {
                permits: count("permits", permits, 1)?,
                per,
            },
        })
    }
}

#[pymethods]
impl RateLimit {
    #[new]
    fn new(permits: i64, per: f64) -> PyResult<Self> {
        Self::build(permits, positive_seconds("per", per)?)
    }
    /// At most `permits` command starts per second.
    #[staticmethod]
    fn per_second(permits: i64) -> PyResult<Self> {
        Self::build(permits, 1_000_000)
    }
    /// At most `permits` command starts per minute.
    #[staticmethod]
    fn per_minute(permits: i64) -> PyResult<Self> {
        Self::build(permits, 60_000_000)
    }
    /// At most `permits` command starts per hour.
    #[staticmethod]
    fn per_hour(permits: i64) -> PyResult<Self> {
        Self::build(permits, 3_600_000_000)
    }
    /// How many command starts each window allows (also the largest burst).
    #[getter]
    fn permits(&self) -> u32 {
        self.inner.permits
    }
    /// The window, in seconds.
    #[getter]
    fn per(&self) -> f64 {
        micros_to_seconds(self.inner.per)
    }
    fn __repr__(&self) -> String {
        format!(
            "RateLimit(permits={}, per={})",
            self.inner.permits,
            micros_to_seconds(self.inner.per)
        )
    }
}

/// Lowers a lane's priority number while its oldest pending command nears `deadline` seconds
/// of waiting, so old low-priority work eventually overtakes newer high-priority work.
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct PriorityBoost {
    pub inner: Option<core::PriorityBoost>,
}

#[pymethods]
impl PriorityBoost {
    /// Boosts by 1, 2, 3 when 75 %, 50 %, 25 % of the deadline remains.
    #[staticmethod]
    fn standard(deadline: f64) -> PyResult<Self> {
        let deadline = positive_seconds("deadline", deadline)?;
        Ok(Self {
            inner: Some(core::PriorityBoost::standard(deadline)),
        })
    }
    /// Boosts by 1, 2, 3, 5 when 90 %, 75 %, 50 %, 25 % of the deadline remains.
    #[staticmethod]
    fn aggressive(deadline: f64) -> PyResult<Self> {
        let deadline = positive_seconds("deadline", deadline)?;
        Ok(Self {
            inner: Some(core::PriorityBoost::aggressive(deadline)),
        })
    }
    /// No boost: the lane keeps its priority however long its commands wait.
    #[staticmethod]
    fn disabled() -> Self {
        Self { inner: None }
    }
    /// The wait, in seconds, the boost steps are fractions of (None when disabled).
    #[getter]
    fn deadline(&self) -> Option<f64> {
        self.inner.as_ref().map(|b| micros_to_seconds(b.deadline))
    }
    /// The (remaining fraction of the deadline, boost) pairs; empty when disabled. Lanes
    /// shared by processes store them so the store boosts as the in-process dispatcher does.
    #[getter]
    fn steps(&self) -> Vec<(f64, u32)> {
        self.inner
            .as_ref()
            .map_or_else(Vec::new, |b| b.steps.clone())
    }
    /// The boost applied after waiting `waited` seconds.
    fn boost_for(&self, waited: f64) -> PyResult<u32> {
        let waited = seconds_to_micros("waited", waited)?;
        Ok(self.inner.as_ref().map_or(0, |b| b.boost_for(waited)))
    }
    fn __repr__(&self) -> String {
        match &self.inner {
            Some(b) => format!(
                "PriorityBoost(deadline={}, steps={:?})",
                micros_to_seconds(b.deadline),
                b.steps
            ),
            None => "PriorityBoost.disabled()".into(),
        }
    }
}

/// One lane: its id, priority (lower runs first), concurrency window and policies.
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct LaneConfig {
    pub inner: core::LaneConfig,
    retry: RetryPolicy,
    rate_limit: Option<RateLimit>,
    priority_boost: Option<PriorityBoost>,
}

#[pymethods]
impl LaneConfig {
    #[new]
    #[pyo3(signature = (lane_id, priority, min_concurrency=Int::of(1), max_concurrency=Int::of(1), timeout=None,
        retry=None, rate_limit=None, priority_boost=None, pressure_threshold=None),
        text_signature = "(lane_id, priority, min_concurrency=1, max_concurrency=1, timeout=None, \
            retry=None, rate_limit=None, priority_boost=None, pressure_threshold=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        lane_id: Text,
        priority: Int,
        min_concurrency: Int,
        max_concurrency: Int,
        timeout: Option<Seconds>,
        retry: Option<RetryPolicy>,
        rate_limit: Option<RateLimit>,
        priority_boost: Option<PriorityBoost>,
        pressure_threshold: Option<Int>,
    ) -> PyResult<Self> {
        let lane_id = lane_id.core("lane_id")?;
        let (priority, min_concurrency, max_concurrency) = (
            priority.get("priority")?,
            min_concurrency.get("min_concurrency")?,
            max_concurrency.get("max_concurrency")?,
        );
        let timeout = timeout.map(|t| t.get("timeout")).transpose()?;
        let pressure_threshold = pressure_threshold
            .map(|p| p.get("pressure_threshold"))
            .transpose()?;
        let retry = retry.unwrap_or_else(RetryPolicy::none);
        let inner = core::LaneConfig {
            lane_id,
            priority: count("priority", priority, 0)?,
            min_concurrency: count("min_concurrency", min_concurrency, 0)?,
            max_concurrency: count("max_concurrency", max_concurrency, 1)?,
            timeout: timeout
                .map(|t| positive_seconds("timeout", t))
                .transpose()?,
            retry: retry.inner.clone(),
            rate_limit: rate_limit.as_ref().map(|r| r.inner.clone()),
            priority_boost: priority_boost.as_ref().and_then(|b| b.inner.clone()),
            pressure_threshold: pressure_threshold
                .map(|p| count("pressure_threshold", p, 1))
                .transpose()?,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self {
            inner,
            retry,
            rate_limit,
            priority_boost,
        })
    }

    /// The lane's name, as `submit` takes it.
    #[getter]
    fn lane_id(&self) -> &str {
        &self.inner.lane_id
    }
    /// The lane's priority number: lower starts first (0 is the highest).
    #[getter]
    fn priority(&self) -> u32 {
        self.inner.priority
    }
    /// Slots reserved for this lane under the manager's global `max_concurrency`.
    #[getter]
    fn min_concurrency(&self) -> u32 {
        self.inner.min_concurrency
    }
    /// At most this many of the lane's commands run at once.
    #[getter]
    fn max_concurrency(&self) -> u32 {
        self.inner.max_concurrency
    }
    /// Seconds a command may run before `CommandTimeoutError` (None: no limit).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.inner.timeout.map(micros_to_seconds)
    }
    /// The lane's `RetryPolicy` for failed commands.
    #[getter]
    fn retry(&self) -> RetryPolicy {
        self.retry.clone()
    }
    /// The lane's `RateLimit` on command starts, or None.
    #[getter]
    fn rate_limit(&self) -> Option<RateLimit> {
        self.rate_limit.clone()
    }
    /// The lane's `PriorityBoost` for commands that wait long, or None.
    #[getter]
    fn priority_boost(&self) -> Option<PriorityBoost> {
        self.priority_boost.clone()
    }
    /// Pending commands at which a `queue.lane.pressure` event fires (None: never).
    #[getter]
    fn pressure_threshold(&self) -> Option<u32> {
        self.inner.pressure_threshold
    }
    fn __repr__(&self) -> String {
        format!(
            "LaneConfig({:?}, priority={}, min_concurrency={}, max_concurrency={})",
            self.inner.lane_id,
            self.inner.priority,
            self.inner.min_concurrency,
            self.inner.max_concurrency
        )
    }
}

/// Alert thresholds over every lane: pending depth (commands) and run latency (seconds).
#[pyclass(frozen, from_py_object, module = "lanemq._core")]
#[derive(Clone)]
pub struct AlertConfig {
    pub inner: core::AlertThresholds,
}

#[pymethods]
impl AlertConfig {
    #[new]
    #[pyo3(signature = (queue_depth_warning=None, queue_depth_critical=None,
        latency_warning=None, latency_critical=None))]
    fn new(
        queue_depth_warning: Option<i64>,
        queue_depth_critical: Option<i64>,
        latency_warning: Option<f64>,
        latency_critical: Option<f64>,
    ) -> PyResult<Self> {
        let inner = core::AlertThresholds {
            queue_depth_warning: queue_depth_warning
                .map(|v| count("queue_depth_warning", v, 1))
                .transpose()?,
            queue_depth_critical: queue_depth_critical
                .map(|v| count("queue_depth_critical", v, 1))
                .transpose()?,
            latency_warning: latency_warning
                .map(|v| positive_seconds("latency_warning", v))
                .transpose()?,
            latency_critical: latency_critical
                .map(|v| positive_seconds("latency_critical", v))
                .transpose()?,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }
    /// Pending commands in a lane at which a warning alert fires, or None.
    #[getter]
    fn queue_depth_warning(&self) -> Option<u32> {
        self.inner.queue_depth_warning
    }
    /// Pending commands in a lane at which a critical alert fires, or None.
    #[getter]
    fn queue_depth_critical(&self) -> Option<u32> {
        self.inner.queue_depth_critical
    }
    /// Run latency, in seconds, at which a warning alert fires, or None.
    #[getter]
    fn latency_warning(&self) -> Option<f64> {
        self.inner.latency_warning.map(micros_to_seconds)
    }
    /// Run latency, in seconds, at which a critical alert fires, or None.
    #[getter]
    fn latency_critical(&self) -> Option<f64> {
        self.inner.latency_critical.map(micros_to_seconds)
    }
}
