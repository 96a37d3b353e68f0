//! Schedule tests on concrete instants: each builds its times with chrono and compares ms.

mod cron;
mod dst;
mod every;
mod validate;
mod wire;

use chrono::{NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;

use super::*;
use crate::jobs::Millis;

const SECOND: Millis = 1_000;
const MINUTE: Millis = 60 * SECOND;
const HOUR: Millis = 60 * MINUTE;
const DAY: Millis = 24 * HOUR;

/// An instant given in UTC.
fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Millis {
    ms(Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single())
}

/// An instant given as an unambiguous wall clock time in `zone`.
fn local(zone: &str, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Millis {
    let tz: Tz = zone.parse().expect("a known zone");
    let naive = NaiveDate::from_ymd_opt(y, mo, d)
        .and_then(|date| date.and_hms_opt(h, mi, 0))
        .expect("a valid date");
    ms(tz.from_local_datetime(&naive).single())
}

fn ms<Z: TimeZone>(at: Option<chrono::DateTime<Z>>) -> Millis {
    let at = at.expect("an unambiguous instant");
    Millis::try_from(at.timestamp_millis()).expect("after 1970")
}

/// Readable instants in assertion failures.
fn show(at: Option<Millis>) -> String {
    match at {
        None => "None".into(),
        Some(at) => chrono::DateTime::from_timestamp_millis(at as i64)
            .map_or_else(|| at.to_string(), |t| t.to_rfc3339()),
    }
}

#[track_caller]
fn assert_at(got: Option<Millis>, want: Millis) {
    assert_eq!(
        got,
        Some(want),
        "got {}, want {}",
        show(got),
        show(Some(want))
    );
}

/// The first `n` runs of `spec` when each one starts exactly when due.
fn runs(spec: &ScheduleSpec, now: Millis, n: usize) -> Vec<Millis> {
    let mut out = Vec::new();
    let mut due = spec.first(now).unwrap();
    while let Some(at) = due {
        out.push(at);
        if out.len() == n {
            break;
        }
        due = spec.next(at, out.len() as u64, at).unwrap();
    }
    out
}

fn invalid_message(result: crate::CoreResult<impl std::fmt::Debug>) -> String {
    match result {
        Err(crate::CoreError::InvalidConfig(message)) => message,
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}
