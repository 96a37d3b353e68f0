//! Job options and the checks an `add` runs before anything is written.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};

use super::clock::Millis;
use super::parent::{ParentPolicy, ParentRef};

/// The largest priority number, 2^21 - 1: BullMQ's documented maximum. BullMQ scores a
/// prioritised job `priority * 2^32 + counter` in a double, which stays exact (and FIFO within
/// a priority) only below 2^53; its code lets 2^21 itself through, which lanemq does not.
pub const MAX_PRIORITY: u32 = (1 << 21) - 1;

pub const DEFAULT_MAX_PAYLOAD_BYTES: usize = 16 * 1024 * 1024;

/// The most entries a job's telemetry carrier may have: a W3C carrier has two or three
/// (`traceparent`, `tracestate`, `baggage`), so more is a mistake, not a trace.
pub const MAX_TELEMETRY_ENTRIES: usize = 16;

/// The most bytes (keys and values together) a job's telemetry carrier may hold: W3C baggage's
/// own limit, so any carrier a propagator writes fits, while a carrier cannot grow every job
/// (it is stored with the job and sent back with every claim) without bound.
pub const MAX_TELEMETRY_BYTES: usize = 8192;

/// A job's trace context, as a propagator's carrier (the W3C `traceparent` and `tracestate`,
/// say): metadata of the job, never part of its data.
pub type Telemetry = BTreeMap<String, String>;

/// The limits a queue's store enforces, whatever backend holds it.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub max_payload_bytes: usize,
    pub max_events: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            max_payload_bytes: DEFAULT_MAX_PAYLOAD_BYTES,
            max_events: 10_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackoffKind {
    Fixed,
    Exponential,
    /// A strategy registered on the worker by `name`: exception classes and functions cannot
    /// live in stored options, so the worker computes the delay and reports it with the
    /// failure (`Failure::delay`).
    Custom,
}

/// The wait before a retry: `delay` every time (fixed), or `delay * 2^(n-1)` before retry n
/// (exponential); `jitter` (0..=1) takes up to that fraction off at random. A custom one
/// names the worker's strategy in `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub delay: Millis,
    #[serde(default)]
    pub jitter: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Backoff {
    /// The delay before retry number `retry` (1-based); `random` in 0..1 drives the jitter.
    pub fn delay_for(&self, retry: u32, random: f64) -> Millis {
        let base = match self.kind {
            // (its `delay`, 0: a failure reported without the worker's delay retries at once,
            // as the Lua script computes it too)
            BackoffKind::Fixed | BackoffKind::Custom => self.delay as f64,
            BackoffKind::Exponential => {
                self.delay as f64 * 2f64.powi(retry.saturating_sub(1).min(52) as i32)
            }
        };
        let jittered = base * (1.0 - self.jitter * random.clamp(0.0, 1.0));
        jittered.min(u64::MAX as f64 / 2.0).round() as Millis
    }

    pub fn validate(&self) -> CoreResult<()> {
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(CoreError::InvalidConfig(format!(
                "invalid backoff jitter: {} (must be between 0 and 1)",
                self.jitter
            )));
        }
        Ok(())
    }
}

/// What to keep of finished jobs (`remove_on_complete` / `remove_on_fail`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retention {
    #[default]
    KeepAll,
    RemoveAll,
    /// Keep at most `count` newest and none older than `age`; remove at most `limit` per pass.
    Keep {
        count: Option<u64>,
        age: Option<Millis>,
        limit: Option<u64>,
    },
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

/// Deduplication (BullMQ's modes): while the key `id` is held, an add with the same id returns
/// the job holding it instead of adding another. Without `ttl` the key is held while its job is
/// unfinished (simple mode); with `ttl` for that long after it was set, whatever the job's state
/// (throttle mode). `extend` restarts the ttl on every duplicate (debounce), `replace` replaces a
/// holder that is still delayed by the new job, and `keep_last` keeps the latest duplicate that
/// arrives while the holder is active and adds it once the holder finishes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dedup {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Millis>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub extend: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub replace: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub keep_last: bool,
}

impl Dedup {
    /// Plain deduplication on `id`: no ttl, no mode.
    pub fn simple(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            ttl: None,
            extend: false,
            replace: false,
            keep_last: false,
        }
    }

    pub fn validate(&self) -> CoreResult<()> {
        let id = &self.id;
        if id.is_empty() {
            return Err(CoreError::InvalidConfig(
                "invalid dedup id: \"\" (must not be empty)".into(),
            ));
        }
        if self.ttl == Some(0) {
            return Err(CoreError::InvalidConfig(format!(
                "invalid dedup ttl: 0 (must be > 0) for dedup id {id:?}"
            )));
        }
        if self.extend && self.ttl.is_none() {
            return Err(CoreError::InvalidConfig(format!(
                "invalid dedup extend: true without a ttl for dedup id {id:?} (extend restarts \
                 the ttl, so it needs one)"
            )));
        }
        if self.replace && self.keep_last {
            return Err(CoreError::InvalidConfig(format!(
                "invalid dedup modes: replace and keep_last together for dedup id {id:?} \
                 (choose one)"
            )));
        }
        Ok(())
    }
}

