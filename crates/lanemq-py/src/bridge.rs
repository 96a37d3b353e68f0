//! Conversions between Python values and the core's units: seconds as floats on the Python
//! side, integer microseconds in the core; wall-clock milliseconds for records users read.

use std::time::{SystemTime, UNIX_EPOCH};

use lanemq_core::lanes::Micros;
use pyo3::prelude::*;

use crate::errors::invalid;

/// Seconds (finite, >= 0) to microseconds; the error names `field`.
pub fn seconds_to_micros(field: &str, seconds: f64) -> PyResult<Micros> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(invalid(
            field,
            seconds,
            "must be a finite number of seconds >= 0",
        ));
    }
    Ok((seconds * 1e6).round() as Micros)
}

/// Like `seconds_to_micros`, but zero is refused too (with one message for every refused
/// value, so it never says ">= 0" of a field that refuses 0).
pub fn positive_seconds(field: &str, seconds: f64) -> PyResult<Micros> {
    let why = "must be a finite number of seconds > 0";
    if !seconds.is_finite() || seconds <= 0.0 {
        return Err(invalid(field, seconds, why));
    }
    match (seconds * 1e6).round() as Micros {
        0 => Err(invalid(field, seconds, why)),
        micros => Ok(micros),
    }
}

/// Seconds (finite, >= 0) to whole milliseconds; the error names `field`.
pub fn seconds_to_millis(field: &str, seconds: f64) -> PyResult<u64> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(invalid(
            field,
            seconds,
            "must be a finite number of seconds >= 0",
        ));
    }
    Ok((seconds * 1e3).round() as u64)
}

pub fn millis_to_seconds(millis: u64) -> f64 {
    millis as f64 / 1e3
}

pub fn micros_to_seconds(micros: Micros) -> f64 {
    micros as f64 / 1e6
}

/// A count that must fit `u32` and be at least `min`; the error names `field`.
pub fn count(field: &str, value: i64, min: i64) -> PyResult<u32> {
    if value < min || value > i64::from(u32::MAX) {
        return Err(invalid(
            field,
            value,
            &format!("must be an integer from {min} to {}", u32::MAX),
        ));
    }
    Ok(value as u32)
}

/// An integer argument that may be arbitrarily large in Python. Out-of-range values are kept
/// as their text so `Int::get` can raise a `ConfigError` naming the field and the value, where
/// plain extraction would raise an `OverflowError`.
pub struct Int(Result<i64, (String, &'static str)>);

impl Int {
    pub const fn of(value: i64) -> Self {
        Self(Ok(value))
    }

    pub fn get(&self, field: &str) -> PyResult<i64> {
        self.0
            .clone()
            .map_err(|(shown, why)| invalid(field, shown, why))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    /// Keeps a value that is not an integer (or too large) to be refused by `get`, which knows
    /// the field's name: the error then says which option was wrong.
    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        // A bool is an int to Python, but `priority=True` is a mistake, not a priority.
        if value.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(Self(Err((
                value.repr()?.to_string(),
                "must be an integer, not a bool",
            ))));
        }
        match value.extract::<i64>() {
            Ok(v) => Ok(Self(Ok(v))),
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(value.py()) => {
                Ok(Self(Err((value.repr()?.to_string(), "out of range"))))
            }
            Err(_) => Ok(Self(Err((value.repr()?.to_string(), "must be an integer")))),
        }
    }
}

/// A number of seconds given for an argument, kept as it came so that `get` can refuse a
/// value that is not a number (a string, a bool) with the argument's name.
pub struct Seconds(Result<f64, String>);

impl Seconds {
    pub const fn of(value: f64) -> Self {
        Self(Ok(value))
    }

    pub fn get(&self, field: &str) -> PyResult<f64> {
        self.0
            .clone()
            .map_err(|shown| invalid(field, shown, "must be a number of seconds"))
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Seconds {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if value.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(Self(Err(value.repr()?.to_string())));
        }
        Ok(Self(value.extract::<f64>().map_err(|_| {
            value.repr().map_or_else(|_| "?".into(), |r| r.to_string())
        })))
    }
}

/// A text argument called `field`: a `str` that is valid Unicode (no lone surrogates, which
/// cannot be stored as UTF-8), or a `ConfigError` naming the field and the value.
pub fn text(field: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = value.cast::<pyo3::types::PyString>() {
        return text.to_str().map(str::to_owned).map_err(|_| {
            invalid(
                field,
                value.repr().map_or_else(|_| "?".into(), |r| r.to_string()),
                "holds a lone surrogate, which is not valid Unicode text",
            )
        });
    }
    let shown = value.repr()?.to_string();
    Err(invalid(field, shown, "must be a string"))
}

pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
