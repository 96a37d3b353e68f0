//! The JSON form: its shape, round trips, and the objects it refuses.

use super::*;

fn json(spec: &ScheduleSpec) -> String {
    serde_json::to_string(spec).unwrap()
}

fn read(text: &str) -> Result<ScheduleSpec, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[test]
fn the_shape_is_one_flat_object() {
    assert_eq!(json(&ScheduleSpec::every(1_000)), r#"{"every":1000}"#);
    assert_eq!(
        json(&ScheduleSpec::cron("0 9 * * 1-5", "Europe/Berlin")),
        r#"{"cron":"0 9 * * 1-5","tz":"Europe/Berlin"}"#
    );
    let full = ScheduleSpec {
        limit: Some(3),
        start: Some(10),
        end: Some(20),
        immediately: true,
        ..ScheduleSpec::cron("*/10 * * * * *", "UTC")
    };
    assert_eq!(
        json(&full),
        r#"{"cron":"*/10 * * * * *","tz":"UTC","limit":3,"start":10,"end":20,"immediately":true}"#
    );
}

#[test]
fn specs_round_trip() {
    for spec in [
        ScheduleSpec::every(1_000),
        ScheduleSpec {
            limit: Some(5),
            start: Some(1_700_000_000_000),
            end: Some(1_800_000_000_000),
            immediately: true,
            ..ScheduleSpec::every(60_000)
        },
        ScheduleSpec::cron("0 9 * * MON-FRI", "America/New_York"),
        ScheduleSpec {
            limit: Some(1),
            ..ScheduleSpec::cron("@daily", "UTC")
        },
    ] {
        assert_eq!(read(&json(&spec)).unwrap(), spec);
    }
}

#[test]
fn tz_defaults_to_utc() {
    assert_eq!(
        read(r#"{"cron":"0 9 * * *"}"#).unwrap(),
        ScheduleSpec::cron("0 9 * * *", DEFAULT_TZ)
    );
    assert_eq!(DEFAULT_TZ, "UTC");
}

#[test]
fn malformed_objects_are_refused() {
    let cases = [
        (r#"{"every":1000,"cron":"* * * * *"}"#, "not both"),
        (r#"{"limit":3}"#, "needs every (ms) or cron"),
        (
            r#"{"every":1000,"tz":"UTC"}"#,
            r#"tz "UTC" applies only to a cron schedule"#,
        ),
        (r#"{"every":1000,"limt":3}"#, "unknown field `limt`"),
        (r#"{"every":-1}"#, "invalid value"),
    ];
    for (text, want) in cases {
        let error = read(text).unwrap_err();
        assert!(error.contains(want), "{text}: {error}");
    }
}

#[test]
fn reading_does_not_validate_values() {
    // A stored spec reads back even if it no longer validates (an end now past); `validate`
    // is the one place that judges values.
    let spec = read(r#"{"every":0}"#).unwrap();
    invalid_message(spec.validate(0));
}
