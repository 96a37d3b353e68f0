//! The per-queue event stream: bounded, with increasing ids, readable by range and trimmed
//! from the front (as BullMQ's events stream).

use std::collections::VecDeque;
use std::sync::Arc;

use super::model::Millis;
use crate::error::{CoreError, CoreResult};

/// Text that is static, shared with the job it describes, or owned: events are written on every
/// transition, so they avoid copying what the job already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Text {
    Static(&'static str),
    Shared(Arc<str>),
    Owned(String),
}

impl Text {
    pub fn as_str(&self) -> &str {
        match self {
            Text::Static(s) => s,
            Text::Shared(s) => s,
            Text::Owned(s) => s,
        }
    }
}

impl From<&'static str> for Text {
    fn from(s: &'static str) -> Self {
        Text::Static(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Text::Owned(s)
    }
}

impl From<&Arc<str>> for Text {
    fn from(s: &Arc<str>) -> Self {
        Text::Shared(Arc::clone(s))
    }
}

/// Every event name the backends write; names read back from storage map onto these.
const EVENT_NAMES: [&str; 21] = [
    "added",
    "waiting",
    "delayed",
    "active",
    "progress",
    "completed",
    "failed",
    "retries-exhausted",
    "stalled",
    "removed",
    "cleaned",
    "drained",
    "paused",
    "resumed",
    "duplicated",
    "deduplicated",
    "debounced",
    "waiting-children",
    "cancelled",
    CUSTOM_EVENT,
    "unknown",
];

/// The event `publish_event` writes: a name of the publisher's choosing in its `name` field and
/// its payload (a JSON object) in `data`, so the stream keeps one static name per event.
pub const CUSTOM_EVENT: &str = "custom";

/// The longest custom event name, in bytes.
pub const MAX_CUSTOM_EVENT_NAME: usize = 200;

/// Checks a custom event before any backend writes it: a name that is not empty, not longer
/// than `MAX_CUSTOM_EVENT_NAME`, and not one of the events lanemq itself writes (a reader could
/// not tell them apart), and a payload within `max_payload_bytes`.
pub fn check_custom_event(name: &str, data: &str, max_payload_bytes: usize) -> CoreResult<()> {
    let refuse = |why: String| Err(CoreError::InvalidConfig(why));
    if name.is_empty() || name.len() > MAX_CUSTOM_EVENT_NAME {
        return refuse(format!(
            "invalid event name {name:?}: must be 1 to {MAX_CUSTOM_EVENT_NAME} bytes"
        ));
    }
    if known_event_name(name).is_some() {
        return refuse(format!(
            "invalid event name {name:?}: lanemq writes events of that name itself"
        ));
    }
    if data.len() > max_payload_bytes {
        return refuse(format!(
            "custom event {name:?}: its data is {} bytes, over the queue's max_payload_bytes ({max_payload_bytes})",
            data.len()
        ));
    }
    Ok(())
}

/// Every field name events carry.
const FIELD_NAMES: [&str; 14] = [
    "name",
    "delay",
    "prev",
    "data",
    "returnvalue",
    "failedReason",
    "attemptsMade",
    "stalledCount",
    "count",
    "deduplicationId",
    "deduplicatedJobId",
    "debounceId",
    "reason",
    "value",
];

fn known(names: &[&'static str], name: &str) -> &'static str {
    names
        .iter()
        .copied()
        .find(|n| *n == name)
        .unwrap_or(names[names.len() - 1])
}

/// An event name read back from storage (a durable backend), as the static name.
pub fn event_name(name: &str) -> &'static str {
    known(&EVENT_NAMES, name)
}

/// Every event name the backends write (`unknown`, what an unknown name reads as, aside): the
/// Redis backend's tests hold the names its Lua scripts emit to these.
pub fn event_names() -> &'static [&'static str] {
    &EVENT_NAMES[..EVENT_NAMES.len() - 1]
}

