//! The arguments of `JobQueueCore`'s forwards (`job_queue_forwards`) as Python gives them, and
//! their conversion to the core's units (`CoreArg`): seconds to milliseconds, an omitted `now`
//! to the wall clock, state names to states. A refusal is the `ConfigError` (or the builtin
//! error) that `lanemq.queue` raised when it did these conversions itself, word for word, so
//! the public API did not change when they moved here.

use lanemq_core::jobs::metrics::{MetricsKind, MAX_DATA_POINTS};
use lanemq_core::jobs::{JobFilter, JobState, Millis, MAX_PRIORITY};
use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt};

use crate::bridge::{count, wall_clock_ms, Int};
use crate::errors::{invalid, to_py, ConfigError};

/// An argument as it arrives, converted to what the backend's method takes; `field` is the
/// argument's name, for a refusal.
pub trait CoreArg {
    type Core;
    fn core(self, field: &str) -> PyResult<Self::Core>;
}

/// Arguments the backend takes as they come.
macro_rules! as_they_come {
    ($($ty:ty),* $(,)?) => {$(
        impl CoreArg for $ty {
            type Core = $ty;
            fn core(self, _field: &str) -> PyResult<$ty> {
                Ok(self)
            }
        }
    )*};
}

as_they_come!(
    String,
    bool,
    u64,
    usize,
    i64,
    Option<String>,
    Option<usize>,
    Vec<String>,
    Vec<u32>,
    [usize; 4],
    (usize, usize),
);

/// Text as Rust holds it (UTF-8). A `str` holding a lone surrogate, which UTF-8 cannot encode,
/// is kept as its (shortened) repr, so that `core` refuses it with a `ConfigError` naming the
/// field and the value, where plain extraction raises a bare `UnicodeEncodeError`: the one
/// place every text argument of the bindings is checked.
pub struct Text(Result<String, String>);

/// The longest repr of a refused text a message shows (a log line may be megabytes).
const SHOWN_CHARS: usize = 80;

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match value.extract::<String>() {
            Ok(text) => Ok(Self(Ok(text))),
            Err(e) if e.is_instance_of::<PyUnicodeEncodeError>(value.py()) => {
                let shown = value.repr()?.to_string();
                if shown.chars().count() <= SHOWN_CHARS {
                    return Ok(Self(Err(shown)));
                }
                let head: String = shown.chars().take(SHOWN_CHARS - 3).collect();
                Ok(Self(Err(format!("{head}..."))))
            }
            Err(e) => Err(e),
        }
    }
}

impl CoreArg for Text {
    type Core = String;
    fn core(self, field: &str) -> PyResult<String> {
        self.0.map_err(|shown| {
            invalid(
                field,
                shown,
                "holds a lone surrogate, which is not valid Unicode text",
            )
        })
    }
}

impl CoreArg for Option<Text> {
    type Core = Option<String>;
    fn core(self, field: &str) -> PyResult<Option<String>> {
        self.map(|text| text.core(field)).transpose()
    }
}

impl CoreArg for Vec<Text> {
    type Core = Vec<String>;
    fn core(self, field: &str) -> PyResult<Vec<String>> {
        self.into_iter().map(|text| text.core(field)).collect()
    }
}

/// `now` in ms since the epoch; omitted (None), the wall clock at the call.
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct Now(u64);

impl CoreArg for Option<Now> {
    type Core = Millis;
    fn core(self, _field: &str) -> PyResult<Millis> {
        Ok(self.map_or_else(wall_clock_ms, |Now(ms)| ms))
    }
}

/// Python's `round` (ties to even) of `seconds * 1000`, as `lanemq.queue` computed it. A value
/// no millisecond count can hold (infinite, or past 2^64 ms) is refused, naming `field`.
fn round_millis(field: &str, seconds: f64) -> PyResult<Millis> {
    let millis = (seconds * 1000.0).round_ties_even();
    // (NaN never gets here: the callers refuse it; infinity is >= any bound.)
    if millis >= 18_446_744_073_709_551_616.0 {
        return Err(ConfigError::new_err(format!(
            "invalid {field}: {seconds:?} seconds (too long: a time in milliseconds must fit 64 \
             bits)"
        )));
    }
    Ok(millis as Millis)
}

