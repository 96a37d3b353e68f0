//! The SQLite file as the `JobStorage` the shared transitions (`jobs::lifecycle`) run over: a
//! job is loaded, changed and written back inside the writer thread's transaction (`SqlStore`,
//! `storage.rs`); per-state counts live in the `counts` table, the gate in `meta`; a removal
//! releases the job's dedup key and flow dependencies (`ops`), and its flow children settle
//! after it (`settle_removals`), in other queues' files by message (`remote`).

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::flow::{ChildOutcome, ParentRef};
use crate::jobs::lifecycle::flows::{self as shared, Change, ChildNews};
use crate::jobs::lifecycle::{self, EventField, Finished, Gate, JobStorage};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::env::Env;
use super::rows::{
    self, code, count, count_delta, load, meta, order_of, reserve, save, save_lifecycle, set_meta,
    sql,
};
use super::storage::SqlStore;
use super::{flow_deps, ops, remote};

/// The ids of the job schedulers' pending occurrences, as an SQL list (drain and clean keep
/// them): `repeat:<key>:<next_run>`.
const PENDING_IDS: &str = "(SELECT 'repeat:' || key || ':' || next_run FROM schedulers)";

/// A time as SQLite's signed integer (`Millis::MAX`, "whenever", stays the largest).
fn sql_time(at: Millis) -> i64 {
    at.min(i64::MAX as Millis) as i64
}

/// After a removal wrote its events: the removed children leave their parents' dependencies
/// (as the memory store settles after the operation); `hard` for a drain or clean
/// (`lifecycle::flows::apply_child`), whose deleted parents' parents hear of it in turn.
fn settle_removals(conn: &Connection, env: &mut Env, now: Millis, hard: bool) -> CoreResult<()> {
    let mut store = SqlStore::new(conn, env);
    while !store.env.flow_removed.is_empty() {
        for (parent, child) in std::mem::take(&mut store.env.flow_removed) {
            if parent.queue != store.env.queue {
                store.send(&parent, &child, Change::Done(ChildOutcome::Removed), now)?;
                continue;
            }
            let child = ParentRef {
                queue: parent.queue.clone(),
                id: child,
            };
            let removed = ChildOutcome::Removed;
            shared::apply_child(&mut store, &parent.id, &child, removed, now, hard)?;
        }
    }
    Ok(())
}