/// A job's options. As JSON (how the backends store them), a field at its default is left out
/// and read back as the default: the default options are `{}`, not 132 bytes that every job
/// would store, send back with every claim and have parsed (the Lua scripts read an absent
/// option as its default too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: u32,
    #[serde(default, skip_serializing_if = "is_false")]
    pub lifo: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay: Millis,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Millis>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remove_on_complete: Retention,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub remove_on_fail: Retention,
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub max_stalled_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedup: Option<Dedup>,
    /// The key of the job scheduler whose occurrence this job is. Set only by schedulers (an
    /// add that carries it is refused); written to the options JSON only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    /// What this job's terminal failure does to its parent (flows); `None` fails the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_policy: Option<ParentPolicy>,
    /// The parent of a flow's child. Set only by flows (an add that carries it is refused), as
    /// BullMQ keeps it in the job's options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRef>,
    /// The producer's trace context (a propagator's carrier), for the consumer's spans to
    /// link to; written to the options JSON only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<Telemetry>,
    /// The job's group (`contract::JobGroups`): groups take turns at the claim and have
    /// limits of their own. `None`: ungrouped (one group of its own at the claim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// BullMQ's `maxStartedAttempts`: a job started this many times (claims, including the
    /// ones that stalled or were released) fails for good instead of starting again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_started_attempts: Option<u32>,
    /// BullMQ's `stackTraceLimit`: how many stack traces the job keeps, the newest (0: none).
    /// `None` keeps `STACKTRACE_LIMIT`; a job stored before the option existed reads as that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_trace_limit: Option<u32>,
}

fn one() -> u32 {
    1
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            job_id: None,
            priority: 0,
            lifo: false,
            delay: 0,
            attempts: 1,
            backoff: None,
            timeout: None,
            remove_on_complete: Retention::KeepAll,
            remove_on_fail: Retention::KeepAll,
            max_stalled_count: 1,
            dedup: None,
            scheduler: None,
            parent_policy: None,
            parent: None,
            telemetry: None,
            group: None,
            max_started_attempts: None,
            stack_trace_limit: None,
        }
    }
}

impl JobOptions {
    /// How many stack traces the job keeps (its `stack_trace_limit`, or the default).
    pub fn kept_traces(&self) -> usize {
        self.stack_trace_limit
            .map_or(crate::jobs::constants::STACKTRACE_LIMIT, |n| n as usize)
    }
}

impl JobOptions {
    pub fn validate(&self) -> CoreResult<()> {
        if let Some(id) = &self.job_id {
            validate_job_id(id)?;
        }
        validate_priority(self.priority)?;
        if self.attempts < 1 {
            return Err(CoreError::InvalidConfig(format!(
                "invalid attempts: {} (must be at least 1)",
                self.attempts
            )));
        }
        if self.timeout == Some(0) {
            return Err(CoreError::InvalidConfig(
                "invalid timeout: 0 (must be > 0)".into(),
            ));
        }
        if let Some(backoff) = &self.backoff {
            backoff.validate()?;
        }
        if let Some(dedup) = &self.dedup {
            dedup.validate()?;
        }
        if let Some(key) = &self.scheduler {
            return Err(CoreError::InvalidConfig(format!(
                "invalid scheduler: {key:?} (only a job scheduler marks its occurrences)"
            )));
        }
        if let Some(parent) = &self.parent {
            return Err(CoreError::InvalidConfig(format!(
                "invalid parent: {:?} (only a flow sets a job's parent)",
                parent.key()
            )));
        }
        if let Some(telemetry) = &self.telemetry {
            validate_telemetry(telemetry)?;
        }
        if let Some(group) = &self.group {
            validate_group(group)?;
        }
        if self.max_started_attempts == Some(0) {
            return Err(CoreError::InvalidConfig(
                "invalid max_started_attempts: 0 (must be at least 1)".into(),
            ));
        }
        Ok(())
    }
}

/// The longest group name, in bytes.
pub const MAX_GROUP_BYTES: usize = 256;

/// Refuses an empty group name, one over `MAX_GROUP_BYTES`, or one with control characters
/// (a group names keys and lines of the CLI).
pub fn validate_group(group: &str) -> CoreResult<()> {
    if group.is_empty() || group.len() > MAX_GROUP_BYTES || group.chars().any(char::is_control) {
        return Err(CoreError::InvalidConfig(format!(
            "invalid group: {group:?} (1 to {MAX_GROUP_BYTES} bytes, no control characters)"
        )));
    }
    Ok(())
}

