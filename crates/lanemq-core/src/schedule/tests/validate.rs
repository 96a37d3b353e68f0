//! `validate` refuses each bad value with a message that names it.

use super::*;

const NOW: Millis = 2_000;

fn refused(spec: ScheduleSpec) -> String {
    invalid_message(spec.validate(NOW))
}

fn cron(expr: &str) -> ScheduleSpec {
    ScheduleSpec::cron(expr, "UTC")
}

#[test]
fn good_specs_pass() {
    let now = utc(2026, 1, 9, 18, 0, 0);
    for spec in [
        ScheduleSpec::every(1),
        cron("0 9 * * 1-5"),
        cron("*/10 * * * * *"),
        cron("@hourly"),
        cron("0 0 29 2 *"),
        cron("0 0 9 * * 1 2026-2027"),
        cron("0 0 9 * * 1 *"),
        ScheduleSpec::cron("0 9 * * *", "America/New_York"),
        ScheduleSpec {
            limit: Some(1),
            start: Some(now + DAY),
            end: Some(now + 2 * DAY),
            ..cron("0 9 * * *")
        },
        ScheduleSpec {
            limit: Some(1),
            end: Some(now + 2 * DAY),
            immediately: true,
            ..cron("0 9 * * *")
        },
    ] {
        spec.validate(now)
            .unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    }
}

#[test]
fn every_zero() {
    assert_eq!(
        refused(ScheduleSpec::every(0)),
        "invalid every: 0 (must be > 0 ms)"
    );
    // first and next refuse it too, rather than divide by zero.
    invalid_message(ScheduleSpec::every(0).first(NOW));
    invalid_message(ScheduleSpec::every(0).next(NOW, 1, NOW + 5));
}

#[test]
fn immediately_with_start() {
    for spec in [ScheduleSpec::every(1_000), cron("0 9 * * *")] {
        let spec = ScheduleSpec {
            start: Some(NOW + 5),
            immediately: true,
            ..spec
        };
        assert_eq!(
            refused(spec),
            "invalid start: 2005 (cannot be combined with immediately, which runs the first \
             occurrence at once)"
        );
    }
}

#[test]
fn limit_zero() {
    let spec = ScheduleSpec {
        limit: Some(0),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(refused(spec), "invalid limit: 0 (must be at least 1)");
}

#[test]
fn end_in_the_past_or_now() {
    for end in [1_000, NOW] {
        let spec = ScheduleSpec {
            end: Some(end),
            ..ScheduleSpec::every(1_000)
        };
        assert_eq!(
            refused(spec),
            format!("invalid end: {end} (already past at {NOW})")
        );
    }
}

#[test]
fn start_after_end() {
    let spec = ScheduleSpec {
        start: Some(9_000),
        end: Some(5_000),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(refused(spec), "invalid start: 9000 (after end 5000)");
}

#[test]
fn end_before_the_first_run() {
    let now = utc(2026, 1, 9, 18, 0, 0);
    let spec = ScheduleSpec {
        end: Some(now + HOUR),
        ..cron("0 9 * * *")
    };
    let message = invalid_message(spec.validate(now));
    assert_eq!(
        message,
        format!(
            "invalid end: {} (the schedule has no run before it)",
            now + HOUR
        )
    );
    assert_eq!(spec.first(now).unwrap(), None);
}

#[test]
fn bad_cron_expressions_name_the_expression() {
    for expr in [
        "61 * * * *",
        "* 24 * * *",
        "* * 32 * *",
        "* * * 13 *",
        "* * * * 8",
        "*/0 * * * *",
        "@sometimes",
    ] {
        let message = refused(cron(expr));
        assert!(
            message.starts_with(&format!("invalid cron expression {expr:?}: ")),
            "{message}"
        );
    }
}

#[test]
fn four_or_eight_fields() {
    for (expr, n) in [
        ("* * * *", "4 fields"),
        ("0 0 9 * * 1 2027 1", "8 fields"),
        ("", "0 fields"),
        ("hello", "1 field"),
    ] {
        assert_eq!(
            refused(cron(expr)),
            format!(
                "invalid cron expression {expr:?}: {n}; expected 5 (minute hour \
                 day-of-month month day-of-week), 6 (second first) or 7 (second first, year last)"
            )
        );
    }
}

#[test]
fn a_bad_year_field_is_named() {
    for (expr, why) in [
        (
            "0 0 9 * * * 6000",
            "year field \"6000\": 6000 is out of range 1-5000",
        ),
        (
            "0 0 9 * * * 20x7",
            "year field \"20x7\": \"20x7\" is not a number",
        ),
        (
            "0 0 9 * * * 2027/0",
            "year field \"2027/0\": a step must be at least 1",
        ),
    ] {
        assert_eq!(
            refused(cron(expr)),
            format!("invalid cron expression {expr:?}: {why}")
        );
    }
}

#[test]
fn years_that_are_all_past() {
    let now = utc(2026, 1, 9, 18, 0, 0);
    for expr in [
        "0 0 9 * * * 2020",
        "0 0 9 * * * 2000-2025",
        "0 0 9 * * * 1999,2024",
    ] {
        assert_eq!(
            invalid_message(cron(expr).validate(now)),
            format!(
                "invalid cron expression {expr:?}: year field {:?}: the pattern has no time \
                 in it after {now}",
                expr.rsplit(' ').next().unwrap()
            )
        );
    }
    // A pattern that never fires in any year is still said to never fire.
    assert_eq!(
        invalid_message(cron("0 0 0 30 2 * 2027").validate(now)),
        "invalid cron expression \"0 0 0 30 2 * 2027\": it never fires"
    );
}

#[test]
fn a_pattern_that_never_fires() {
    for expr in ["0 0 30 2 *", "0 0 31 4 *"] {
        assert_eq!(
            refused(cron(expr)),
            format!("invalid cron expression {expr:?}: it never fires")
        );
    }
}

#[test]
fn unknown_time_zone() {
    for zone in ["Mars/Base", "", "europe/berlin"] {
        let spec = ScheduleSpec::cron("0 9 * * *", zone);
        assert_eq!(refused(spec.clone()), format!("invalid time zone {zone:?}"));
        invalid_message(spec.first(NOW));
    }
}