impl JobStorage for SqlStore<'_> {
    fn load(&mut self, id: &str) -> CoreResult<Option<Job>> {
        load(self.conn, id)
    }

    fn update<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
    ) -> CoreResult<Option<R>> {
        self.update_with(id, change, save_lifecycle)
    }

    fn update_options<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
    ) -> CoreResult<Option<R>> {
        self.update_with(id, change, save)
    }

    fn insert(&mut self, job: Job) -> CoreResult<()> {
        save(self.conn, &job)?;
        self.count_created(job.state)?;
        if job.state == JobState::Waiting {
            self.undrain()?;
        }
        if let Some(group) = &job.options.group {
            super::group_rows::moved(self.conn, group, None, Some(job.state))?;
        }
        Ok(())
    }

    fn auto_id(&mut self, options: &JobOptions) -> CoreResult<Arc<str>> {
        Ok(match &options.job_id {
            Some(id) => Arc::from(id.as_str()),
            None => Arc::from(self.take_auto_id()?.to_string()),
        })
    }

    fn delete(&mut self, id: &str) -> CoreResult<Option<JobState>> {
        ops::delete(self.conn, id)
    }

    fn remove_job(&mut self, id: &Arc<str>, _now: Millis) -> CoreResult<()> {
        ops::delete_releasing(self.conn, self.env, id)?;
        self.env
            .finished
            .push((id.to_string(), FinishedResult::Missing));
        Ok(())
    }

    fn settle_removals(&mut self, now: Millis, hard: bool) -> CoreResult<()> {
        settle_removals(self.conn, self.env, now, hard)
    }

    fn queue_name(&self) -> &str {
        &self.env.queue
    }

    fn children(&mut self, id: &str) -> CoreResult<Vec<ParentRef>> {
        flow_deps::children(self.conn, id)
    }

    fn remote_locked(&mut self, child: &ParentRef, now: Millis) -> CoreResult<Option<String>> {
        remote::remote_locked(self.env, child, now)
    }

    fn remove_remote(&mut self, child: &ParentRef, now: Millis) -> CoreResult<()> {
        remote::remove_remote(self.conn, self.env, child, now)
    }

    fn drainable(&mut self, delayed: bool) -> CoreResult<Vec<Arc<str>>> {
        // The pending occurrences of job schedulers stay (as in BullMQ).
        let states = if delayed { "(0, 1)" } else { "(0)" };
        self.ids(
            &format!("SELECT id FROM jobs WHERE state IN {states} AND id NOT IN {PENDING_IDS}"),
            [],
        )
    }

    fn cleanable(
        &mut self,
        state: JobState,
        cutoff: Millis,
        limit: usize,
        now: Millis,
    ) -> CoreResult<Vec<Arc<str>>> {
        self.ids(
            &format!(
                "SELECT id FROM jobs WHERE state = ?1 AND COALESCE(finished_on, created_at) <= ?2 \
                 AND (lock_expires IS NULL OR lock_expires <= ?3) AND id NOT IN {PENDING_IDS} \
                 ORDER BY {} LIMIT ?4",
                order_of(state)
            ),
            rusqlite::params![
                code(state),
                cutoff as i64,
                now as i64,
                limit.min(i64::MAX as usize) as i64
            ],
        )
    }

    fn reserve_seq(&mut self, n: u64) -> CoreResult<u64> {
        reserve(self.conn, "seq", n)
    }

    fn claim_head(&mut self, n: usize, mut change: impl FnMut(&mut Job)) -> CoreResult<Vec<Job>> {
        let mut jobs = {
            let mut stmt = self
                .conn
                .prepare_cached(&format!(
                    "SELECT {} FROM jobs WHERE state = 0 AND (grp IS NOT NULL) = 0 ORDER BY priority, ord LIMIT ?1",
                    rows::COLUMNS
                ))
                .map_err(sql)?;
            let rows = stmt
                .query_map([n.min(i64::MAX as usize) as i64], rows::job)
                .map_err(sql)?;
            rows.collect::<rusqlite::Result<Vec<Job>>>().map_err(sql)?
        };
        let mut moved = [0i64; crate::jobs::model::JOB_STATES_COUNT];
        for job in &mut jobs {
            change(job);
            save_lifecycle(self.conn, job)?;
            moved[code(job.state) as usize] += 1;
        }
        if !jobs.is_empty() {
            count_delta(self.conn, JobState::Waiting, -(jobs.len() as i64))?;
            for state in JobState::ALL {
                if moved[code(state) as usize] != 0 {
                    count_delta(self.conn, state, moved[code(state) as usize])?;
                }
            }
        }
        Ok(jobs)
    }

    fn due_delayed(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>> {
        self.ids(
            "SELECT id FROM jobs WHERE state = 1 AND delay_until <= ?1 ORDER BY delay_until, seq",
            [sql_time(now)],
        )
    }

    fn expired_active(&mut self, now: Millis) -> CoreResult<Vec<Arc<str>>> {
        self.ids(
            "SELECT id FROM jobs WHERE state = 2 AND lock_expires <= ?1 ORDER BY lock_expires, seq",
            [sql_time(now)],
        )
    }

    fn count(&mut self, state: JobState) -> CoreResult<usize> {
        self.write_created()?;
        count(self.conn, state)
    }

    fn oldest_finished(&mut self, state: JobState, n: usize) -> CoreResult<Vec<Arc<str>>> {
        self.ids(
            "SELECT id FROM jobs WHERE state = ?1 ORDER BY finished_on, seq LIMIT ?2",
            rusqlite::params![code(state), n.min(i64::MAX as usize) as i64],
        )
    }

    fn count_finished_by(&mut self, state: JobState, cutoff: Millis) -> CoreResult<usize> {
        self.conn
            .prepare_cached("SELECT count(*) FROM jobs WHERE state = ?1 AND finished_on <= ?2")
            .and_then(|mut stmt| {
                stmt.query_row(rusqlite::params![code(state), cutoff as i64], |r| {
                    r.get::<_, i64>(0)
                })
            })
            .map(|n| n.max(0) as usize)
            .map_err(sql)
    }

    fn gate(&mut self) -> CoreResult<Gate> {
        ops::read_gate(self.conn)
    }

    fn set_rate_window(&mut self, (start, used): (Millis, u64)) -> CoreResult<()> {
        set_meta(self.conn, "rate_start", Some(&start.to_string()))?;
        set_meta(self.conn, "rate_count", Some(&used.to_string()))
    }

    fn report_drained(&mut self) -> CoreResult<bool> {
        if meta(self.conn, "drained")?.is_some() {
            return Ok(false);
        }
        set_meta(self.conn, "drained", Some("1"))?;
        self.undrained = false;
        Ok(true)
    }

    fn event(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        field: EventField,
    ) -> CoreResult<()> {
        let field = field.as_ref().map(|(key, value)| (*key, value.as_str()));
        self.env
            .event(self.conn, now, name, job.map(|id| &**id), field)
    }

    fn event_fields(
        &mut self,
        now: Millis,
        name: &'static str,
        job: Option<&Arc<str>>,
        fields: [EventField; 2],
    ) -> CoreResult<()> {
        let [first, second] = fields
            .each_ref()
            .map(|f| f.as_ref().map(|(key, value)| (*key, value.as_str())));
        self.env
            .event_fields(self.conn, now, name, job.map(|id| &**id), [first, second])
    }

    fn tell_waiters(&mut self, finished: &Finished) -> CoreResult<()> {
        self.env
            .finished
            .push((finished.id.to_string(), finished.result.clone()));
        Ok(())
    }

    fn tell_parent(&mut self, finished: &Finished, now: Millis) -> CoreResult<()> {
        match &finished.parent {
            Some((parent, outcome)) => {
                lifecycle::flows::on_finish(self, parent, &finished.id, outcome.clone(), now)
            }
            None => Ok(()),
        }
    }

    fn before_retry(&mut self, job: &Job, now: Millis) -> CoreResult<()> {
        lifecycle::flows::on_retry(self, job, now)
    }
}
