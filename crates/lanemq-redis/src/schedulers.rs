//! Job schedulers on Redis (`lua/includes/schedulers.lua`, `lua/schedulers-2.lua`), decided by
//! `lanemq_core::jobs::scheduler` as on the other backends.
//!
//! Rust reads a scheduler's record (with its version) and its pending occurrence's state,
//! decides, computes the run times the decision may need, and hands them to a script that
//! writes only if the record is still the version it read (else: read again, decide again).
//! The claim scripts produce the next occurrence themselves (Lua computes `every` schedules; a
//! cron schedule's record carries its `upcoming` run times, computed here). After a claim that
//! started occurrences, `after_claim` tops those lists up, and repairs a record the claim marked
//! stale (no usable upcoming time); `recover_stalled` repairs stale records too.

use std::collections::BTreeSet;

use lanemq_core::jobs::scheduler::{
    self, occurrence_id, Current, JobScheduler, OnClaim, OnUpsert, Template,
};
use lanemq_core::jobs::{BoxFuture, Job, JobOptions, JobSchedulers, JobState, Millis};
use lanemq_core::schedule::{Repeat, ScheduleSpec};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;
use serde::Deserialize;

use crate::backend::RedisBackend;
use crate::decode::{self, items, text};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

/// How many run times a cron record carries after its next run.
const UPCOMING: usize = 64;
/// A claim's follow-up tops the list up when fewer are left.
const TOP_UP_BELOW: usize = 16;
/// Longer intervals are left to Rust (the list, like cron): Lua's doubles are exact to 2^53.
const LUA_EVERY_MAX: Millis = 1 << 52;
/// Guarded writes retried this many times before giving up (each retry means another client
/// changed the record in between: many in a row is not contention but a bug).
const ATTEMPTS: usize = 1000;

/// The "state" `schedulers-2.lua` gives a pending occurrence that is no job but waits on its
/// template's dedup key (keep_last) for the key's owner to finish (`Current::kept`).
const KEPT: &str = "kept";

fn bad(what: &str) -> CoreError {
    CoreError::Storage(format!("redis: unexpected scheduler reply: {what}"))
}

fn json<T: serde::Serialize>(value: &T) -> CoreResult<String> {
    serde_json::to_string(value).map_err(|e| CoreError::Storage(e.to_string()))
}

/// A record as `lua/includes/schedulers.lua` stores it (every number a string).
#[derive(Debug, Deserialize)]
struct Record {
    spec: String,
    name: String,
    data: String,
    opts: String,
    every: Option<String>,
    count: String,
    next_run: String,
    #[serde(default)]
    upcoming: Vec<String>,
    #[serde(default)]
    complete: bool,
    stale: Option<String>,
    v: String,
}

/// A record decoded for deciding.
struct Stored {
    spec: ScheduleSpec,
    template: Template,
    count: u64,
    next_run: Millis,
    record: Record,
}

fn number(value: &str, what: &str) -> CoreResult<u64> {
    value.parse().map_err(|_| bad(&format!("{what} {value:?}")))
}

fn stored(raw: &str) -> CoreResult<Stored> {
    let record: Record = serde_json::from_str(raw).map_err(|e| bad(&format!("record: {e}")))?;
    let spec = serde_json::from_str(&record.spec).map_err(|e| bad(&format!("spec: {e}")))?;
    let options: JobOptions =
        serde_json::from_str(&record.opts).map_err(|e| bad(&format!("options: {e}")))?;
    Ok(Stored {
        spec,
        template: Template {
            name: record.name.clone(),
            data: record.data.clone(),
            options,
        },
        count: number(&record.count, "count")?,
        next_run: number(&record.next_run, "next_run")?,
        record,
    })
}

