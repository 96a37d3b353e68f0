//! Script replies as core types, and the shapes every script shares: a refusal (`checked`),
//! a count, a reply of no known shape (`unexpected`).

use std::collections::HashMap;
use std::sync::Arc;

use lanemq_core::jobs::{scheduler, Job, JobOptions, JobState, Lock, Millis, NewJob};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

/// A reply of a shape no script or command gives.
pub(crate) fn unexpected(what: &str) -> CoreError {
    CoreError::Storage(format!("redis: unexpected reply: {what}"))
}

pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

fn number(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::SimpleString(s) => s.parse().ok(),
        _ => None,
    }
}

/// `text`, as shared text: one copy of the bytes, where `Arc::from(text(..))` makes two.
fn shared(value: &Value) -> Option<Arc<str>> {
    match value {
        Value::BulkString(bytes) => Some(match String::from_utf8_lossy(bytes) {
            std::borrow::Cow::Borrowed(s) => Arc::from(s),
            std::borrow::Cow::Owned(s) => Arc::from(s),
        }),
        other => text(other).map(Arc::from),
    }
}

pub fn items(value: Value) -> CoreResult<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(unexpected(&format!("{other:?}"))),
    }
}

/// A job a script created (`create_jobs`): what the client sent, with the id and place (seq,
/// order) the script gave it. With `hold`, a flow's parent waiting for its children.
pub fn added(new: NewJob, id: Arc<str>, place: (u64, i64), hold: bool, now: Millis) -> Job {
    let (name, data) = (Arc::from(new.name), Arc::from(new.data));
    Job::added(id, name, data, new.options, place, hold, now)
}

/// The jobs `add-2.lua` reports, each with whether it was created. Its reply is the first
/// automatic id, the first seq, then (position from 1, `{0, job...}`) for each job that
/// created nothing. The new jobs take automatic ids and seqs counting up from the first ones,
/// in order, as `create_jobs` gives them; a new job's order is its seq, negated when LIFO and
/// not delayed.
pub fn added_jobs(reply: Value, jobs: Vec<NewJob>, now: Millis) -> CoreResult<Vec<(Job, bool)>> {
    let short = || unexpected("a short add reply");
    let mut reply = items(reply)?.into_iter();
    if let Some(first) = reply.as_slice().first() {
        if text(first).as_deref() == Some("group_full") {
            reply.next();
            return Err(group_full(reply));
        }
    }
    let mut int = |what| {
        reply
            .next()
            .as_ref()
            .and_then(number)
            .ok_or_else(|| unexpected(what))
    };
    let (mut auto_id, mut seq) = (int("first id")?, int("first seq")?);
    let mut existed = HashMap::new();
    while let Some(position) = reply.next() {
        let position = number(&position).ok_or_else(|| unexpected("an existing job's position"))?;
        existed.insert(position, reply.next().ok_or_else(short)?);
    }
    let jobs: Vec<(Job, bool)> = jobs
        .into_iter()
        .enumerate()
        .map(|(index, new)| {
            if let Some(entry) = existed.remove(&(index as i64 + 1)) {
                let stored = items(entry)?.into_iter().nth(1).ok_or_else(short)?;
                return Ok((job(stored)?, false));
            }
            let id: Arc<str> = match new.options.job_id.as_deref() {
                Some(id) if !id.is_empty() => Arc::from(id),
                _ => {
                    auto_id += 1;
                    Arc::from((auto_id - 1).to_string())
                }
            };
            let lifo = new.options.lifo && new.options.delay == 0;
            let place = (seq as u64, if lifo { -seq } else { seq });
            seq += 1;
            Ok((added(new, id, place, false, now), true))
        })
        .collect::<CoreResult<_>>()?;
    if !existed.is_empty() {
        return Err(unexpected("an existing job past the batch"));
    }
    Ok(jobs)
}

/// Values per claimed job in `claim_jobs`' reply (lua/includes/jobs.lua): its waiting member
/// (the order in 14 hex digits, offset by 2^52, then the id), name, data, options, priority,
/// seq, created, delay, attempts, token.
const CLAIM_ROW: usize = 10;
/// Values per job claimed before, after the rows: its position from 1, then its stalled
/// count, progress, failure reason and stack trace (a first attempt has none of them).
const RETRY_ROW: usize = 5;
/// The offset of a waiting member's order (`ORDER_OFFSET` in lua/includes/common.lua).
const ORDER_OFFSET: i64 = 1 << 52;

