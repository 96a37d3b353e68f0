//! `every`: the first run, the fixed grid, skipping missed slots, limit and end.

use super::*;

const T: Millis = 1_700_000_000_000;

#[test]
fn first_run_is_now_and_the_grid_follows_it() {
    let spec = ScheduleSpec::every(1_000);
    assert_eq!(
        runs(&spec, T + 7, 4),
        [T + 7, T + 1_007, T + 2_007, T + 3_007]
    );
}

#[test]
fn a_slow_run_does_not_shift_the_grid() {
    let spec = ScheduleSpec::every(1_000);
    // The run due at T started 900 ms late: the next one stays at T + 1000.
    assert_eq!(spec.next(T, 1, T + 900).unwrap(), Some(T + 1_000));
    // Started exactly as the next slot came due: that slot, not one later.
    assert_eq!(spec.next(T, 1, T + 1_000).unwrap(), Some(T + 1_000));
}

#[test]
fn missed_slots_are_skipped_on_the_same_grid() {
    let spec = ScheduleSpec::every(1_000);
    assert_eq!(spec.next(T, 1, T + 3_500).unwrap(), Some(T + 4_000));
    assert_eq!(spec.next(T, 1, T + 4_000).unwrap(), Some(T + 4_000));
    assert_eq!(spec.next(T, 1, T + 4_001).unwrap(), Some(T + 5_000));
    // A day away from an hourly schedule: one run, on the hour grid, not 24.
    let hourly = ScheduleSpec::every(HOUR);
    assert_eq!(hourly.next(T, 1, T + DAY + 1).unwrap(), Some(T + 25 * HOUR));
}

#[test]
fn a_future_start_is_the_first_run_and_a_past_one_is_ignored() {
    let future = ScheduleSpec {
        start: Some(T + 60_000),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(runs(&future, T, 2), [T + 60_000, T + 61_000]);
    let past = ScheduleSpec {
        start: Some(T - 60_000),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(past.first(T).unwrap(), Some(T));
}

#[test]
fn limit_counts_every_run_including_the_first() {
    let once = ScheduleSpec {
        limit: Some(1),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(once.first(T).unwrap(), Some(T));
    assert_eq!(once.next(T, 1, T).unwrap(), None);

    let three = ScheduleSpec {
        limit: Some(3),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(runs(&three, T, 10), [T, T + 1_000, T + 2_000]);
}

#[test]
fn end_stops_the_schedule_and_a_run_exactly_at_end_happens() {
    let spec = ScheduleSpec {
        end: Some(T + 2_000),
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(runs(&spec, T, 10), [T, T + 1_000, T + 2_000]);
    // Skipping ahead past the end ends it too.
    assert_eq!(spec.next(T, 1, T + 2_500).unwrap(), None);
}

#[test]
fn a_slot_past_u64_ends_the_schedule_instead_of_wrapping() {
    let spec = ScheduleSpec::every(1_000);
    assert_eq!(
        spec.next(Millis::MAX - 10, 1, Millis::MAX - 5).unwrap(),
        None
    );
    assert_eq!(spec.next(0, 1, Millis::MAX).unwrap(), None);
}

#[test]
fn immediately_changes_nothing_for_every() {
    let spec = ScheduleSpec {
        immediately: true,
        ..ScheduleSpec::every(1_000)
    };
    assert_eq!(runs(&spec, T, 2), [T, T + 1_000]);
}