/// The fixed part of a record (`lua/includes/schedulers.lua` describes the fields).
fn base_record(spec: &ScheduleSpec, template: &Template) -> CoreResult<String> {
    let options = &template.options;
    // The template options without job_id, delay and scheduler (the occurrence sets them), as
    // the inside of a JSON object.
    let mut occ = serde_json::to_value(options).map_err(|e| CoreError::Storage(e.to_string()))?;
    if let Some(map) = occ.as_object_mut() {
        for field in ["job_id", "delay", "scheduler"] {
            map.remove(field);
        }
    }
    let occ = json(&occ)?;
    let occ = occ
        .strip_prefix('{')
        .and_then(|o| o.strip_suffix('}'))
        .ok_or_else(|| bad("template options are not an object"))?;
    let mut record = serde_json::json!({
        "spec": json(spec)?,
        "name": template.name,
        "data": template.data,
        "opts": json(options)?,
        "occ": occ,
        "prio": options.priority.to_string(),
        "lifo": options.lifo,
    });
    let fields = record.as_object_mut().expect("an object");
    if let Some(every) = lua_every(spec) {
        fields.insert("every".into(), every.to_string().into());
    }
    if let Some(limit) = spec.limit {
        fields.insert("limit".into(), limit.to_string().into());
    }
    if let Some(end) = spec.end {
        fields.insert("end".into(), end.to_string().into());
    }
    json(&record)
}

/// The interval Lua computes with, if it can.
fn lua_every(spec: &ScheduleSpec) -> Option<Millis> {
    match spec.repeat {
        Repeat::Every { every } if every <= LUA_EVERY_MAX => Some(every),
        _ => None,
    }
}

/// `from`, then the schedule's following run times (`spec.next(at, count, now)`, as `place`
/// steps), up to `n` in all; `true` when the schedule has none after the last.
fn run_times(
    spec: &ScheduleSpec,
    from: Millis,
    count: u64,
    now: Millis,
    n: usize,
) -> (Vec<Millis>, bool) {
    let mut times = vec![from];
    let mut at = from;
    while times.len() < n {
        match spec.next(at, count, now) {
            Ok(Some(next)) => {
                times.push(next);
                at = next;
            }
            // An evaluation error ends the schedule, as `on_claim` and `place` treat it.
            Ok(None) | Err(_) => return (times, true),
        }
    }
    (times, false)
}

fn reply_kind(reply: &[Value]) -> Option<String> {
    reply.first().and_then(text)
}

impl RedisBackend {
    async fn sched_op(&self, now: Millis, args: Vec<String>) -> CoreResult<Vec<Value>> {
        let mut all = vec![now.to_string(), self.max_events.to_string()];
        all.extend(args);
        items(self.run(&scripts::SCHEDULERS_OP, all).await?)
    }

    /// The record of `key` and its pending occurrence's state code (as stored), read at once.
    async fn sched_read(&self, key: &str) -> CoreResult<Option<(Stored, Option<String>)>> {
        let reply = self.sched_op(0, vec!["get".into(), key.to_owned()]).await?;
        match reply.first().and_then(text) {
            None => Ok(None),
            Some(raw) => Ok(Some((stored(&raw)?, reply.get(1).and_then(text)))),
        }
    }

