//! Time zones and both DST transitions, in Europe/Berlin and America/New_York (2026: Berlin
//! springs forward on 29 March at 02:00 and falls back on 25 October at 03:00; New York on
//! 8 March at 02:00 and 1 November at 02:00).

use super::*;

fn cron(expr: &str, zone: &str) -> ScheduleSpec {
    ScheduleSpec::cron(expr, zone)
}

#[test]
fn nine_in_new_york_is_14_utc_in_winter_and_13_utc_in_summer() {
    let spec = cron("0 9 * * *", "America/New_York");
    assert_at(
        spec.first(utc(2026, 1, 10, 0, 0, 0)).unwrap(),
        utc(2026, 1, 10, 14, 0, 0),
    );
    assert_at(
        spec.first(utc(2026, 7, 10, 0, 0, 0)).unwrap(),
        utc(2026, 7, 10, 13, 0, 0),
    );
    assert_at(
        spec.first(utc(2026, 7, 10, 0, 0, 0)).unwrap(),
        local("America/New_York", 2026, 7, 10, 9, 0),
    );
}

#[test]
fn a_time_in_the_spring_gap_runs_once_right_after_the_gap_in_berlin() {
    // 02:30 does not exist on 29 March: that day's run is at 03:00 CEST (01:00 UTC).
    let spec = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        runs(&spec, utc(2026, 3, 27, 12, 0, 0), 3),
        [
            utc(2026, 3, 28, 1, 30, 0), // 02:30 CET
            utc(2026, 3, 29, 1, 0, 0),  // 03:00 CEST
            utc(2026, 3, 30, 0, 30, 0), // 02:30 CEST
        ]
    );
}

#[test]
fn a_time_in_the_spring_gap_runs_once_right_after_the_gap_in_new_york() {
    let spec = cron("30 2 * * *", "America/New_York");
    assert_eq!(
        runs(&spec, utc(2026, 3, 6, 12, 0, 0), 3),
        [
            utc(2026, 3, 7, 7, 30, 0), // 02:30 EST
            utc(2026, 3, 8, 7, 0, 0),  // 03:00 EDT
            utc(2026, 3, 9, 6, 30, 0), // 02:30 EDT
        ]
    );
}

#[test]
fn a_repeated_time_in_the_fall_overlap_runs_once_in_berlin() {
    // 02:30 happens twice on 25 October (00:30 UTC in CEST, 01:30 UTC in CET): once, the first.
    let spec = cron("30 2 * * *", "Europe/Berlin");
    let first_pass = utc(2026, 10, 25, 0, 30, 0);
    assert_eq!(
        runs(&spec, utc(2026, 10, 24, 12, 0, 0), 2),
        [first_pass, utc(2026, 10, 26, 1, 30, 0)]
    );
    // A run still going (or just started) when 02:30 comes round again does not repeat it.
    let tomorrow = utc(2026, 10, 26, 1, 30, 0);
    for now in [
        utc(2026, 10, 25, 1, 30, 0),
        utc(2026, 10, 25, 1, 30, 0) + 500,
    ] {
        assert_at(spec.next(first_pass, 1, now).unwrap(), tomorrow);
    }
}

#[test]
fn a_repeated_time_in_the_fall_overlap_runs_once_in_new_york() {
    // 01:30 happens twice on 1 November (05:30 UTC in EDT, 06:30 UTC in EST).
    let spec = cron("30 1 * * *", "America/New_York");
    assert_eq!(
        runs(&spec, utc(2026, 10, 31, 12, 0, 0), 2),
        [utc(2026, 11, 1, 5, 30, 0), utc(2026, 11, 2, 6, 30, 0)]
    );
}

#[test]
fn an_hourly_pattern_runs_every_real_hour_across_both_transitions() {
    let spec = cron("0 * * * *", "Europe/Berlin");
    for start in [utc(2026, 3, 28, 22, 0, 0), utc(2026, 10, 24, 22, 0, 0)] {
        let got = runs(&spec, start, 6);
        let want: Vec<Millis> = (1..=6).map(|h| start + h * HOUR).collect();
        assert_eq!(got, want, "from {}", show(Some(start)));
    }
}

#[test]
fn a_stepped_pattern_skips_the_times_inside_the_spring_gap() {
    // 01:30 EST, then 03:00 EDT: 02:00 and 02:30 never happen.
    let spec = cron("*/30 * * * *", "America/New_York");
    assert_eq!(
        runs(&spec, utc(2026, 3, 8, 6, 15, 0), 3),
        [
            utc(2026, 3, 8, 6, 30, 0),
            utc(2026, 3, 8, 7, 0, 0),
            utc(2026, 3, 8, 7, 30, 0)
        ]
    );
}

#[test]
fn a_daily_time_near_the_transitions_runs_once_a_local_day_for_a_year() {
    // 02:30 sits in Berlin's spring gap and fall overlap; a year of runs has one per local day.
    let spec = cron("30 2 * * *", "Europe/Berlin");
    let tz: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
    let got = runs(&spec, utc(2026, 1, 1, 12, 0, 0), 365);
    assert_eq!(got.len(), 365);
    let days: Vec<chrono::NaiveDate> = got
        .iter()
        .map(|&at| {
            chrono::DateTime::from_timestamp_millis(at as i64)
                .unwrap()
                .with_timezone(&tz)
                .date_naive()
        })
        .collect();
    for pair in days.windows(2) {
        assert_eq!(pair[1], pair[0].succ_opt().unwrap(), "{pair:?}");
    }
}

#[test]
fn every_ignores_time_zones_and_dst() {
    // `every` counts real milliseconds, so it keeps its pace through a transition.
    let start = utc(2026, 3, 29, 0, 0, 0);
    let got = runs(&ScheduleSpec::every(HOUR), start, 4);
    assert_eq!(
        got,
        [start, start + HOUR, start + 2 * HOUR, start + 3 * HOUR]
    );
}