/// The jobs of `claim_jobs`' reply: empty when it claimed none, else their count, then
/// `CLAIM_ROW` values per job, then `RETRY_ROW` values per job claimed before. The lock,
/// state and processed time are what the claim set.
pub fn claimed_jobs(
    value: Value,
    worker: &str,
    lease: Millis,
    now: Millis,
) -> CoreResult<Vec<Job>> {
    let mut v = items(value)?;
    if v.is_empty() {
        return Ok(Vec::new());
    }
    let n = number(&v[0]).ok_or_else(|| unexpected("the count of claimed jobs"))? as usize;
    let rows_end = 1 + n * CLAIM_ROW;
    if v.len() < rows_end || !(v.len() - rows_end).is_multiple_of(RETRY_ROW) {
        return Err(unexpected("a claim reply of the wrong length"));
    }
    let mut again: Vec<Option<Vec<Value>>> = vec![None; n];
    for tried in v.split_off(rows_end).chunks(RETRY_ROW) {
        let position = number(&tried[0])
            .and_then(|p| usize::try_from(p).ok())
            .filter(|p| (1..=n).contains(p))
            .ok_or_else(|| unexpected("a claimed job's position"))?;
        again[position - 1] = Some(tried[1..].to_vec());
    }
    let mut values = v.into_iter().skip(1);
    again
        .into_iter()
        .map(|again| {
            let row: Vec<Value> = values.by_ref().take(CLAIM_ROW).collect();
            claimed(row, again, worker, lease, now)
        })
        .collect()
}

/// One job of `claimed_jobs`: its `CLAIM_ROW` values, and the fields of a job claimed before.
fn claimed(
    row: Vec<Value>,
    again: Option<Vec<Value>>,
    worker: &str,
    lease: Millis,
    now: Millis,
) -> CoreResult<Job> {
    let mut row = row.into_iter();
    let mut get = || row.next().unwrap_or(Value::Nil);
    let (id, order) = match get() {
        Value::BulkString(member) if member.len() > 14 => {
            let order = std::str::from_utf8(&member[..14])
                .ok()
                .and_then(|hex| i64::from_str_radix(hex, 16).ok())
                .ok_or_else(|| unexpected("a claimed job's member"))?;
            (
                Value::BulkString(member[14..].to_vec()),
                order - ORDER_OFFSET,
            )
        }
        _ => return Err(unexpected("a claimed job's member")),
    };
    let [stalled, progress, reason, trace] = match again {
        Some(fields) => <[Value; 4]>::try_from(fields)
            .map_err(|_| unexpected("a claimed job's retry fields"))?,
        None => [Value::Nil, Value::Nil, Value::Nil, Value::Nil],
    };
    let (name, data, opts, prio, seq, created, delay, attempts, token) = (
        get(),
        get(),
        get(),
        get(),
        get(),
        get(),
        get(),
        get(),
        get(),
    );
    // Laid out as `job(id)` would: id, then JOB_FIELDS order.
    let row = vec![
        id,
        name,
        data,
        opts,
        Value::Int(2), // state: active
        prio,
        Value::Int(order),
        seq,
        created,
        delay,
        Value::Int(now as i64), // processed
        Value::Nil,             // finished
        attempts,
        stalled,
        progress,
        Value::Nil, // result
        reason,
        trace,
        token,
        Value::BulkString(worker.as_bytes().to_vec()), // worker
        Value::Int((now + lease) as i64),              // expires
    ];
    job(Value::Array(row))
}