/// Refuses a telemetry carrier with an empty key, or over the entry or byte bounds.
pub fn validate_telemetry(telemetry: &Telemetry) -> CoreResult<()> {
    if telemetry.len() > MAX_TELEMETRY_ENTRIES {
        return Err(CoreError::InvalidConfig(format!(
            "invalid telemetry: {} entries (at most {MAX_TELEMETRY_ENTRIES})",
            telemetry.len()
        )));
    }
    if telemetry.contains_key("") {
        return Err(CoreError::InvalidConfig(
            "invalid telemetry key: \"\" (must not be empty)".into(),
        ));
    }
    let bytes: usize = telemetry.iter().map(|(k, v)| k.len() + v.len()).sum();
    if bytes > MAX_TELEMETRY_BYTES {
        return Err(CoreError::InvalidConfig(format!(
            "invalid telemetry: {bytes} bytes of keys and values (at most {MAX_TELEMETRY_BYTES})"
        )));
    }
    Ok(())
}

/// Refuses a payload over the queue's limit.
pub fn check_payload(data: &str, max_payload_bytes: usize) -> CoreResult<()> {
    if data.len() > max_payload_bytes {
        return Err(CoreError::InvalidConfig(format!(
            "payload of {} bytes exceeds max_payload_bytes ({max_payload_bytes})",
            data.len()
        )));
    }
    Ok(())
}

/// Refuses a log line of job `id` longer than `max_payload_bytes`, the limit data has, before
/// anything is written: the error names the job and both sizes.
pub fn check_log_line(id: &str, line: &str, max_payload_bytes: usize) -> CoreResult<()> {
    if line.len() > max_payload_bytes {
        return Err(CoreError::InvalidConfig(format!(
            "log line of job {id:?} is {} bytes, over max_payload_bytes ({max_payload_bytes})",
            line.len()
        )));
    }
    Ok(())
}

pub fn validate_priority(priority: u32) -> CoreResult<()> {
    if priority > MAX_PRIORITY {
        return Err(CoreError::InvalidConfig(format!(
            "invalid priority: {priority} (must be between 0 and {MAX_PRIORITY})"
        )));
    }
    Ok(())
}

