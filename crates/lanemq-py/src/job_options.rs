//! `JobOptions`, `Backoff`, `KeepJobs` and `Dedup`: job options validated on construction, so a
//! bad value raises before anything is written.

use lanemq_core::jobs::{self as core, BackoffKind, Retention};
use pyo3::prelude::*;

use crate::bridge::{count, millis_to_seconds, seconds_to_millis, text, Int, Seconds};
use crate::core_args::{CoreArg, Text};
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
                name: None,
            },
        })
    }

    /// The strategy registered as `name` on the worker (`JobWorker(backoff_strategies=...)`)
    /// computes each retry's delay; only the name is stored with the job.
    #[staticmethod]
    fn custom(name: &Bound<'_, PyAny>) -> PyResult<Self> {
        let name = text("backoff strategy name", name)?;
        if name.is_empty() {
            return Err(invalid(
                "backoff strategy name",
                "''",
                "must be a non-empty string",
            ));
        }
        Ok(Self {
            inner: core::Backoff {
                kind: BackoffKind::Custom,
                delay: 0,
                jitter: 0.0,
                name: Some(name),
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
            name: None,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }

    /// `"fixed"`, `"exponential"` or `"custom"`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.inner.kind {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Exponential => "exponential",
            BackoffKind::Custom => "custom",
        }
    }
    /// The worker's strategy a custom backoff names (None for the others).
    #[getter]
    fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }
    /// The base delay in seconds (the fixed delay, or the first exponential one; 0 for custom).
    #[getter]
    fn delay(&self) -> f64 {
        millis_to_seconds(self.inner.delay)
    }
    /// Up to this fraction (0..1) of each exponential delay is taken off at random.
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
        if let Some(name) = &self.inner.name {
            return format!("Backoff.custom({name:?})");
        }
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

/// Deduplication: while the key `id` is held, adding a job with the same id adds nothing and
/// returns the job holding it. Without `ttl` (seconds) the key is held until that job finishes;
/// with it, for `ttl` seconds whatever happens to the job (throttle). `extend` restarts the ttl
/// on every duplicate (debounce); `replace` replaces a holder that is still delayed with the new
/// job; `keep_last` keeps the latest duplicate added while the holder is active and adds it once
/// the holder finishes.
#[pyclass(frozen, eq, hash, from_py_object, module = "lanemq._core")]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Dedup {
    pub inner: core::Dedup,
}

#[pymethods]
impl Dedup {
    #[new]
    #[pyo3(signature = (id, ttl=None, extend=false, replace=false, keep_last=false))]
    fn new(
        id: Text,
        ttl: Option<f64>,
        extend: bool,
        replace: bool,
        keep_last: bool,
    ) -> PyResult<Self> {
        let id = id.core("dedup id")?;
        let ttl = match ttl {
            Some(t) if t <= 0.0 || !t.is_finite() => {
                return Err(invalid("dedup ttl", t, "must be > 0 seconds"))
            }
            Some(t) => Some(seconds_to_millis("dedup ttl", t)?.max(1)),
            None => None,
        };
        let inner = core::Dedup {
            id,
            ttl,
            extend,
            replace,
            keep_last,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }

    /// The deduplication key: an add with the same id while it is held adds nothing.
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }
    /// Seconds, or None.
    #[getter]
    fn ttl(&self) -> Option<f64> {
        self.inner.ttl.map(millis_to_seconds)
    }
    /// Whether each duplicate restarts the ttl (debounce).
    #[getter]
    fn extend(&self) -> bool {
        self.inner.extend
    }
    /// Whether a duplicate replaces a holder that is still delayed.
    #[getter]
    fn replace(&self) -> bool {
        self.inner.replace
    }
    /// Whether the latest duplicate added while the holder runs is added once it finishes.
    #[getter]
    fn keep_last(&self) -> bool {
        self.inner.keep_last
    }
    fn __repr__(&self) -> String {
        let d = &self.inner;
        let mut out = format!("Dedup({:?}", d.id);
        if let Some(ttl) = d.ttl {
            out.push_str(&format!(", ttl={}", millis_to_seconds(ttl)));
        }
        for (flag, name) in [
            (d.extend, "extend"),
            (d.replace, "replace"),
            (d.keep_last, "keep_last"),
        ] {
            if flag {
                out.push_str(&format!(", {name}=True"));
            }
        }
        out.push(')');
        out
    }
}