    pub async fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
        max_payload_bytes: usize,
    ) -> CoreResult<Job> {
        scheduler::check(&key, &spec, &template, now, max_payload_bytes)?;
        let base = base_record(&spec, &template)?;
        let mut n = UPCOMING;
        for _ in 0..ATTEMPTS {
            let existing = self.sched_read(&key).await?;
            if let Some((s, _)) = &existing {
                if s.record.stale.is_some() {
                    // The claim's next occurrence comes first, as on the other backends.
                    self.repair(&key, s, now).await?;
                    continue;
                }
            }
            let pending = existing.as_ref().and_then(|(_, state)| {
                state
                    .as_deref()
                    .and_then(|c| c.parse::<usize>().ok())
                    .and_then(|c| JobState::ALL.get(c).copied())
            });
            let current = existing.as_ref().map(|(s, state)| Current {
                spec: &s.spec,
                template: &s.template,
                iteration_count: s.count,
                next_run: s.next_run,
                pending,
                kept: state.as_deref() == Some(KEPT),
            });
            let decision = scheduler::on_upsert(&key, &spec, &template, current.as_ref(), now)?;
            let (keep, replace, number, from) = match decision {
                OnUpsert::Keep => (true, false, 0, 0),
                OnUpsert::Produce {
                    replace,
                    number,
                    from,
                } => (false, replace, number, from),
            };
            let (times, complete) = if keep {
                (Vec::new(), false)
            } else {
                run_times(&spec, from, number.saturating_sub(1), now, n)
            };
            let flag = |on: bool| if on { "1" } else { "0" }.to_owned();
            let mut args = vec![
                "upsert".to_owned(),
                key.clone(),
                existing
                    .as_ref()
                    .map(|(s, _)| s.record.v.clone())
                    .unwrap_or_default(),
                existing
                    .as_ref()
                    .and_then(|(_, state)| state.clone())
                    .unwrap_or_default(),
                flag(keep),
                flag(replace),
                number.to_string(),
                base.clone(),
                flag(complete),
            ];
            args.extend(times.iter().map(Millis::to_string));
            let mut reply = self.sched_op(now, args).await?;
            match reply_kind(&reply).as_deref() {
                Some("ok") if reply.len() == 2 => return decode::job(reply.remove(1)),
                Some("retry") => {}
                Some("more") => n *= 4,
                Some("nofree") => return Err(scheduler::no_free_run(&key, &spec)),
                other => return Err(bad(&format!("{other:?}"))),
            }
        }
        Err(bad("the scheduler kept changing during the upsert"))
    }

    /// Produces the next occurrence of a stale record (or removes the scheduler), as the claim
    /// that marked it would have: `on_claim` at that claim's time. Nothing when the record
    /// changed since it was read.
    async fn repair(&self, key: &str, s: &Stored, now: Millis) -> CoreResult<()> {
        let Some(stale) = &s.record.stale else {
            return Ok(());
        };
        let claimed_at = number(stale, "stale")?;
        let pending = occurrence_id(key, s.next_run);
        let current = Some((&s.spec, s.count, s.next_run));
        let (from, number) = match scheduler::on_claim(&pending, key, current, claimed_at) {
            OnClaim::Ignore => return Ok(()),
            OnClaim::Finish => {
                let args = vec!["finish".into(), key.to_owned(), s.record.v.clone()];
                self.sched_op(now, args).await?;
                return Ok(());
            }
            OnClaim::Advance { from, number } => (from, number),
        };
        let mut n = UPCOMING;
        loop {
            let (times, complete) = run_times(&s.spec, from, number - 1, claimed_at, n);
            let mut args = vec![
                "advance".to_owned(),
                key.to_owned(),
                s.record.v.clone(),
                number.to_string(),
                if complete { "1" } else { "0" }.to_owned(),
            ];
            args.extend(times.iter().map(Millis::to_string));
            let reply = self.sched_op(now, args).await?;
            match reply_kind(&reply).as_deref() {
                Some("more") => n *= 4,
                Some("ok" | "retry") => return Ok(()),
                other => return Err(bad(&format!("{other:?}"))),
            }
        }
    }

    /// A cron record's upcoming run times, recomputed from its next run when few are left.
    async fn top_up(&self, key: &str, s: &Stored, now: Millis) -> CoreResult<()> {
        let (mut times, complete) = run_times(&s.spec, s.next_run, 0, 0, UPCOMING + 1);
        times.remove(0);
        let mut args = vec![
            "upcoming".to_owned(),
            key.to_owned(),
            s.record.v.clone(),
            if complete { "1" } else { "0" }.to_owned(),
        ];
        args.extend(times.iter().map(Millis::to_string));
        self.sched_op(now, args).await.map(drop)
    }

    /// Keeps the schedulers of `keys` able to produce their next occurrences in a claim:
    /// repairs stale records and tops up short upcoming lists (each write guarded by the
    /// record's version; on a change, read again).
    async fn maintain(&self, keys: BTreeSet<String>, now: Millis) -> CoreResult<()> {
        for key in keys {
            for _ in 0..ATTEMPTS {
                let Some((s, _)) = self.sched_read(&key).await? else {
                    break;
                };
                if s.record.stale.is_some() {
                    self.repair(&key, &s, now).await?;
                } else if s.record.every.is_none()
                    && !s.record.complete
                    && s.record.upcoming.len() < TOP_UP_BELOW
                {
                    self.top_up(&key, &s, now).await?;
                } else {
                    break;
                }
            }
        }
        Ok(())
    }

    /// After a claim: the schedulers of the occurrences it started. Best effort: the claim is
    /// done and its jobs are locked, so an error here must not lose them; a record left stale
    /// is repaired by `recover_stalled`, a short list by the next claim.
    pub(crate) async fn after_claim(&self, claimed: &[Job], now: Millis) {
        let keys: BTreeSet<String> = claimed
            .iter()
            .filter_map(|job| job.options.scheduler.clone())
            .collect();
        if !keys.is_empty() {
            let _ = self.maintain(keys, now).await;
        }
    }

    /// Repairs the records claims marked stale (when the claiming client could not).
    pub(crate) async fn repair_stale(&self, now: Millis) -> CoreResult<()> {
        let meta = self.keys.key("meta");
        let mut pipe = redis::pipe();
        pipe.cmd("HDEL").arg(&meta).arg("stale_schedulers");
        let (flagged,): (usize,) = self.query(&pipe).await?;
        if flagged == 0 {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.cmd("HGETALL").arg(self.keys.key("schedulers"));
        let (all,): (Vec<(String, String)>,) = self.query(&pipe).await?;
        let stale: BTreeSet<String> = all
            .into_iter()
            .filter(|(_, raw)| stored(raw).is_ok_and(|s| s.record.stale.is_some()))
            .map(|(key, _)| key)
            .collect();
        let result = self.maintain(stale, now).await;
        if result.is_err() {
            // Look again next time.
            let mut pipe = redis::pipe();
            pipe.cmd("HSET").arg(&meta).arg("stale_schedulers").arg("1");
            let _: CoreResult<((),)> = self.query(&pipe).await;
        }
        result
    }

    fn view(key: String, s: Stored, state: Option<String>) -> JobScheduler {
        let pending = state
            .and_then(|c| c.parse::<usize>().ok())
            .and_then(|c| JobState::ALL.get(c).copied());
        let job_id = scheduler::not_started(pending).then(|| occurrence_id(&key, s.next_run));
        JobScheduler {
            key,
            spec: s.spec,
            template: s.template,
            iteration_count: s.count,
            next_run: s.next_run,
            job_id,
        }
    }

    pub async fn get_scheduler(&self, key: String) -> CoreResult<Option<JobScheduler>> {
        Ok(self
            .sched_read(&key)
            .await?
            .map(|(s, state)| Self::view(key, s, state)))
    }

    /// Schedulers by next run time (then key), as `scheduler::page` orders and slices them
    /// (ZRANGE on `schedulers:next`, whose equal scores sort by key).
    pub async fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<Vec<JobScheduler>> {
        let args = vec![
            "list".to_owned(),
            String::new(),
            start.to_string(),
            end.to_string(),
            if ascending { "1" } else { "0" }.to_owned(),
        ];
        self.sched_op(0, args)
            .await?
            .into_iter()
            .map(|entry| {
                let entry = items(entry)?;
                let field = |i: usize| entry.get(i).and_then(text);
                let key = field(0).ok_or_else(|| bad("a listed key"))?;
                let raw = field(1).ok_or_else(|| bad("a listed record"))?;
                Ok(Self::view(key, stored(&raw)?, field(2)))
            })
            .collect()
    }

    pub async fn count_schedulers(&self) -> CoreResult<usize> {
        let mut pipe = redis::pipe();
        pipe.cmd("HLEN").arg(self.keys.key("schedulers"));
        let (n,): (usize,) = self.query(&pipe).await?;
        Ok(n)
    }

    /// Removes the scheduler and its pending occurrence (if it has not started).
    pub async fn remove_scheduler(&self, key: String, now: Millis) -> CoreResult<bool> {
        let reply = self.sched_op(now, vec!["remove".into(), key]).await?;
        Ok(reply_kind(&reply).as_deref() == Some("1"))
    }
}

impl JobSchedulers for RedisJobBackend {
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        let limit = self.max_payload_bytes();
        call!(self, |b| b
            .upsert_scheduler(key, spec, template, now, limit))
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        call!(self, |b| b.get_scheduler(key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        call!(self, |b| b.list_schedulers(start, end, ascending))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        call!(self, |b| b.count_schedulers())
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_scheduler(key, now))
    }
}