/// A number of seconds >= 0, as whole milliseconds. A refused value (negative, NaN) keeps its
/// text (`str`) for the message.
pub struct Secs(Result<f64, String>);

impl<'a, 'py> FromPyObject<'a, 'py> for Secs {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let seconds: f64 = value.extract()?;
        if seconds >= 0.0 {
            return Ok(Self(Ok(seconds)));
        }
        Ok(Self(Err(value.str()?.to_string())))
    }
}

impl CoreArg for Secs {
    type Core = Millis;
    fn core(self, field: &str) -> PyResult<Millis> {
        match self.0 {
            Ok(seconds) => round_millis(field, seconds),
            Err(shown) => Err(ConfigError::new_err(format!(
                "invalid {field}: {shown} (must be >= 0 seconds)"
            ))),
        }
    }
}

impl CoreArg for Option<Secs> {
    type Core = Option<Millis>;
    fn core(self, field: &str) -> PyResult<Option<Millis>> {
        self.map(|seconds| seconds.core(field)).transpose()
    }
}

/// The wait of `rate_limit`: seconds > 0 (a bool or a value that is not a number refused),
/// whole milliseconds, at least 1; the core refuses a wait ending past 2^53 ms, where times
/// stop being exact.
pub struct RateWait(Result<f64, String>);

impl<'a, 'py> FromPyObject<'a, 'py> for RateWait {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let shown = || -> PyResult<String> { Ok(value.repr()?.to_string()) };
        let number = !value.is_instance_of::<PyBool>()
            && (value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>());
        if !number {
            return Ok(Self(Err(format!("{} (must be > 0 seconds)", shown()?))));
        }
        let Ok(seconds) = value.extract::<f64>() else {
            // An int too large for a float is far too long a wait.
            return Ok(Self(Err(format!("{} seconds (too long)", shown()?))));
        };
        if seconds.is_nan() || seconds <= 0.0 {
            return Ok(Self(Err(format!("{} (must be > 0 seconds)", shown()?))));
        }
        if seconds * 1000.0 >= 9_007_199_254_740_992.0 {
            return Ok(Self(Err(format!("{} seconds (too long)", shown()?))));
        }
        Ok(Self(Ok(seconds)))
    }
}

impl CoreArg for RateWait {
    type Core = Millis;
    fn core(self, _field: &str) -> PyResult<Millis> {
        match self.0 {
            Ok(seconds) => Ok(round_millis("rate limit wait", seconds)?.max(1)),
            Err(why) => Err(ConfigError::new_err(format!(
                "invalid rate limit wait: {why}"
            ))),
        }
    }
}

/// The criteria of `search_jobs` and `remove_jobs`, as `lanemq.jobs.search` passes them:
/// `(name, text, data paths, the JSON of their values, older_than, newer_than)`, ages in
/// seconds.
#[derive(FromPyObject)]
pub struct Criteria(
    Option<Text>,
    Option<Text>,
    Vec<Text>,
    Vec<String>,
    Option<Secs>,
    Option<Secs>,
);

impl CoreArg for Criteria {
    type Core = JobFilter;
    fn core(self, _field: &str) -> PyResult<JobFilter> {
        let Criteria(name, text, paths, values, older_than, newer_than) = self;
        let paths = paths.core("data path")?;
        Ok(JobFilter {
            name: name.core("name")?,
            text: text.core("text")?,
            data: paths.into_iter().zip(values).collect(),
            older_than: older_than.core("older_than")?,
            newer_than: newer_than.core("newer_than")?,
        })
    }
}

/// State names (`waiting`, `delayed`, ...), each parsed.
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct States(Vec<String>);

impl CoreArg for States {
    type Core = Vec<JobState>;
    /// Each state once, in the order first named: a state named twice lists (or counts) its
    /// jobs once, on every backend.
    fn core(self, _field: &str) -> PyResult<Vec<JobState>> {
        let mut states = Vec::with_capacity(self.0.len());
        for name in &self.0 {
            let state = JobState::parse(name).map_err(to_py)?;
            if !states.contains(&state) {
                states.push(state);
            }
        }
        Ok(states)
    }
}