/// `name` as the static name, if it is an event's (not a field's: the two sets differ, so a
/// stream entry can name its events without a marker, as the Redis backend's does).
pub fn known_event_name(name: &str) -> Option<&'static str> {
    event_names().iter().copied().find(|n| *n == name)
}

/// An event field name read back from storage, as the static name.
pub fn field_name(name: &str) -> &'static str {
    known(&FIELD_NAMES, name)
}

/// One field of an event: its name and its value.
pub type Field = (&'static str, Text);

/// One entry of the stream. Events carry at most one field apart from the job id, except
/// `deduplicated`, which has a second one (`extra`, boxed so the other events pay one word for
/// it), which saves a vector per event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEvent {
    pub id: u64,
    pub timestamp: Millis,
    pub event: &'static str,
    pub job_id: Option<Arc<str>>,
    pub field: Option<Field>,
    pub extra: Option<Box<Field>>,
}

impl StreamEvent {
    /// The event's fields, in order.
    pub fn fields(&self) -> impl Iterator<Item = &Field> {
        self.field.iter().chain(self.extra.as_deref())
    }
}

#[derive(Debug)]
pub struct EventLog {
    events: VecDeque<StreamEvent>,
    max_len: usize,
    next_id: u64,
}

impl EventLog {
    pub fn new(max_len: usize) -> Self {
        Self {
            events: VecDeque::new(),
            max_len,
            next_id: 1,
        }
    }

    pub fn push(
        &mut self,
        now: Millis,
        event: &'static str,
        job_id: Option<&Arc<str>>,
        field: Option<Field>,
    ) {
        self.push_fields(now, event, job_id, field, None);
    }

    /// Like `push`, with a second field.
    pub fn push_fields(
        &mut self,
        now: Millis,
        event: &'static str,
        job_id: Option<&Arc<str>>,
        field: Option<Field>,
        extra: Option<Field>,
    ) {
        if self.max_len == 0 {
            self.next_id += 1;
            return;
        }
        while self.events.len() >= self.max_len {
            self.events.pop_front();
        }
        self.events.push_back(StreamEvent {
            id: self.next_id,
            timestamp: now,
            event,
            job_id: job_id.cloned(),
            field,
            extra: extra.map(Box::new),
        });
        self.next_id += 1;
    }

    /// Events with `start <= id <= end`, at most `limit` (0 = no limit), oldest first.
    pub fn read(&self, start: u64, end: u64, limit: usize) -> Vec<StreamEvent> {
        let first = self.events.partition_point(|e| e.id < start);
        let taken = self.events.iter().skip(first).take_while(|e| e.id <= end);
        if limit == 0 {
            taken.cloned().collect()
        } else {
            taken.take(limit).cloned().collect()
        }
    }

    /// Keeps only the newest `max_len` events; returns how many were dropped.
    pub fn trim(&mut self, max_len: usize) -> usize {
        let drop = self.events.len().saturating_sub(max_len);
        self.events.drain(..drop);
        drop
    }

    /// The id of the newest event ever pushed (0 before the first).
    pub fn last_id(&self) -> u64 {
        self.next_id - 1
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    pub fn clear(&mut self) {
        self.events.clear();
    }

    /// Empties the log and numbers the next event 1, as a queue that never existed (what
    /// `obliterate` leaves on every backend: on Redis the stream itself is deleted).
    pub fn restart(&mut self) {
        self.events.clear();
        self.next_id = 1;
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn event_names_and_field_names_differ() {
        for field in FIELD_NAMES {
            assert_eq!(
                known_event_name(field),
                None,
                "{field} is a field and an event"
            );
        }
        for structural in ["ts", "event", "job", ""] {
            assert_eq!(known_event_name(structural), None);
            assert_eq!(field_name(structural), FIELD_NAMES[FIELD_NAMES.len() - 1]);
        }
        assert_eq!(known_event_name("completed"), Some("completed"));
        assert_eq!(known_event_name("unknown"), None);
    }
}
