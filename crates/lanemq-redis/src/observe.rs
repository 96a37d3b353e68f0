//! What the queue keeps for observation on Redis: the metrics series (`lua/metrics-2.lua`, a
//! dense list per kind) and the worker registry (`lua/workers-2.lua`). Their scripts get keys
//! of their own (`Keys::metrics`, `Keys::workers`), not the queue's block; a record or a
//! heartbeat is one script call, a read one round trip. `obliterate` deletes these keys after
//! its script (`delete_observed`).

use lanemq_core::jobs::metrics::{self, Metrics, MetricsKind};
use lanemq_core::jobs::workers::{heartbeat_expiry, WorkerEntry};
use lanemq_core::jobs::{BoxFuture, JobObserve, Millis};
use lanemq_core::CoreResult;
use redis::Value;

use crate::backend::{function_missing, load_library, RedisBackend};
use crate::decode::{items, text, unexpected};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts::{self, LuaScript};

impl RedisBackend {
    /// Runs one of the scripts with keys of their own (`scripts::OWN_KEYS`) on `keys`, as `run`
    /// runs the others: by FCALL (loading the library again if the server lost it), else by
    /// EVALSHA. ARGV starts with `now` and a max_events of 0, as every script's does.
    async fn run_own(
        &self,
        script: &LuaScript,
        keys: &[String],
        now: Millis,
        args: Vec<String>,
    ) -> CoreResult<Value> {
        let mut all = vec![now.to_string(), "0".to_owned()];
        all.extend(args);
        let mut reloaded = false;
        loop {
            let mut connection = self.connection().await?;
            let functions = self.functions();
            let outcome = if functions {
                let mut fcall = redis::cmd("FCALL");
                fcall
                    .arg(&script.function)
                    .arg(keys.len())
                    .arg(keys)
                    .arg(&all);
                fcall.query_async(&mut connection).await
            } else {
                let mut invocation = script.script.prepare_invoke();
                for key in keys {
                    invocation.key(key);
                }
                invocation.arg(&all).invoke_async(&mut connection).await
            };
            match outcome {
                Err(e) if functions && !reloaded && function_missing(&e) => {
                    reloaded = true;
                    load_library(&mut connection)
                        .await
                        .map_err(|e| self.target.error(e))?;
                }
                other => return other.map_err(|e| self.target.error(e)),
            }
        }
    }

    pub async fn record_metrics(
        &self,
        kind: MetricsKind,
        counts: Vec<(Millis, u64)>,
        max_data_points: usize,
    ) -> CoreResult<()> {
        let counts = metrics::check_record(&counts, max_data_points)?;
        if counts.is_empty() {
            return Ok(());
        }
        let mut args = vec![max_data_points.to_string()];
        for (minute, n) in counts {
            args.extend([minute.to_string(), n.to_string()]);
        }
        let keys = self.keys.metrics(kind);
        ok(self.run_own(&scripts::METRICS, &keys, 0, args).await?).map(drop)
    }

    /// The series' head, length and slice in one round trip (`LRANGE` has `read`'s indexes).
    pub async fn get_metrics(
        &self,
        kind: MetricsKind,
        start: i64,
        end: i64,
    ) -> CoreResult<Metrics> {
        let [head, data] = self.keys.metrics(kind);
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(&head).arg("count").arg("newest");
        pipe.cmd("LLEN").arg(&data);
        pipe.cmd("LRANGE").arg(&data).arg(start).arg(end);
        let ((count, newest), data_points, data): ((Option<u64>, Option<u64>), usize, Vec<u64>) =
            self.query(&pipe).await?;
        Ok(Metrics {
            count: count.unwrap_or(0),
            data,
            data_points,
            newest_minute: newest,
        })
    }

    pub async fn heartbeat_worker(
        &self,
        id: String,
        info: String,
        ttl: Millis,
        now: Millis,
    ) -> CoreResult<()> {
        let expires = heartbeat_expiry(&id, ttl, now)?;
        let entry = format!("{now} {info}");
        let args = vec!["beat".to_owned(), id, entry, expires.to_string()];
        let keys = self.keys.workers();
        ok(self.run_own(&scripts::WORKERS, &keys, now, args).await?).map(drop)
    }

    pub async fn remove_worker(&self, id: String) -> CoreResult<bool> {
        let keys = self.keys.workers();
        let args = vec!["remove".to_owned(), id];
        let reply = ok(self.run_own(&scripts::WORKERS, &keys, 0, args).await?)?;
        Ok(matches!(reply.first(), Some(Value::Int(1))))
    }

    pub async fn get_workers(&self, now: Millis) -> CoreResult<Vec<WorkerEntry>> {
        let keys = self.keys.workers();
        let args = vec!["list".to_owned()];
        let reply = ok(self.run_own(&scripts::WORKERS, &keys, now, args).await?)?;
        let mut workers = Vec::with_capacity(reply.len() / 2);
        for pair in reply.chunks(2) {
            let [id, entry] = pair else {
                return Err(unexpected("workers: an odd reply"));
            };
            let (id, entry) = (
                text(id).unwrap_or_default(),
                text(entry).unwrap_or_default(),
            );
            let (last, info) = entry
                .split_once(' ')
                .and_then(|(last, info)| Some((last.parse().ok()?, info)))
                .ok_or_else(|| unexpected(&format!("workers: entry {entry:?}")))?;
            workers.push(WorkerEntry {
                id,
                info: info.to_owned(),
                last_heartbeat: last,
            });
        }
        workers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(workers)
    }

    /// Deletes the metrics and the worker registry (after `obliterate`'s script).
    pub(crate) async fn delete_observed(&self) -> CoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg(self.keys.observed()).ignore();
        self.query::<()>(&pipe).await
    }
}

/// The values after a script's `"ok"`.
fn ok(reply: Value) -> CoreResult<Vec<Value>> {
    let mut reply = items(reply)?;
    match reply.first().and_then(text).as_deref() {
        Some("ok") => Ok(reply.split_off(1)),
        other => Err(unexpected(&format!("{other:?}"))),
    }
}

impl JobObserve for RedisJobBackend {
    fn record_metrics(
        &self,
        kind: MetricsKind,
        counts: Vec<(Millis, u64)>,
        max_data_points: usize,
    ) -> BoxFuture<()> {
        call!(self, |b| b.record_metrics(kind, counts, max_data_points))
    }

    fn get_metrics(&self, kind: MetricsKind, start: i64, end: i64) -> BoxFuture<Metrics> {
        call!(self, |b| b.get_metrics(kind, start, end))
    }

    fn heartbeat_worker(
        &self,
        id: String,
        info: String,
        ttl: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        call!(self, |b| b.heartbeat_worker(id, info, ttl, now))
    }

    fn remove_worker(&self, id: String) -> BoxFuture<bool> {
        call!(self, |b| b.remove_worker(id))
    }

    fn get_workers(&self, now: Millis) -> BoxFuture<Vec<WorkerEntry>> {
        call!(self, |b| b.get_workers(now))
    }
}