/// A job from `common.lua`'s `job(id)`: the id, then the fields in `JOB_FIELDS` order.
pub fn job(value: Value) -> CoreResult<Job> {
    let v = items(value)?;
    if v.len() != 21 {
        return Err(unexpected("a job with the wrong number of fields"));
    }
    let int = |i: usize| number(&v[i]).unwrap_or(0);
    let opt = |i: usize| number(&v[i]).map(|n| n as Millis);
    // Default options are not stored (`opts_of` in lua/includes/common.lua).
    let options: JobOptions = match text(&v[3]) {
        Some(json) => {
            serde_json::from_str(&json).map_err(|e| unexpected(&format!("job options: {e}")))?
        }
        None => JobOptions::default(),
    };
    let state = JobState::ALL
        .get(int(4) as usize)
        .copied()
        .ok_or_else(|| unexpected("job state"))?;
    let arc = |i: usize| shared(&v[i]).unwrap_or_else(|| Arc::from(""));
    // A job that a report moved keeps the token of its attempt (`Job::reported_by`): a
    // failed or retried one without a worker or an expiry (`fail-2.lua`), a completed one
    // with them (`complete_jobs` saves an HDEL a job); only an active job's are a lock.
    let token = text(&v[18]);
    let (lock, reported_by) = match token {
        Some(token) if state == JobState::Active && v[19] != Value::Nil => (
            Some(Lock {
                token,
                worker_id: arc(19),
                expires_at: int(20) as Millis,
            }),
            None,
        ),
        token => (None, token),
    };
    Ok(Job {
        id: arc(0),
        name: arc(1),
        data: arc(2),
        state,
        priority: int(5) as u32,
        // A job's order is its seq unless written (`order_of` in lua/includes/common.lua).
        order: number(&v[6]).unwrap_or(int(7)),
        seq: int(7) as u64,
        created_at: int(8) as Millis,
        delay_until: int(9) as Millis,
        processed_on: opt(10),
        finished_on: opt(11),
        attempts_made: int(12) as u32,
        stalled_count: int(13) as u32,
        progress: shared(&v[14]).unwrap_or_else(|| Arc::from("0")),
        // A completed job's null result is not stored (complete_jobs in lua/includes/jobs.lua).
        return_value: shared(&v[15])
            .or_else(|| (state == JobState::Completed).then(|| Arc::from("null"))),
        failed_reason: text(&v[16]),
        stacktrace: serde_json::from_str(&text(&v[17]).unwrap_or_else(|| "[]".into()))
            .unwrap_or_default(),
        logs: Vec::new(),
        lock,
        reported_by,
        options,
    })
}

/// A per-job reply of a transition script: `{kind, detail}` with kind "missing", "state" (detail
/// = the state code), "lock" (detail = the message) or "pending" (a completion of a parent with
/// an unfinished child) is the job's error; any other reply is the script's success value,
/// returned as its items.
pub fn outcome(id: &str, reply: Value) -> CoreResult<Vec<Value>> {
    let reply = items(reply).unwrap_or_default();
    let detail = || reply.get(1).and_then(text);
    match reply.first().and_then(text).as_deref() {
        Some("missing") => Err(CoreError::JobNotFound(id.to_owned())),
        Some("state") => Err(CoreError::JobState {
            id: id.to_owned(),
            state: detail()
                .and_then(|s| s.parse::<usize>().ok())
                .and_then(|s| JobState::ALL.get(s).copied())
                .map_or("unknown", JobState::as_str),
            expected: "active",
        }),
        Some("lock") => Err(CoreError::LockMismatch(detail().unwrap_or_default())),
        Some("pending") => Err(CoreError::PendingDependencies(id.to_owned())),
        _ => Ok(reply),
    }
}

fn state_name(code: Option<String>) -> &'static str {
    code.and_then(|s| s.parse::<usize>().ok())
        .and_then(|s| JobState::ALL.get(s).copied())
        .map_or("unknown", JobState::as_str)
}

/// The values after "ok", or the refusal as the error `MemoryStore` returns; `expected` names
/// the states the operation accepts.
pub(crate) fn checked(id: &str, reply: Value, expected: &'static str) -> CoreResult<Vec<Value>> {
    let mut reply = items(reply)?;
    match reply.first().and_then(text).as_deref() {
        Some("ok") => {
            reply.remove(0);
            Ok(reply)
        }
        Some("missing") => Err(CoreError::JobNotFound(id.to_owned())),
        Some("state") => Err(CoreError::JobState {
            id: id.to_owned(),
            state: state_name(reply.get(1).and_then(text)),
            expected,
        }),
        Some("locked") => Err(CoreError::Refused(format!(
            "job {id:?} is locked by a worker and cannot be removed"
        ))),
        Some("refused") => Err(CoreError::Refused(
            reply.get(1).and_then(text).unwrap_or_default(),
        )),
        Some("scheduled") => Err(scheduler::pending_removal_refused(
            id,
            &reply.get(1).and_then(text).unwrap_or_default(),
        )),
        other => Err(unexpected(&format!("{other:?}"))),
    }
}

pub(crate) fn count(value: Option<&Value>) -> CoreResult<usize> {
    value
        .and_then(text)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unexpected("a count"))
}

/// The refusal `{"group_full", group, max_size}` of an add or a flow (`groups_room` in
/// `lua/includes/jobs.lua`), from the values after its first.
pub fn group_full(mut rest: impl Iterator<Item = Value>) -> CoreError {
    let group = rest.next().as_ref().and_then(text);
    let max_size = rest
        .next()
        .as_ref()
        .and_then(text)
        .and_then(|m| m.parse().ok());
    match (group, max_size) {
        (Some(group), Some(max_size)) => CoreError::GroupFull { group, max_size },
        _ => unexpected("a group_full reply"),
    }
}
