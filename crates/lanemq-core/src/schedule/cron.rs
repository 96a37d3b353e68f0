//! Cron patterns evaluated in an IANA time zone, on croner.
//!
//! croner is set up for POSIX/Vixie cron: 5 fields (minute hour day-of-month month day-of-week)
//! or 6 with seconds first, day-of-week 0 and 7 both Sunday, names (MON, JAN), day-of-month OR
//! day-of-week when both are restricted. The seed's 7-field form (seconds first, a year last:
//! `0 0 9 * * MON 2027-2028`) is croner's own year field: BullMQ patterns have none, but a
//! pattern written for the seed keeps working. A schedule whose years have all passed has no
//! next run and ends; one whose years are all past when it is written is refused
//! (`ScheduleSpec::validate`, with the message `past_years` gives).

use chrono::DateTime;
use chrono_tz::Tz;
use croner::errors::CronError;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use crate::error::{CoreError, CoreResult};
use crate::jobs::Millis;

/// A parsed pattern and the zone its wall clock times are read in.
#[derive(Debug, Clone)]
pub(super) struct CronRule {
    cron: Cron,
    tz: Tz,
}

impl CronRule {
    /// Parses `expr`, then `tz`; the errors name the value that is wrong.
    pub(super) fn parse(expr: &str, tz: &str) -> CoreResult<Self> {
        let invalid = |why: String| {
            CoreError::InvalidConfig(format!("invalid cron expression {expr:?}: {why}"))
        };
        check_field_count(expr).map_err(invalid)?;
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Optional)
            // Explicit although it is the default: POSIX ORs a restricted day-of-month with a
            // restricted day-of-week (`0 0 13 * 5` is the 13th and every Friday).
            .dom_and_dow(false)
            .alternative_weekdays(false)
            // `5/15` (from 5 on, every 15) is not POSIX, but BullMQ's cron-parser takes it and
            // means the same, so patterns written for BullMQ keep working.
            .sloppy_ranges(true)
            .build()
            .parse(expr)
            .map_err(|e| invalid(explain(expr).unwrap_or_else(|| e.to_string())))?;
        let tz: Tz = tz
            .parse()
            .map_err(|_| CoreError::InvalidConfig(format!("invalid time zone {tz:?}")))?;
        Ok(Self { cron, tz })
    }

    /// The first pattern time strictly after `after`.
    ///
    /// `None` when croner's search finds none before its horizon (the year 5000): the pattern
    /// never fires (`0 0 30 2 *`), or not in any time worth waiting for.
    pub(super) fn after(&self, after: Millis) -> CoreResult<Option<Millis>> {
        // Pattern times are whole seconds, so "after `after`" is "after its whole second": this
        // keeps croner, which works in seconds, from ever seeing a sub-second remainder.
        let origin = i64::try_from(after / 1000)
            .ok()
            .and_then(|secs| DateTime::from_timestamp(secs, 0))
            .ok_or_else(|| out_of_range(after))?
            .with_timezone(&self.tz);
        match self.cron.find_next_occurrence(&origin, false) {
            Ok(found) => u64::try_from(found.timestamp_millis())
                .map(Some)
                .map_err(|_| out_of_range(after)),
            Err(CronError::TimeSearchLimitExceeded) => Ok(None),
            Err(e) => Err(CoreError::InvalidConfig(format!(
                "cron expression {:?} in {} cannot be evaluated after {after}: {e}",
                self.cron.as_str(),
                self.tz.name()
            ))),
        }
    }
}

/// croner says little about a 4th field missing or an 8th too many, so the count is checked
/// here with a message that says what the fields are. `@daily` and the other nicknames
/// are one word and go to croner as they are.
fn check_field_count(expr: &str) -> Result<(), String> {
    let expr = expr.trim();
    if expr.starts_with('@') {
        return Ok(());
    }
    match expr.split_whitespace().count() {
        5..=7 => Ok(()),
        n => Err(format!(
            "{n} field{}; expected 5 (minute hour day-of-month month day-of-week), \
             6 (second first) or 7 (second first, year last)",
            if n == 1 { "" } else { "s" }
        )),
    }
}

/// Which field of a refused pattern is wrong, when a number in it is out of its field's range or
/// a part is not a number or name at all: croner's own message ("Component error: Number out of
/// bounds.") names neither the field nor the value.
fn explain(expr: &str) -> Option<String> {
    const FIVE: [(&str, u32, u32); 5] = [
        ("minute", 0, 59),
        ("hour", 0, 23),
        ("day-of-month", 1, 31),
        ("month", 1, 12),
        ("day-of-week", 0, 7),
    ];
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let second = std::iter::once(("second", 0, 59));
    let named: Vec<(&str, u32, u32)> = match fields.len() {
        5 => FIVE.to_vec(),
        6 => second.chain(FIVE).collect(),
        // croner's years: 1 to 5000, the end of its search.
        7 => second.chain(FIVE).chain([("year", 1, 5000)]).collect(),
        _ => return None,
    };
    for (field, (name, low, high)) in fields.iter().zip(named) {
        for part in field.split([',', '-', '/', '#']) {
            let part = part.trim_end_matches(['L', 'W']);
            if part.is_empty() || part == "*" || part == "?" {
                continue;
            }
            if part.chars().all(|c| c.is_ascii_alphabetic()) {
                continue; // names (MON, JAN) and letters croner knows or refuses itself
            }
            match part.parse::<u32>() {
                Ok(n) if field.contains('/') && field.ends_with(&format!("/{part}")) => {
                    if n == 0 {
                        return Some(format!("{name} field {field:?}: a step must be at least 1"));
                    }
                }
                Ok(n) if n < low || n > high => {
                    return Some(format!(
                        "{name} field {field:?}: {n} is out of range {low}-{high}"
                    ));
                }
                Ok(_) => {}
                Err(_) => {
                    return Some(format!("{name} field {field:?}: {part:?} is not a number"));
                }
            }
        }
    }
    None
}

/// Why a pattern that finds no time after `now` never fires, when its year field is the cause:
/// the same pattern in every year fires, so the years it names are all past (or beyond what
/// croner searches). `None` when the year field is not the cause.
pub(super) fn past_years(expr: &str, tz: &str, now: Millis) -> Option<String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let [rest @ .., year] = fields.as_slice() else {
        return None;
    };
    if fields.len() != 7 {
        return None;
    }
    let every_year = format!("{} *", rest.join(" "));
    let fires = CronRule::parse(&every_year, tz)
        .and_then(|rule| rule.after(now))
        .is_ok_and(|found| found.is_some());
    fires.then(|| format!("year field {year:?}: the pattern has no time in it after {now}"))
}

fn out_of_range(at: Millis) -> CoreError {
    CoreError::InvalidConfig(format!(
        "time {at} ms is out of the range cron schedules cover"
    ))
}
