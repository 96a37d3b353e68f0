//! Reads that need no script: a job, its state, listings, results, the queue names; and
//! `JobReads` for `RedisJobBackend` (the counts it serves are in `counts.rs`).

use std::sync::Arc;

use lanemq_core::jobs::{
    index_range, BoxFuture, FinishedResult, Job, JobFilter, JobReads, JobState, LogLine, Millis,
    QueueStats, SEARCH_SCAN_LIMIT,
};
use lanemq_core::CoreResult;
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode;
use crate::job_backend::{call, RedisJobBackend};
use crate::keys::{JOB_FIELDS, STATE_SETS, WAITING_LIST};
use crate::scripts;

fn set_of(state: JobState) -> &'static str {
    STATE_SETS[JobState::ALL.iter().position(|s| *s == state).unwrap_or(0)]
}

impl RedisBackend {
    pub async fn get_job(&self, id: &str) -> CoreResult<Option<Job>> {
        let mut connection = self.connection().await?;
        let values: Vec<Value> = redis::cmd("HMGET")
            .arg(self.keys.job(id))
            .arg(&JOB_FIELDS)
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        if matches!(values.get(3), None | Some(Value::Nil)) {
            return Ok(None);
        }
        let mut row = vec![Value::BulkString(id.as_bytes().to_vec())];
        row.extend(values);
        decode::job(Value::Array(row)).map(Some)
    }

    /// The queues under this queue's prefix: every queue has a `meta` hash
    /// (`<prefix>:{<queue>}:meta`), found by SCAN a page at a time (never KEYS, which would
    /// hold the server), sorted.
    pub async fn queue_names(&self) -> CoreResult<Vec<String>> {
        let mut names = std::collections::BTreeSet::new();
        match self.cluster() {
            // Queues live on every master: each one's keyspace is scanned.
            Some(cluster) => {
                self.ready().await?;
                for master in cluster.masters().await? {
                    let mut connection = master.commands().await?;
                    self.scan_names(&mut connection, &mut names)
                        .await
                        .map_err(|e| master.error(e))?;
                }
            }
            None => {
                let mut connection = self.connection().await?;
                self.scan_names(&mut connection, &mut names)
                    .await
                    .map_err(|e| self.target.error(e))?;
            }
        }
        Ok(names.into_iter().collect())
    }

