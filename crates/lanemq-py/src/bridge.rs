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

/// Like `seconds_to_micros`, but zero is refused too.
pub fn positive_seconds(field: &str, seconds: f64) -> PyResult<Micros> {
    let micros = seconds_to_micros(field, seconds)?;
    if micros == 0 {
        return Err(invalid(field, seconds, "must be greater than 0"));
    }
    Ok(micros)
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

pub fn wall_clock_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