/// `None` or a `Dedup`; anything else is a `TypeError` naming it.
fn dedup(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<core::Dedup>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    match value.extract::<Dedup>() {
        Ok(d) => Ok(Some(d.inner)),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "dedup must be a Dedup or None, got {}",
            value.repr()?
        ))),
    }
}

/// Options of one job (also accepted as keywords by `add`). Equal options compare equal.
#[pyclass(frozen, eq, from_py_object, module = "lanemq._core")]
#[derive(Clone, PartialEq)]
pub struct JobOptions {
    pub inner: core::JobOptions,
}

#[pymethods]
impl JobOptions {
    #[new]
    #[pyo3(signature = (job_id=None, priority=Int::of(0), lifo=false, delay=Seconds::of(0.0), attempts=Int::of(1),
        backoff=None, timeout=None, remove_on_complete=None, remove_on_fail=None,
        max_stalled_count=Int::of(1), dedup=None, parent_policy=None, fail_parent_on_failure=false,
        ignore_dependency_on_failure=false, remove_dependency_on_failure=false,
        continue_parent_on_failure=false, telemetry=None, group=None,
        max_started_attempts=None, stack_trace_limit=None),
        text_signature = "(job_id=None, priority=0, lifo=False, delay=0.0, attempts=1, backoff=None, \
            timeout=None, remove_on_complete=None, remove_on_fail=None, max_stalled_count=1, \
            dedup=None, parent_policy=None, fail_parent_on_failure=False, \
            ignore_dependency_on_failure=False, remove_dependency_on_failure=False, \
            continue_parent_on_failure=False, telemetry=None, group=None, \
            max_started_attempts=None, stack_trace_limit=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        job_id: Option<&Bound<'_, PyAny>>,
        priority: Int,
        lifo: bool,
        delay: Seconds,
        attempts: Int,
        backoff: Option<&Bound<'_, PyAny>>,
        timeout: Option<Seconds>,
        remove_on_complete: Option<&Bound<'_, PyAny>>,
        remove_on_fail: Option<&Bound<'_, PyAny>>,
        max_stalled_count: Int,
        dedup: Option<&Bound<'_, PyAny>>,
        parent_policy: Option<Text>,
        fail_parent_on_failure: bool,
        ignore_dependency_on_failure: bool,
        remove_dependency_on_failure: bool,
        continue_parent_on_failure: bool,
        telemetry: Option<&Bound<'_, PyAny>>,
        group: Option<Text>,
        max_started_attempts: Option<Int>,
        stack_trace_limit: Option<Int>,
    ) -> PyResult<Self> {
        let flags = [
            fail_parent_on_failure,
            ignore_dependency_on_failure,
            remove_dependency_on_failure,
            continue_parent_on_failure,
        ];
        let parent_policy = parent_policy.core("parent_policy")?;
        let parent_policy =
            core::ParentPolicy::from_options(parent_policy.as_deref(), flags).map_err(to_py)?;
        // An empty custom id is no custom id: the job takes the next automatic one (BullMQ).
        let job_id = job_id
            .map(job_id_text)
            .transpose()?
            .filter(|id| !id.is_empty());
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
        let delay = delay.get("delay")?;
        let timeout = timeout.map(|t| t.get("timeout")).transpose()?;
        let backoff = backoff.map(backoff_of).transpose()?;
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
            dedup: self::dedup(dedup)?,
            scheduler: None,
            parent_policy,
            parent: None,
            telemetry: telemetry_of(telemetry)?,
            group: group.core("group")?,
            max_started_attempts: max_started_attempts
                .map(|n| count("max_started_attempts", n.get("max_started_attempts")?, 1))
                .transpose()?,
            stack_trace_limit: stack_trace_limit
                .map(|n| count("stack_trace_limit", n.get("stack_trace_limit")?, 0))
                .transpose()?,
        };
        inner.validate().map_err(to_py)?;
        Ok(Self { inner })
    }

    /// These options with the trace context ``carrier`` (a propagator's ``dict[str, str]``;
    /// None or empty: none): a copy, checked only for the carrier, so it also works on the
    /// options of a job a queue returned.
    fn with_telemetry(&self, carrier: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let telemetry = telemetry_of(carrier)?;
        if let Some(telemetry) = &telemetry {
            core::validate_telemetry(telemetry).map_err(to_py)?;
        }
        Ok(Self {
            inner: core::JobOptions {
                telemetry,
                ..self.inner.clone()
            },
        })
    }

    /// The producer's trace context as a propagator's carrier, or None.
    #[getter]
    fn telemetry(&self) -> Option<core::Telemetry> {
        self.inner.telemetry.clone()
    }

    /// The job's group (`add(..., group=...)`), or None.
    #[getter]
    fn group(&self) -> Option<&str> {
        self.inner.group.as_deref()
    }
    /// Starts after which the job fails instead of starting again, or None.
    #[getter]
    fn max_started_attempts(&self) -> Option<u32> {
        self.inner.max_started_attempts
    }
    /// How many stack traces the job keeps (None: the default, 10).
    #[getter]
    fn stack_trace_limit(&self) -> Option<u32> {
        self.inner.stack_trace_limit
    }

    /// The custom job id, or None for an automatic one.
    #[getter]
    fn job_id(&self) -> Option<&str> {
        self.inner.job_id.as_deref()
    }
    /// 0 (none, first) or 1 to 2,097,151, lower first.
    #[getter]
    fn priority(&self) -> u32 {
        self.inner.priority
    }
    /// Whether the job goes to the front of its priority instead of the back.
    #[getter]
    fn lifo(&self) -> bool {
        self.inner.lifo
    }
    /// Seconds to wait before the job becomes ready.
    #[getter]
    fn delay(&self) -> f64 {
        millis_to_seconds(self.inner.delay)
    }
    /// How many times the job may run (1: no retry).
    #[getter]
    fn attempts(&self) -> u32 {
        self.inner.attempts
    }
    /// The wait before each retry (`Backoff`), or None to retry at once.
    #[getter]
    fn backoff(&self) -> Option<Backoff> {
        self.inner.backoff.clone().map(|inner| Backoff { inner })
    }
    /// Seconds an attempt may run before it fails with `TimeoutError`, or None.
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.inner.timeout.map(millis_to_seconds)
    }
    /// Stalls (lease expiries) after which the job fails instead of running again.
    #[getter]
    fn max_stalled_count(&self) -> u32 {
        self.inner.max_stalled_count
    }
    /// The job's `Dedup` key and mode, or None.
    #[getter]
    fn dedup(&self) -> Option<Dedup> {
        self.inner.dedup.clone().map(|inner| Dedup { inner })
    }
    /// The key of the job scheduler that produced this job (set on occurrences only).
    #[getter]
    fn scheduler(&self) -> Option<&str> {
        self.inner.scheduler.as_deref()
    }
    /// What this job's terminal failure does to its flow parent (None: fail it).
    #[getter]
    fn parent_policy(&self) -> Option<&'static str> {
        self.inner.parent_policy.map(|p| p.as_str())
    }
    /// The options as JSON (as backends store them).
    fn to_json(&self) -> String {
        serde_json::to_string(&self.inner).unwrap_or_default()
    }
    fn __repr__(&self) -> String {
        format!("JobOptions({})", self.to_json())
    }
    /// Consistent with `==`: equal options have the same JSON.
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.to_json().hash(&mut hasher);
        hasher.finish()
    }
}