    async fn scan_names(
        &self,
        connection: &mut redis::aio::MultiplexedConnection,
        names: &mut std::collections::BTreeSet<String>,
    ) -> redis::RedisResult<()> {
        let head = format!("{}:{{", self.prefix());
        let pattern = format!("{}*}}:meta", glob_escaped(&head));
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(connection)
                .await?;
            names.extend(keys.iter().filter_map(|key| {
                let name = key.strip_prefix(&head)?.strip_suffix("}:meta")?;
                // `*` also matches across `}:...:{`: only a name a queue could have.
                (!name.contains('{') && !name.contains('}')).then(|| name.to_owned())
            }));
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    pub async fn get_state(&self, id: &str) -> CoreResult<Option<JobState>> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.job(id)).arg("state");
        let (state,): (Option<usize>,) = self.query(&pipe).await?;
        Ok(state.and_then(|s| JobState::ALL.get(s).copied()))
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
        Ok(self
            .list_jobs_with_total(states, start, end, ascending)
            .await?
            .0)
    }

    /// `list_jobs`, and how many jobs the page was cut from (the counts it was cut by, read in
    /// one round trip before the page).
    pub async fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<(Vec<Job>, usize)> {
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
            if state == JobState::Waiting {
                let members = self.waiting_members(skip, last, ascending).await?;
                take -= members.len().min(take);
                skip = 0;
                ids.extend(members.into_iter().map(|m| m[14..].to_owned()));
                continue;
            }
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
        Ok((self.jobs(ids).await?, total))
    }

    /// Waiting members `first..=last` in claim order (the list of priority 0, then the sorted
    /// set), or in reverse: both lengths first, then each key's part of the range.
    async fn waiting_members(
        &self,
        first: usize,
        last: usize,
        ascending: bool,
    ) -> CoreResult<Vec<String>> {
        let (list, set) = (self.keys.key(WAITING_LIST), self.keys.key("waiting"));
        let mut pipe = redis::pipe();
        pipe.cmd("LLEN").arg(&list);
        pipe.cmd("ZCARD").arg(&set);
        let (listed, scored): (usize, usize) = self.query(&pipe).await?;
        let total = listed + scored;
        if first >= total {
            return Ok(Vec::new());
        }
        let last = last.min(total - 1);
        // In claim order, index i is the list's i below `listed`, else the set's i - listed.
        let (from, to) = if ascending {
            (first, last)
        } else {
            (total - 1 - last, total - 1 - first)
        };
        let mut pipe = redis::pipe();
        if from < listed {
            pipe.cmd("LRANGE")
                .arg(&list)
                .arg(from)
                .arg(to.min(listed - 1));
        }
        if to >= listed {
            pipe.cmd("ZRANGE")
                .arg(&set)
                .arg(from.saturating_sub(listed))
                .arg(to - listed);
        }
        let parts: Vec<Vec<String>> = self.query(&pipe).await?;
        let mut out: Vec<String> = parts.into_iter().flatten().collect();
        if !ascending {
            out.reverse();
        }
        Ok(out)
    }

    /// `search_jobs`: `lua/search-2.lua` walks at most `SEARCH_SCAN_LIMIT` jobs of the states
    /// and answers the ids that match, then each is read as `get_job` reads it (one that went
    /// in between is left out).
    pub async fn search_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        (cursor, count): (usize, usize),
        ascending: bool,
        now: Millis,
    ) -> CoreResult<(Vec<Job>, Option<usize>)> {
        // Bad criteria are refused here, as in process, not by the script.
        filter.matcher(now)?;
        let mut codes = Vec::new();
        for state in if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states
        } {
            let code = JobState::ALL.iter().position(|s| *s == state).unwrap_or(0);
            if !codes.contains(&code) {
                codes.push(code);
            }
        }
        let codes: Vec<String> = codes.iter().map(usize::to_string).collect();
        let flag = |given: bool| if given { "1" } else { "0" };
        let cutoff =
            |age: Option<Millis>| age.map_or(String::new(), |a| now.saturating_sub(a).to_string());
        let mut args = vec![
            cursor.to_string(),
            count.to_string(),
            SEARCH_SCAN_LIMIT.to_string(),
            flag(ascending).to_owned(),
            codes.join(","),
            flag(filter.name.is_some()).to_owned(),
            filter.name.clone().unwrap_or_default(),
            flag(filter.text.is_some()).to_owned(),
            filter.text.clone().unwrap_or_default(),
            cutoff(filter.older_than),
            cutoff(filter.newer_than),
        ];
        for (path, value) in &filter.data {
            args.extend([path.clone(), value.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = decode::items(self.change(&scripts::SEARCH, now, &args).await?)?;
        let mut texts = reply
            .iter()
            .map(|v| decode::text(v).ok_or_else(|| decode::unexpected("an id")));
        let next = texts.next().transpose()?.filter(|at| !at.is_empty());
        let ids = texts.collect::<CoreResult<Vec<String>>>()?;
        let next = match next {
            None => None,
            Some(at) => Some(at.parse().map_err(|_| decode::unexpected(&at))?),
        };
        Ok((self.jobs(ids).await?, next))
    }

    pub async fn finished_result(&self, id: &str) -> CoreResult<FinishedResult> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET")
            .arg(self.keys.job(id))
            .arg(&["state", "result", "reason"]);
        let (fields,): (FinishedFields,) = self.query(&pipe).await?;
        Ok(finished(fields))
    }

    /// The id of the newest event, then `finished_result`, read in that order in one round
    /// trip: where the job is missing, only an event after that id can tell how it ended
    /// (`wait_finished`).
    pub(crate) async fn finished_result_since(
        &self,
        id: &str,
    ) -> CoreResult<(u64, FinishedResult)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HGET").arg(self.keys.key("meta")).arg("event");
        pipe.cmd("HMGET")
            .arg(self.keys.job(id))
            .arg(&["state", "result", "reason"]);
        let (last, fields): (Option<u64>, FinishedFields) = self.query(&pipe).await?;
        Ok((last.unwrap_or(0), finished(fields)))
    }
}

/// A job's `state`, `result` and `reason` fields.
type FinishedFields = (Option<usize>, Option<String>, Option<String>);

fn finished((state, result, reason): FinishedFields) -> FinishedResult {
    match state.and_then(|s| JobState::ALL.get(s).copied()) {
        None => FinishedResult::Missing,
        // A null result is not stored (complete_jobs in lua/includes/jobs.lua).
        Some(JobState::Completed) => {
            FinishedResult::Completed(Some(Arc::from(result.as_deref().unwrap_or("null"))))
        }
        Some(JobState::Failed) => FinishedResult::Failed(reason.unwrap_or_default()),
        Some(state) => FinishedResult::NotFinished(state),
    }
}

impl JobReads for RedisJobBackend {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        call!(self, |b| async move { b.get_job(&id).await })
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        call!(self, |b| async move { b.get_state(&id).await })
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        call!(self, |b| b.get_job_counts(states))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        call!(self, |b| b.count_pending())
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        call!(self, |b| b.get_counts_per_priority(priorities))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        call!(self, |b| b.list_jobs(states, start, end, ascending))
    }

    fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<Job>, usize)> {
        call!(self, |b| b
            .list_jobs_with_total(states, start, end, ascending))
    }

    fn search_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        page: (usize, usize),
        ascending: bool,
        now: Millis,
    ) -> BoxFuture<(Vec<Job>, Option<usize>)> {
        call!(self, |b| b
            .search_jobs(states, filter, page, ascending, now))
    }

    fn get_stats(&self, now: Millis) -> BoxFuture<QueueStats> {
        call!(self, |b| b.get_stats(now))
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        call!(self, |b| async move { b.finished_result(&id).await })
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        call!(self, |b| async move { b.wait_finished(&id, timeout).await })
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<LogLine>, usize)> {
        call!(self, |b| b.get_logs(id, start, end, ascending))
    }

    fn queue_names(&self) -> BoxFuture<Vec<String>> {
        call!(self, |b| b.queue_names())
    }
}

/// `text` with the characters SCAN's MATCH treats as a pattern escaped.
fn glob_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
