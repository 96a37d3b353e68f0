//! Reads that need no script: counts, listings, results and the event stream.

use std::sync::Arc;

use lanemq_core::jobs::{
    event_name, field_name, index_range, known_event_name, rate_limited_until, FinishedResult, Job,
    JobState, Millis, StreamEvent, Text,
};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::{count_jobs, RedisBackend};
use crate::decode::{items, text};
use crate::keys::STATE_SETS;
use crate::manage::unexpected;
use crate::scripts;

fn set_of(state: JobState) -> &'static str {
    STATE_SETS[JobState::ALL.iter().position(|s| *s == state).unwrap_or(0)]
}

/// What decides when a claim may succeed: settings, waiting and active counts, first delayed.
type ReadyState = (Vec<Option<u64>>, usize, usize, Vec<(String, f64)>);

impl RedisBackend {
    pub(crate) fn error(&self, error: redis::RedisError) -> CoreError {
        self.server.error(error)
    }

    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
    ) -> CoreResult<T> {
        let mut connection = self.connection().await?;
        pipe.query_async(&mut connection)
            .await
            .map_err(|e| self.error(e))
    }

    pub async fn get_state(&self, id: &str) -> CoreResult<Option<JobState>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.field("state")).arg(id);
        let (state,): (Option<usize>,) = self.query(&pipe).await?;
        Ok(state.and_then(|s| JobState::ALL.get(s).copied()))
    }

    pub async fn get_job_counts(
        &self,
        states: Vec<JobState>,
    ) -> CoreResult<Vec<(JobState, usize)>> {
        let counts = self.counts().await?;
        let states: Vec<JobState> = if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states
        };
        let mut out: Vec<(JobState, usize)> = Vec::new();
        for state in states {
            if !out.iter().any(|(s, _)| *s == state) {
                let index = JobState::ALL.iter().position(|s| *s == state).unwrap_or(0);
                out.push((state, counts[index]));
            }
        }
        Ok(out)
    }

    pub async fn count_pending(&self) -> CoreResult<usize> {
        let counts = self.counts().await?;
        Ok(counts[0] + counts[1] + counts[3])
    }

    pub async fn get_counts_per_priority(
        &self,
        priorities: Vec<u32>,
    ) -> CoreResult<Vec<(u32, usize)>> {
        let mut pipe = redis::pipe();
        for p in &priorities {
            pipe.cmd("ZCOUNT")
                .arg(self.keys.key("waiting"))
                .arg(p)
                .arg(p);
        }
        let counts: Vec<usize> = self.query(&pipe).await?;
        Ok(priorities.into_iter().zip(counts).collect())
    }

    async fn jobs(&self, ids: Vec<String>) -> CoreResult<Vec<Job>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(job) = self.get_job(&id).await? {
                out.push(job);
            }
        }
        Ok(out)
    }

    pub async fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<Vec<Job>> {
        let states: Vec<JobState> = if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states
        };
        let counts = self.counts().await?;
        let count = |s: JobState| counts[JobState::ALL.iter().position(|x| *x == s).unwrap_or(0)];
        let total: usize = states.iter().map(|s| count(*s)).sum();
        let range = index_range(total, start, end);
        let (mut skip, mut take) = (range.start, range.len());
        let mut ids = Vec::new();
        for state in states {
            if take == 0 {
                break;
            }
            let n = count(state);
            if skip >= n {
                skip -= n;
                continue;
            }
            let last = (skip + take).min(n) - 1;
            let key = self.keys.key(set_of(state));
            let mut pipe = redis::pipe();
            if !ascending && state == JobState::Active {
                // The top rank of `active` is its sentinel (scored +inf): start below it. (By
                // score, since an offset by score costs a step per member skipped, which only
                // this small set can afford.)
                pipe.cmd("ZREVRANGEBYSCORE")
                    .arg(key)
                    .arg("(+inf")
                    .arg("-inf")
                    .arg("LIMIT")
                    .arg(skip)
                    .arg(last - skip + 1);
            } else {
                pipe.cmd(if ascending { "ZRANGE" } else { "ZREVRANGE" })
                    .arg(key)
                    .arg(skip)
                    .arg(last);
            }
            let (members,): (Vec<String>,) = self.query(&pipe).await?;
            take -= members.len().min(take);
            skip = 0;
            // Waiting members carry a 14-digit order prefix, the others a 14-digit sequence.
            ids.extend(members.into_iter().map(|m| m[14..].to_owned()));
        }
        self.jobs(ids).await
    }

    pub async fn finished_result(&self, id: &str) -> CoreResult<FinishedResult> {
        let mut pipe = redis::pipe();
        for field in ["state", "result", "reason"] {
            pipe.cmd("HGET").arg(self.keys.field(field)).arg(id);
        }
        let (state, result, reason): (Option<usize>, Option<String>, Option<String>) =
            self.query(&pipe).await?;
        Ok(match state.and_then(|s| JobState::ALL.get(s).copied()) {
            None => FinishedResult::Missing,
            // A null result is not stored (complete_jobs in lua/includes/jobs.lua).
            Some(JobState::Completed) => {
                FinishedResult::Completed(Some(Arc::from(result.as_deref().unwrap_or("null"))))
            }
            Some(JobState::Failed) => FinishedResult::Failed(reason.unwrap_or_default()),
            Some(state) => FinishedResult::NotFinished(state),
        })
    }

    /// Events with `start <= id <= end`, at most `limit` (0: all), oldest first. An entry's
    /// id is its last event's (`parse_entry`), so the first entry read from `start` on may
    /// begin before `start`, and entries are read a page at a time until one passes `end`.
    /// Events below the floor of an explicit trim are gone (`lua/trim_events-36.lua`).
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
            // Each page comes with the floor, in one round trip (most reads are one page).
            let mut pipe = redis::pipe();
            pipe.cmd("HGET")
                .arg(self.keys.key("meta"))
                .arg("events_floor");
            pipe.cmd("XRANGE")
                .arg(&events_key)
                .arg(&from)
                .arg("+")
                .arg("COUNT")
                .arg(PAGE);
            let (floor, entries): (Option<u64>, Value) = self.query(&pipe).await?;
            let lowest = start.max(floor.unwrap_or(0));
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

    pub async fn last_event_id(&self) -> CoreResult<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.key("meta")).arg("event");
        let (last,): (Option<u64>,) = self.query(&pipe).await?;
        Ok(last.unwrap_or(0))
    }

    /// When a claim could next succeed (see `model::next_ready_at`), read in one round trip.
    pub(crate) async fn next_ready_at(&self, now: Millis) -> CoreResult<Option<Millis>> {
        let meta = self.keys.key("meta");
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET")
            .arg(&meta)
            .arg("paused")
            .arg("rate_max")
            .arg("rate_duration")
            .arg("rate_start")
            .arg("rate_count")
            .arg("max_active")
            .arg("rate_until");
        pipe.cmd("ZCARD").arg(self.keys.key("waiting"));
        count_jobs(&mut pipe, self.keys.key("active"));
        pipe.cmd("ZRANGE")
            .arg(self.keys.key("delayed"))
            .arg(0)
            .arg(0)
            .arg("WITHSCORES");
        let (settings, waiting, active, first): ReadyState = self.query(&pipe).await?;
        let get = |i: usize| settings.get(i).copied().flatten();
        let limit = get(1)
            .zip(get(2))
            .map(|(max, duration)| (max as u32, duration));
        let (start, used, until) = (get(3).unwrap_or(0), get(4).unwrap_or(0), get(6));
        let window_end = rate_limited_until(now, until.unwrap_or(0), limit, start, used);
        let maxed = get(5).is_some_and(|max| active as u64 >= max);
        let next_delayed = first.first().map(|(_, due)| *due as Millis);
        Ok(lanemq_core::jobs::next_ready_at(
            now,
            get(0) == Some(1),
            waiting > 0,
            window_end,
            maxed,
            next_delayed,
        ))
    }
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
        } else if let Some(name) = known_event_name(key) {
            events.push(begun(name, Some(value.as_str()).filter(|v| !v.is_empty())));
        } else if key == "event" {
            events.push(begun(event_name(value), None)); // the older format
        } else if let Some(event) = events.last_mut() {
            if key == "job" {
                event.job_id = Some(Arc::from(value.as_str())); // the older format
                continue;
            }
            let field = (field_name(key), Text::Owned(value.clone()));
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