/// Custom ids must not look like generated ones: empty, `0`, `0:...` and pure integers are
/// refused (BullMQ's rule, which keeps custom and automatic ids apart).
pub fn validate_job_id(id: &str) -> CoreResult<()> {
    let digits = id.strip_prefix('-').unwrap_or(id);
    let why = if id.is_empty() {
        Some("must not be empty")
    } else if id == "0" || id.starts_with("0:") {
        Some("must not be 0 or start with '0:'")
    } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        Some("must not be an integer")
    } else {
        None
    };
    match why {
        Some(why) => Err(CoreError::InvalidConfig(format!(
            "invalid job_id: {id:?} ({why})"
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_id_rules() {
        for bad in ["", "0", "0:x", "42", "-7"] {
            assert!(validate_job_id(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["a", "welcome:ops", "1a", "x0", "-", "00a"] {
            assert!(validate_job_id(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn backoff_delays() {
        let exp = Backoff {
            kind: BackoffKind::Exponential,
            delay: 1000,
            jitter: 0.0,
            name: None,
        };
        assert_eq!((exp.delay_for(1, 0.5), exp.delay_for(3, 0.5)), (1000, 4000));
        let jittered = Backoff { jitter: 0.5, ..exp };
        assert_eq!(jittered.delay_for(1, 1.0), 500);
        let fixed = Backoff {
            kind: BackoffKind::Fixed,
            delay: 2000,
            jitter: 0.0,
            name: None,
        };
        assert_eq!(fixed.delay_for(5, 0.0), 2000);
    }

    #[test]
    fn a_custom_backoff_stores_its_name_and_waits_nothing_by_itself() {
        let custom = Backoff {
            kind: BackoffKind::Custom,
            delay: 0,
            jitter: 0.0,
            name: Some("linear".into()),
        };
        let json = serde_json::to_string(&custom).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"custom","delay":0,"jitter":0.0,"name":"linear"}"#
        );
        assert_eq!(serde_json::from_str::<Backoff>(&json).unwrap(), custom);
        // (the worker's strategy gives the delay, sent with the failure)
        assert_eq!(custom.delay_for(3, 0.5), 0);
        let fixed = r#"{"kind":"fixed","delay":5,"jitter":0.0}"#;
        assert_eq!(serde_json::from_str::<Backoff>(fixed).unwrap().name, None);
    }

    #[test]
    fn dedup_rules() {
        let ok = Dedup {
            ttl: Some(1000),
            extend: true,
            replace: true,
            ..Dedup::simple("d")
        };
        assert!(ok.validate().is_ok());
        let cases = [
            (Dedup::simple(""), "dedup id"),
            (
                Dedup {
                    ttl: Some(0),
                    ..Dedup::simple("d")
                },
                "ttl: 0",
            ),
            (
                Dedup {
                    extend: true,
                    ..Dedup::simple("d")
                },
                "extend",
            ),
            (
                Dedup {
                    replace: true,
                    keep_last: true,
                    ..Dedup::simple("d")
                },
                "replace and keep_last",
            ),
        ];
        for (bad, fragment) in cases {
            let options = JobOptions {
                dedup: Some(bad.clone()),
                ..JobOptions::default()
            };
            let err = options.validate().unwrap_err();
            assert!(
                matches!(err, CoreError::InvalidConfig(_)),
                "{bad:?}: {err:?}"
            );
            assert!(err.to_string().contains(fragment), "{err}");
        }
    }

    #[test]
    fn stack_trace_limit_round_trips_and_reads_as_the_default_when_absent() {
        let older: JobOptions = serde_json::from_str(r#"{"attempts":3}"#).unwrap();
        assert_eq!(older.stack_trace_limit, None);
        assert_eq!(
            older.kept_traces(),
            crate::jobs::constants::STACKTRACE_LIMIT
        );
        let none_kept = JobOptions {
            stack_trace_limit: Some(0),
            ..JobOptions::default()
        };
        let json = serde_json::to_string(&none_kept).unwrap();
        assert_eq!(json, r#"{"stack_trace_limit":0}"#);
        let read: JobOptions = serde_json::from_str(&json).unwrap();
        assert_eq!((read.stack_trace_limit, read.kept_traces()), (Some(0), 0));
    }

    #[test]
    fn dedup_serialises_only_what_is_set() {
        let options = JobOptions {
            dedup: Some(Dedup {
                ttl: Some(5),
                ..Dedup::simple("d")
            }),
            ..JobOptions::default()
        };
        let json = serde_json::to_string(&options).unwrap();
        assert!(json.contains(r#""dedup":{"id":"d","ttl":5}"#), "{json}");
        assert_eq!(serde_json::from_str::<JobOptions>(&json).unwrap(), options);
        let plain = serde_json::to_string(&JobOptions::default()).unwrap();
        assert!(!plain.contains("dedup"), "{plain}");
    }

    #[test]
    fn scheduler_mark_is_serialised_only_when_set_and_refused_in_adds() {
        let plain = serde_json::to_string(&JobOptions::default()).unwrap();
        assert!(!plain.contains("scheduler"), "{plain}");
        let marked = JobOptions {
            scheduler: Some("report".into()),
            ..JobOptions::default()
        };
        let json = serde_json::to_string(&marked).unwrap();
        assert!(json.contains(r#""scheduler":"report""#), "{json}");
        assert_eq!(serde_json::from_str::<JobOptions>(&json).unwrap(), marked);
        let err = marked.validate().unwrap_err().to_string();
        assert!(err.contains("invalid scheduler: \"report\""), "{err}");
    }

    #[test]
    fn telemetry_is_serialised_only_when_set_and_bounded() {
        let plain = serde_json::to_string(&JobOptions::default()).unwrap();
        assert!(!plain.contains("telemetry"), "{plain}");
        let carrier = Telemetry::from([("traceparent".to_owned(), "00-ab-cd-01".to_owned())]);
        let traced = JobOptions {
            telemetry: Some(carrier),
            ..JobOptions::default()
        };
        let json = serde_json::to_string(&traced).unwrap();
        assert!(
            json.contains(r#""telemetry":{"traceparent":"00-ab-cd-01"}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<JobOptions>(&json).unwrap(), traced);
        assert!(traced.validate().is_ok());

        let big = Telemetry::from([("k".to_owned(), "v".repeat(MAX_TELEMETRY_BYTES))]);
        let err = validate_telemetry(&big).unwrap_err().to_string();
        assert!(err.contains("8193 bytes"), "{err}");
        let many: Telemetry = (0..=MAX_TELEMETRY_ENTRIES)
            .map(|i| (format!("k{i}"), String::new()))
            .collect();
        let err = validate_telemetry(&many).unwrap_err().to_string();
        assert!(err.contains("17 entries"), "{err}");
        let empty_key = Telemetry::from([(String::new(), "v".to_owned())]);
        let err = validate_telemetry(&empty_key).unwrap_err().to_string();
        assert!(err.contains("telemetry key"), "{err}");
    }

    #[test]
    fn priority_bound() {
        assert!(validate_priority(MAX_PRIORITY).is_ok());
        let err = validate_priority(MAX_PRIORITY + 1).unwrap_err().to_string();
        assert!(err.contains("2097152"), "{err}");
        assert!(err.contains("2097151"), "{err}");
    }
}