/// The ``telemetry`` option: None, or a dict of str to str (an empty one is none).
fn telemetry_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<core::Telemetry>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let bad = || {
        invalid(
            "telemetry",
            value.repr().map_or_else(|_| "?".into(), |r| r.to_string()),
            "must be a dict of str to str, or None",
        )
    };
    let dict = value.cast::<pyo3::types::PyDict>().map_err(|_| bad())?;
    let mut carrier = core::Telemetry::new();
    for (key, entry) in dict.iter() {
        let (Ok(key), Ok(entry)) = (key.extract::<String>(), entry.extract::<String>()) else {
            return Err(bad());
        };
        carrier.insert(key, entry);
    }
    Ok((!carrier.is_empty()).then_some(carrier))
}

/// A custom job id: a string (integers are refused by name, not as a `TypeError`: numeric ids
/// are the automatic ones, so a custom id must not look like one).
fn job_id_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<pyo3::types::PyInt>() {
        return Err(invalid(
            "job_id",
            value.repr()?,
            "must be a string; integer ids are reserved for automatic ids",
        ));
    }
    text("job_id", value)
}

/// The `backoff` option: a `Backoff`, or a `ConfigError` saying how to make one.
fn backoff_of(value: &Bound<'_, PyAny>) -> PyResult<Backoff> {
    value.extract::<Backoff>().map_err(|_| {
        invalid(
            "backoff",
            value.repr().map_or_else(|_| "?".into(), |r| r.to_string()),
            "must be a Backoff: Backoff.fixed(seconds), Backoff.exponential(seconds) or Backoff.custom(name)",
        )
    })
}
