//! The queue's event stream on Redis: a stream of entries, one per script call, each holding
//! that call's events (`emit` in `lua/includes/common.lua`). Waiting for new events is in `waits.rs`.

use std::sync::Arc;

use lanemq_core::jobs::{
    check_custom_event, event_name, field_name, known_event_name, BoxFuture, JobEvents, Millis,
    StreamEvent, Text,
};
use lanemq_core::CoreResult;
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{items, text, unexpected};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

/// Cancellation's event and its field (`cancel-2.lua`): known here whether or not the core's
/// lists of names hold them (an unknown name in an entry would read as a field of the event
/// before it).
const CANCELLED: &str = "cancelled";
const REASON: &str = "reason";

/// `name` as the static name, if it is an event's (`known_event_name`, and `cancelled`).
pub(crate) fn stream_event_name(name: &str) -> Option<&'static str> {
    known_event_name(name).or((name == CANCELLED).then_some(CANCELLED))
}

/// An event field's name as the static name (`field_name`, and `reason`).
pub(crate) fn stream_field_name(name: &str) -> &'static str {
    if name == REASON {
        REASON
    } else {
        field_name(name)
    }
}

impl RedisBackend {
    /// Events with `start <= id <= end`, at most `limit` (0: all), oldest first. An entry's
    /// id is its last event's (`parse_entry`), so the first entry read from `start` on may
    /// begin before `start`, and entries are read a page at a time until one passes `end`.
    /// Events below the floor of an explicit trim are gone (`lua/trim_events-2.lua`), and so
    /// are those older than the newest `max_events` (`visible_floor`).
    pub async fn read_events(
        &self,
        start: u64,
        end: u64,
        limit: usize,
    ) -> CoreResult<Vec<StreamEvent>> {
        const PAGE: usize = 500;
        let events_key = self.keys.key("events");
        let mut from = format!("{start}-0");
        let mut out = Vec::new();
        loop {
            // Each page comes with the floors, in one round trip (most reads are one page).
            let mut pipe = redis::pipe();
            pipe.cmd("HMGET")
                .arg(self.keys.key("meta"))
                .arg("events_floor")
                .arg("event");
            pipe.cmd("XRANGE")
                .arg(&events_key)
                .arg(&from)
                .arg("+")
                .arg("COUNT")
                .arg(PAGE);
            let ((floor, last), entries): ((Option<u64>, Option<u64>), Value) =
                self.query(&pipe).await?;
            let lowest = start
                .max(floor.unwrap_or(0))
                .max(visible_floor(last.unwrap_or(0), self.max_events));
            let entries = items(entries)?;
            let full = entries.len() == PAGE;
            for entry in entries {
                for event in parse_entry(entry)? {
                    if event.id > end || (limit > 0 && out.len() == limit) {
                        return Ok(out);
                    }
                    from = format!("{}-0", event.id + 1);
                    if event.id >= lowest {
                        out.push(event);
                    }
                }
            }
            if !full {
                return Ok(out);
            }
        }
    }

    pub async fn trim_events(&self, max_len: usize) -> CoreResult<usize> {
        match self
            .change(&scripts::TRIM_EVENTS, 0, &[&max_len.to_string()])
            .await?
        {
            Value::Int(gone) => Ok(gone as usize),
            other => Err(unexpected(&format!("trim_events: {other:?}"))),
        }
    }

    /// Appends a custom event (`JobEvents::publish_event`) in one script call.
    pub async fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> CoreResult<u64> {
        let job = job_id.unwrap_or_default();
        match self
            .change(&scripts::PUBLISH_EVENT, now, &[&name, &job, &data])
            .await?
        {
            Value::Int(id) => Ok(id as u64),
            other => Err(unexpected(&format!("publish_event: {other:?}"))),
        }
    }

    pub async fn last_event_id(&self) -> CoreResult<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.key("meta")).arg("event");
        let (last,): (Option<u64>,) = self.query(&pipe).await?;
        Ok(last.unwrap_or(0))
    }
}

/// The lowest event id a reader shows when `last` is the newest: the newest `max_events`
/// events, as the in-process backends keep them. The stream keeps about as many: its
/// trimming (`flush_events` in `lua/includes/common.lua`) is approximate, and drops whole
/// nodes of up to 100 entries, each holding a call's events, so up to several hundred more
/// stay on the server (BullMQ's bound for 20 is 45), which trimming exactly on every write
/// would remove at a cost to every call (lua/README.md, `events`).
pub(crate) fn visible_floor(last: u64, max_events: usize) -> u64 {
    (last + 1).saturating_sub(max_events as u64)
}

/// The events of an entry `[id, [field, value, ...]]` of the events stream, oldest first. An
/// entry holds the events of one script call (`emit` in `lua/includes/common.lua`): `ts`, then per
/// event `<name> <job id or "">`, then its own fields. Its id is the last event's; the others'
/// ids precede it one by one. (An entry written before events were gathered holds one event,
/// as `event <name> ts <ms> [job <id>]` and its fields: it reads the same.)
pub(crate) fn parse_entry(entry: Value) -> CoreResult<Vec<StreamEvent>> {
    let mut entry = items(entry)?.into_iter();
    let id = entry.next().and_then(|v| text(&v)).unwrap_or_default();
    let last: u64 = id
        .split('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let values: Vec<String> = entry
        .next()
        .map(items)
        .transpose()?
        .unwrap_or_default()
        .iter()
        .filter_map(text)
        .collect();
    let mut timestamp = 0;
    let mut events: Vec<StreamEvent> = Vec::new();
    let begun = |event: &'static str, job: Option<&str>| StreamEvent {
        id: 0,
        timestamp: 0,
        event,
        job_id: job.map(Arc::from),
        field: None,
        extra: None,
    };
    for pair in values.chunks(2) {
        let [key, value] = pair else { continue };
        if key == "ts" {
            timestamp = value.parse().unwrap_or(0);
        } else if let Some(name) = stream_event_name(key) {
            events.push(begun(name, Some(value.as_str()).filter(|v| !v.is_empty())));
        } else if key == "event" {
            events.push(begun(event_name(value), None)); // the older format
        } else if let Some(event) = events.last_mut() {
            if key == "job" {
                event.job_id = Some(Arc::from(value.as_str())); // the older format
                continue;
            }
            let field = (stream_field_name(key), Text::Owned(value.clone()));
            // The first other field is `field`; a second (deduplicated's) is `extra`.
            if event.field.is_none() {
                event.field = Some(field);
            } else {
                event.extra = Some(Box::new(field));
            }
        }
    }
    let first = (last + 1).saturating_sub(events.len() as u64);
    for (n, event) in events.iter_mut().enumerate() {
        event.id = first + n as u64;
        event.timestamp = timestamp;
    }
    Ok(events)
}

impl JobEvents for RedisJobBackend {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        call!(self, |b| b.read_events(start, end, limit))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        call!(self, |b| b.trim_events(max_len))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        call!(self, |b| b.last_event_id())
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        call!(self, |b| b.wait_events(after, timeout))
    }

    fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> BoxFuture<u64> {
        let limit = self.max_payload_bytes();
        call!(self, |b| async move {
            check_custom_event(&name, &data, limit)?;
            b.publish_event(name, job_id, data, now).await
        })
    }
}
