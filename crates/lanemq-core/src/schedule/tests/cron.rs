//! Cron in UTC: POSIX weekdays and names, seconds, years, the DOM/DOW OR rule, first/next, limit,
//! end.

use super::*;

/// Friday 2026-01-09, 18:00 UTC.
fn friday_evening() -> Millis {
    utc(2026, 1, 9, 18, 0, 0)
}

fn cron(expr: &str) -> ScheduleSpec {
    ScheduleSpec::cron(expr, "UTC")
}

#[test]
fn weekdays_from_friday_evening_run_monday_then_tuesday() {
    let spec = cron("0 9 * * 1-5");
    spec.validate(friday_evening()).unwrap();
    let monday = utc(2026, 1, 12, 9, 0, 0);
    assert_at(spec.first(friday_evening()).unwrap(), monday);
    assert_at(spec.next(monday, 1, monday + 50).unwrap(), monday + DAY);
    // Friday 09:00 is followed by Monday, not Saturday.
    let friday = utc(2026, 1, 16, 9, 0, 0);
    assert_at(
        spec.next(friday, 5, friday).unwrap(),
        utc(2026, 1, 19, 9, 0, 0),
    );
}

#[test]
fn names_mean_the_same_days_and_months_as_numbers() {
    let numbers = runs(&cron("0 9 * * 1-5"), friday_evening(), 6);
    assert_eq!(runs(&cron("0 9 * * MON-FRI"), friday_evening(), 6), numbers);
    assert_eq!(runs(&cron("0 9 * * mon-fri"), friday_evening(), 6), numbers);
    assert_at(
        cron("0 0 1 JUL *").first(friday_evening()).unwrap(),
        utc(2026, 7, 1, 0, 0, 0),
    );
}

#[test]
fn sunday_is_both_0_and_7() {
    let sunday_noon = utc(2026, 1, 11, 12, 0, 0);
    for expr in ["0 12 * * 0", "0 12 * * 7", "0 12 * * SUN"] {
        assert_at(cron(expr).first(friday_evening()).unwrap(), sunday_noon);
    }
    // A range ending in 7 runs Friday, Saturday and Sunday.
    assert_eq!(
        runs(&cron("0 12 * * 5-7"), utc(2026, 1, 9, 0, 0, 0), 4),
        [
            utc(2026, 1, 9, 12, 0, 0),
            utc(2026, 1, 10, 12, 0, 0),
            sunday_noon,
            utc(2026, 1, 16, 12, 0, 0),
        ]
    );
}

#[test]
fn six_fields_put_seconds_first() {
    let spec = cron("*/10 * * * * *");
    let now = utc(2026, 1, 9, 12, 0, 3) + 500;
    assert_eq!(
        runs(&spec, now, 3),
        [
            utc(2026, 1, 9, 12, 0, 10),
            utc(2026, 1, 9, 12, 0, 20),
            utc(2026, 1, 9, 12, 0, 30),
        ]
    );
    assert_at(
        cron("30 0 9 * * *").first(friday_evening()).unwrap(),
        utc(2026, 1, 10, 9, 0, 30),
    );
}

#[test]
fn restricted_day_of_month_and_day_of_week_are_ored() {
    // The 13th, and every Friday: from Thursday the 8th, Friday 9th, then Tuesday 13th.
    let spec = cron("0 0 13 * 5");
    assert_eq!(
        runs(&spec, utc(2026, 1, 8, 12, 0, 0), 3),
        [
            utc(2026, 1, 9, 0, 0, 0),
            utc(2026, 1, 13, 0, 0, 0),
            utc(2026, 1, 16, 0, 0, 0),
        ]
    );
}

#[test]
fn the_first_run_is_strictly_after_now() {
    let nine = utc(2026, 1, 12, 9, 0, 0);
    let spec = cron("0 9 * * *");
    assert_at(spec.first(nine).unwrap(), nine + DAY);
    assert_at(spec.first(nine - 1).unwrap(), nine);
    assert_eq!(
        cron("@daily").first(nine).unwrap(),
        Some(utc(2026, 1, 13, 0, 0, 0))
    );
}

#[test]
fn a_future_start_on_a_pattern_time_is_the_first_run() {
    let now = friday_evening();
    let monday = utc(2026, 1, 12, 9, 0, 0);
    let on = ScheduleSpec {
        start: Some(monday),
        ..cron("0 9 * * *")
    };
    assert_at(on.first(now).unwrap(), monday);
    let just_after = ScheduleSpec {
        start: Some(monday + 1),
        ..cron("0 9 * * *")
    };
    assert_at(just_after.first(now).unwrap(), monday + DAY);
    let past = ScheduleSpec {
        start: Some(now - DAY),
        ..cron("0 9 * * *")
    };
    assert_at(past.first(now).unwrap(), utc(2026, 1, 10, 9, 0, 0));
}