/// One state name.
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct State(String);

impl CoreArg for State {
    type Core = JobState;
    fn core(self, _field: &str) -> PyResult<JobState> {
        JobState::parse(&self.0).map_err(to_py)
    }
}

/// A count from 1 to `u32::MAX` (a rate limit's `max`). An `Int`, so that a value that is not
/// an integer (NaN, a float, a bool) is refused naming the field, not by the extraction.
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct Positive(Int);

impl CoreArg for Positive {
    type Core = u32;
    fn core(self, field: &str) -> PyResult<u32> {
        count(field, self.0.get(field)?, 1)
    }
}

impl CoreArg for Option<Positive> {
    type Core = Option<u32>;
    fn core(self, field: &str) -> PyResult<Option<u32>> {
        self.map(|max| max.core(field)).transpose()
    }
}

/// A group's name (`lanemq_core::jobs::validate_group`).
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct Group(Text);

impl CoreArg for Group {
    type Core = String;
    fn core(self, field: &str) -> PyResult<String> {
        let group = self.0.core(field)?;
        lanemq_core::jobs::validate_group(&group).map_err(to_py)?;
        Ok(group)
    }
}

/// A job's priority: 0 to `MAX_PRIORITY`.
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct Priority(Int);

impl CoreArg for Priority {
    type Core = u32;
    fn core(self, field: &str) -> PyResult<u32> {
        let priority = self.0.get(field)?;
        let max = i64::from(MAX_PRIORITY);
        if !(0..=max).contains(&priority) {
            return Err(invalid(
                field,
                priority,
                &format!("must be between 0 and {max}"),
            ));
        }
        Ok(priority as u32)
    }
}

/// A metrics kind: "completed" or "failed".
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct Kind(String);

impl CoreArg for Kind {
    type Core = MetricsKind;
    fn core(self, _field: &str) -> PyResult<MetricsKind> {
        MetricsKind::parse(&self.0).map_err(to_py)
    }
}

/// `(minute start ms, count)` pairs, each an integer >= 0 (the core checks the rest).
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct MinuteCounts(Vec<(Int, Int)>);

impl CoreArg for MinuteCounts {
    type Core = Vec<(Millis, u64)>;
    fn core(self, field: &str) -> PyResult<Vec<(Millis, u64)>> {
        self.0
            .iter()
            .map(|(minute, n)| {
                let (minute, n) = (minute.get(field)?, n.get(field)?);
                if minute < 0 || n < 0 {
                    return Err(invalid(
                        field,
                        format!("({minute}, {n})"),
                        "a minute and a count must be integers >= 0",
                    ));
                }
                Ok((minute as Millis, n as u64))
            })
            .collect()
    }
}

/// How many minutes a metrics series keeps: 1 to `MAX_DATA_POINTS` (`check_max_data_points`'
/// range, refused here with the value as given, a negative one too).
#[derive(FromPyObject)]
#[pyo3(transparent)]
pub struct DataPoints(Int);

impl CoreArg for DataPoints {
    type Core = usize;
    fn core(self, field: &str) -> PyResult<usize> {
        let points = self.0.get(field)?;
        if points < 1 || points > MAX_DATA_POINTS as i64 {
            return Err(invalid(
                field,
                points,
                &format!("must be from 1 to {MAX_DATA_POINTS}"),
            ));
        }
        Ok(points as usize)
    }
}

/// Pairs that Python receives as a `dict`, in their order.
pub struct Dict<K, V>(pub Vec<(K, V)>);

impl<'py, K, V> IntoPyObject<'py> for Dict<K, V>
where
    K: IntoPyObject<'py>,
    V: IntoPyObject<'py>,
{
    type Target = PyDict;
    type Output = Bound<'py, PyDict>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (key, value) in self.0 {
            dict.set_item(key, value)?;
        }
        Ok(dict)
    }
}
