//! The criteria of `search_jobs` and `remove_jobs`, and whether a job meets them: the same
//! rules as `lua/search-2.lua` applies on Redis, so every backend finds the same jobs.

use serde_json::Value;

use crate::error::{CoreError, CoreResult};

use super::model::{Job, Millis};

/// The most candidates one page of `search_jobs` reads, matching or not: a page over a huge
/// queue stops there and returns its cursor, so a search never holds a store (or a Redis
/// server) for longer than reading this many jobs.
pub const SEARCH_SCAN_LIMIT: usize = 1000;

/// The most jobs one page of `search_jobs` returns.
pub const MAX_SEARCH_COUNT: usize = SEARCH_SCAN_LIMIT;

/// What a job must have to be found; every criterion given must hold (none given: every job).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFilter {
    /// The job's name, exactly.
    pub name: Option<String>,
    /// Text the job's id starts with or its name contains (the dashboard's search box).
    pub text: Option<String>,
    /// Dotted paths into the job's data (`"a.b"`, a number indexes a list) and the JSON scalar
    /// (text, number, boolean, null) each must equal there; numbers compare by value.
    pub data: Vec<(String, String)>,
    /// The job's age is at least this (ms): its finish time, when it has one, else its
    /// creation time, is at or before `now - older_than` (as `clean` measures it).
    pub older_than: Option<Millis>,
    /// The job's age is below this (ms).
    pub newer_than: Option<Millis>,
}

impl JobFilter {
    /// Whether no criterion is given.
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.text.is_none()
            && self.data.is_empty()
            && self.older_than.is_none()
            && self.newer_than.is_none()
    }

    /// The filter ready to test jobs at `now`; `InvalidConfig` naming a bad path or value.
    pub fn matcher(&self, now: Millis) -> CoreResult<Matcher<'_>> {
        let mut data = Vec::with_capacity(self.data.len());
        for (path, value) in &self.data {
            data.push((data_path(path)?, data_value(path, value)?));
        }
        Ok(Matcher {
            filter: self,
            data,
            now,
        })
    }
}

/// The segments of a dotted path; refused when empty or with an empty segment.
pub fn data_path(path: &str) -> CoreResult<Vec<&str>> {
    let segments: Vec<&str> = path.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(CoreError::InvalidConfig(format!(
            "invalid data path: {path:?} (dotted keys, none of them empty)"
        )));
    }
    Ok(segments)
}

/// The JSON scalar a data path must equal.
fn data_value(path: &str, value: &str) -> CoreResult<Value> {
    match serde_json::from_str::<Value>(value) {
        Ok(v) if !v.is_array() && !v.is_object() => Ok(v),
        _ => Err(CoreError::InvalidConfig(format!(
            "invalid data value for {path:?}: {value} (must be JSON text, a number, a \
             boolean or null)"
        ))),
    }
}

/// A `JobFilter` with its data values parsed, testing jobs at one moment.
pub struct Matcher<'a> {
    filter: &'a JobFilter,
    data: Vec<(Vec<&'a str>, Value)>,
    now: Millis,
}

impl Matcher<'_> {
    pub fn matches(&self, job: &Job) -> bool {
        let f = self.filter;
        if f.name.as_deref().is_some_and(|name| *job.name != *name) {
            return false;
        }
        if let Some(text) = f.text.as_deref() {
            if !job.id.starts_with(text) && !job.name.contains(text) {
                return false;
            }
        }
        let at = job.finished_on.unwrap_or(job.created_at);
        if let Some(age) = f.older_than {
            if at > self.now.saturating_sub(age) {
                return false;
            }
        }
        if let Some(age) = f.newer_than {
            if at <= self.now.saturating_sub(age) {
                return false;
            }
        }
        if self.data.is_empty() {
            return true;
        }
        let Ok(data) = serde_json::from_str::<Value>(&job.data) else {
            return false;
        };
        self.data
            .iter()
            .all(|(path, want)| lookup(&data, path).is_some_and(|found| same(found, want)))
    }
}

/// The value at `path` in `data`: a segment names an object's key, or, in a list, an index.
fn lookup<'v>(data: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(data, |value, segment| match value {
        Value::Object(map) => map.get(*segment),
        Value::Array(list) => list.get(segment.parse::<usize>().ok()?),
        _ => None,
    })
}

/// Scalar equality, numbers by value (`1` is `1.0`, as Lua's numbers compare on Redis).
fn same(found: &Value, want: &Value) -> bool {
    match (found, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b && !a.is_array() && !a.is_object(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, name: &str, data: &str, created: Millis) -> Job {
        let options = crate::jobs::options::JobOptions::default();
        Job::added(
            id.into(),
            name.into(),
            data.into(),
            options,
            (1, 1),
            false,
            created,
        )
    }

    #[test]
    fn criteria_all_hold() {
        let filter = JobFilter {
            name: Some("mail".into()),
            data: vec![
                ("user.id".into(), "7".into()),
                ("tags.1".into(), "\"b\"".into()),
            ],
            older_than: Some(100),
            ..JobFilter::default()
        };
        let m = filter.matcher(1_000).unwrap();
        assert!(m.matches(&job(
            "1",
            "mail",
            r#"{"user":{"id":7.0},"tags":["a","b"]}"#,
            900
        )));
        assert!(!m.matches(&job(
            "1",
            "mail",
            r#"{"user":{"id":7},"tags":["a","b"]}"#,
            901
        )));
        assert!(!m.matches(&job("1", "sms", r#"{"user":{"id":7},"tags":["a","b"]}"#, 0)));
        assert!(!m.matches(&job(
            "1",
            "mail",
            r#"{"user":{"id":"7"},"tags":["a","b"]}"#,
            0
        )));
        assert!(!m.matches(&job("1", "mail", r#"{"user":{"id":7},"tags":["b"]}"#, 0)));
    }

    #[test]
    fn text_is_an_id_prefix_or_a_name_part() {
        let filter = JobFilter {
            text: Some("ab".into()),
            ..JobFilter::default()
        };
        let m = filter.matcher(0).unwrap();
        assert!(m.matches(&job("abc", "x", "{}", 0)));
        assert!(m.matches(&job("1", "grab", "{}", 0)));
        assert!(!m.matches(&job("cab", "x", "{}", 0)));
    }

    #[test]
    fn bad_paths_and_values_are_refused() {
        for (path, value) in [
            ("", "1"),
            ("a..b", "1"),
            ("a", "[1]"),
            ("a", "{}"),
            ("a", "x"),
        ] {
            let filter = JobFilter {
                data: vec![(path.into(), value.into())],
                ..JobFilter::default()
            };
            assert!(matches!(
                filter.matcher(0),
                Err(CoreError::InvalidConfig(_))
            ));
        }
    }
}