#[test]
fn immediately_runs_now_then_follows_the_pattern() {
    let now = friday_evening() + 123;
    let spec = ScheduleSpec {
        immediately: true,
        ..cron("0 9 * * 1-5")
    };
    assert_eq!(
        runs(&spec, now, 3),
        [now, utc(2026, 1, 12, 9, 0, 0), utc(2026, 1, 13, 9, 0, 0)]
    );
    let later = ScheduleSpec {
        start: Some(now + HOUR),
        ..spec.clone()
    };
    assert_at(later.first(now).unwrap(), now + HOUR);
}

#[test]
fn a_slow_run_neither_repeats_nor_replays_missed_times() {
    let spec = cron("* * * * *");
    let noon = utc(2026, 1, 9, 12, 0, 0);
    // Still within the minute, or exactly at the next one: that next minute.
    assert_at(spec.next(noon, 1, noon + 59_999).unwrap(), noon + MINUTE);
    assert_at(spec.next(noon, 1, noon + MINUTE).unwrap(), noon + MINUTE);
    // Past it: the following one, nothing in the past.
    assert_at(
        spec.next(noon, 1, noon + MINUTE + 1).unwrap(),
        noon + 2 * MINUTE,
    );

    // Down from Monday 09:00 to Wednesday 10:00: Thursday 09:00, not the two missed days.
    let daily = cron("0 9 * * *");
    let monday = utc(2026, 1, 12, 9, 0, 0);
    let wednesday = utc(2026, 1, 14, 10, 0, 0);
    assert_at(
        daily.next(monday, 1, wednesday).unwrap(),
        utc(2026, 1, 15, 9, 0, 0),
    );
    // A run started a little before it was due (clock skew): never the same time again.
    assert_at(daily.next(monday, 1, monday - 5).unwrap(), monday + DAY);
}

#[test]
fn limit_gives_exactly_that_many_runs() {
    let once = ScheduleSpec {
        limit: Some(1),
        ..cron("0 9 * * *")
    };
    let first = once.first(friday_evening()).unwrap().unwrap();
    assert_eq!(once.next(first, 1, first).unwrap(), None);
    let three = ScheduleSpec {
        limit: Some(3),
        ..cron("0 9 * * *")
    };
    assert_eq!(runs(&three, friday_evening(), 10).len(), 3);
}

#[test]
fn end_stops_the_schedule_and_a_run_exactly_at_end_happens() {
    let sunday = utc(2026, 1, 11, 9, 0, 0);
    let spec = ScheduleSpec {
        end: Some(sunday),
        ..cron("0 9 * * *")
    };
    assert_eq!(
        runs(&spec, friday_evening(), 10),
        [utc(2026, 1, 10, 9, 0, 0), sunday]
    );
}

#[test]
fn a_step_from_a_single_start_runs_from_there_to_the_end_of_the_range() {
    // BullMQ's cron-parser syntax: `5/15` is 5, 20, 35, 50.
    let got = runs(&cron("5/15 * * * *"), utc(2026, 1, 9, 12, 0, 0), 5);
    let minutes: Vec<Millis> = got.iter().map(|&at| at % HOUR / MINUTE).collect();
    assert_eq!(minutes, [5, 20, 35, 50, 5]);
}

#[test]
fn seven_fields_put_seconds_first_and_a_year_last() {
    // The seed's form: second minute hour day-of-month month day-of-week year.
    let spec = cron("30 0 9 1 JAN * 2027,2029");
    assert_eq!(
        runs(&spec, friday_evening(), 5),
        [utc(2027, 1, 1, 9, 0, 30), utc(2029, 1, 1, 9, 0, 30)],
        "only the years listed, then the schedule ends"
    );
    let range = cron("0 0 12 * * MON 2026-2027");
    let last_monday = utc(2027, 12, 27, 12, 0, 0);
    assert_at(
        range.first(friday_evening()).unwrap(),
        utc(2026, 1, 12, 12, 0, 0),
    );
    assert_eq!(range.next(last_monday, 1, last_monday).unwrap(), None);
    // `*` for the year is every year: the same runs as the 6-field form.
    assert_eq!(
        runs(&cron("*/10 * * * * * *"), friday_evening(), 4),
        runs(&cron("*/10 * * * * *"), friday_evening(), 4)
    );
    let step = cron("0 0 0 1 1 * 2026/2");
    assert_eq!(
        runs(&step, friday_evening(), 2),
        [utc(2028, 1, 1, 0, 0, 0), utc(2030, 1, 1, 0, 0, 0)]
    );
}
