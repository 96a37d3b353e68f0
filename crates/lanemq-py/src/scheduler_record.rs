//! `SchedulerRecord`: a snapshot of one job scheduler as a backend returned it, and the
//! `ScheduleSpec` built from the arguments of an upsert. The Python `JobScheduler` wraps it.

use lanemq_core::jobs::JobScheduler;
use lanemq_core::schedule::{Repeat, ScheduleSpec, DEFAULT_TZ};
use pyo3::prelude::*;

use crate::errors::invalid;
use crate::job_options::JobOptions;

/// The schedule of an upsert: exactly one of `every` (ms) and `cron`; the rest is checked by
/// the core (`ScheduleSpec::validate`), whose errors name the value.
#[allow(clippy::too_many_arguments)]
pub fn spec(
    every: Option<u64>,
    cron: Option<String>,
    tz: String,
    limit: Option<i64>,
    start: Option<u64>,
    end: Option<u64>,
    immediately: bool,
) -> PyResult<ScheduleSpec> {
    let repeat = match (every, cron) {
        (Some(every), None) => {
            if tz != DEFAULT_TZ {
                return Err(invalid(
                    "tz",
                    format!("{tz:?}"),
                    "a time zone applies only to a cron schedule",
                ));
            }
            Repeat::Every { every }
        }
        (None, Some(expr)) => Repeat::Cron { expr, tz },
        (Some(every), Some(expr)) => {
            return Err(invalid(
                "schedule",
                format!("every={every} ms and cron={expr:?}"),
                "give exactly one of every and cron",
            ))
        }
        (None, None) => {
            return Err(invalid(
                "schedule",
                "neither every nor cron",
                "give exactly one of every and cron",
            ))
        }
    };
    let limit = match limit {
        Some(n) if n < 1 => return Err(invalid("limit", n, "must be at least 1")),
        other => other.map(|n| n as u64),
    };
    Ok(ScheduleSpec {
        repeat,
        limit,
        start,
        end,
        immediately,
    })
}

#[pyclass(frozen, module = "lanemq._core")]
pub struct SchedulerRecord {
    inner: JobScheduler,
}

impl From<JobScheduler> for SchedulerRecord {
    fn from(inner: JobScheduler) -> Self {
        Self { inner }
    }
}

#[pymethods]
impl SchedulerRecord {
    #[getter]
    fn key(&self) -> &str {
        &self.inner.key
    }
    /// Milliseconds, for an interval schedule.
    #[getter]
    fn every(&self) -> Option<u64> {
        match &self.inner.spec.repeat {
            Repeat::Every { every } => Some(*every),
            Repeat::Cron { .. } => None,
        }
    }
    #[getter]
    fn cron(&self) -> Option<&str> {
        match &self.inner.spec.repeat {
            Repeat::Cron { expr, .. } => Some(expr),
            Repeat::Every { .. } => None,
        }
    }
    /// The zone of a cron schedule.
    #[getter]
    fn tz(&self) -> Option<&str> {
        match &self.inner.spec.repeat {
            Repeat::Cron { tz, .. } => Some(tz),
            Repeat::Every { .. } => None,
        }
    }
    #[getter]
    fn limit(&self) -> Option<u64> {
        self.inner.spec.limit
    }
    #[getter]
    fn start(&self) -> Option<u64> {
        self.inner.spec.start
    }
    #[getter]
    fn end(&self) -> Option<u64> {
        self.inner.spec.end
    }
    #[getter]
    fn immediately(&self) -> bool {
        self.inner.spec.immediately
    }
    #[getter]
    fn name(&self) -> &str {
        &self.inner.template.name
    }
    /// The template's payload as JSON text.
    #[getter]
    fn data(&self) -> &str {
        &self.inner.template.data
    }
    #[getter]
    fn options(&self) -> JobOptions {
        JobOptions {
            inner: self.inner.template.options.clone(),
        }
    }
    #[getter]
    fn iteration_count(&self) -> u64 {
        self.inner.iteration_count
    }
    #[getter]
    fn next_run(&self) -> u64 {
        self.inner.next_run
    }
    #[getter]
    fn job_id(&self) -> Option<&str> {
        self.inner.job_id.as_deref()
    }
    /// The schedule as the backends store it (JSON).
    fn spec_json(&self) -> String {
        serde_json::to_string(&self.inner.spec).unwrap_or_default()
    }
    fn __repr__(&self) -> String {
        format!(
            "SchedulerRecord(key={:?}, next_run={}, job_id={:?})",
            self.inner.key, self.inner.next_run, self.inner.job_id
        )
    }
}
