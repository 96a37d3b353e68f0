//! The SQLite file as the `JobStorage` the shared transitions (`jobs::lifecycle`) run over: a
//! job is loaded, changed and written back inside the writer thread's transaction; per-state
//! counts live in the `counts` table, the gate in `meta`; its dedup and scheduler tables are
//! `dedup.rs`'s and `schedulers.rs`'s. `run` is how the backend runs any shared operation
//! (`lifecycle`, `lifecycle::manage`) on the file.

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::{self, EventField, Finished, Gate, JobStorage};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::ops::{self, Env};
use super::rows::{
    self, code, count, count_delta, load, meta, meta_number, reserve, save, save_lifecycle,
    set_meta, sql, AutoIds,
};
use super::{flow_sets, flows, manage};

/// The ids of the job schedulers' pending occurrences, as an SQL list (drain and clean keep
/// them): `repeat:<key>:<next_run>`.
const PENDING_IDS: &str = "(SELECT 'repeat:' || key || ':' || next_run FROM schedulers)";

/// A time as SQLite's signed integer (`Millis::MAX`, "whenever", stays the largest).
fn sql_time(at: Millis) -> i64 {
    at.min(i64::MAX as Millis) as i64
}

/// The queue's gate, from the `meta` table.
pub fn read_gate(conn: &Connection) -> CoreResult<Gate> {
    let rate_limit = ops::rate_limit(conn)?;
    let window = match rate_limit {
        Some(_) => (
            meta_number(conn, "rate_start")?.unwrap_or(0),
            meta_number(conn, "rate_count")?.unwrap_or(0),
        ),
        None => (0, 0),
    };
    Ok(Gate {
        paused: ops::is_paused(conn)?,
        max_active: ops::max_active(conn)?,
        rate_limit,
        window,
        until: meta_number(conn, "rate_until")?.unwrap_or(0),
    })
}

/// Where an operation's automatic job ids come from, and when the last one taken is written.
enum AutoIdSource<'a> {
    /// Read and written for each id taken: an operation that seldom creates a job without a
    /// custom id (a dedup key's next job, added when its owner finishes), and never calls `done`.
    AtOnce,
    /// Read on first use and written by `done`: one read and one write an add batch, not a job.
    Batch(Option<AutoIds>),
    /// A flow's, written by the flow once all its jobs exist.
    Lent(&'a mut AutoIds),
}

/// One operation's view of the file: its connection (inside the batch's transaction) and the
/// writer's environment.
pub struct SqlStore<'a> {
    pub conn: &'a Connection,
    pub env: &'a mut Env,
    auto_ids: AutoIdSource<'a>,
    /// Set once this operation removed the `drained` mark (so it is removed once, not per job).
    undrained: bool,
}

impl<'a> SqlStore<'a> {
    pub fn new(conn: &'a Connection, env: &'a mut Env) -> Self {
        Self::with_ids(conn, env, AutoIdSource::AtOnce)
    }

    /// A store whose operation calls `done` last (`run`): the automatic ids it takes are read
    /// once and written once, however many jobs it adds.
    pub fn batched(conn: &'a Connection, env: &'a mut Env) -> Self {
        Self::with_ids(conn, env, AutoIdSource::Batch(None))
    }

    /// A store taking automatic ids from a flow's `auto_ids`.
    pub fn lending(conn: &'a Connection, env: &'a mut Env, auto_ids: &'a mut AutoIds) -> Self {
        Self::with_ids(conn, env, AutoIdSource::Lent(auto_ids))
    }

    fn with_ids(conn: &'a Connection, env: &'a mut Env, auto_ids: AutoIdSource<'a>) -> Self {
        Self {
            conn,
            env,
            auto_ids,
            undrained: false,
        }
    }

    /// Writes what the store kept back (the automatic ids an add batch took). Operations of
    /// `adding` call it last.
    pub fn done(self) -> CoreResult<()> {
        match self.auto_ids {
            AutoIdSource::Batch(Some(ids)) => ids.write(self.conn),
            _ => Ok(()),
        }
    }

    /// The next automatic id.
    fn take_auto_id(&mut self) -> CoreResult<u64> {
        Ok(match &mut self.auto_ids {
            AutoIdSource::AtOnce => {
                let mut ids = AutoIds::read(self.conn)?;
                let id = ids.take();
                ids.write(self.conn)?;
                id
            }
            AutoIdSource::Batch(Some(ids)) => ids.take(),
            AutoIdSource::Batch(unread) => unread.insert(AutoIds::read(self.conn)?).take(),
            AutoIdSource::Lent(ids) => ids.take(),
        })
    }

    /// A job is now waiting: the queue is no longer drained.
    fn undrain(&mut self) -> CoreResult<()> {
        if !self.undrained {
            set_meta(self.conn, "drained", None)?;
            self.undrained = true;
        }
        Ok(())
    }

    fn ids(&self, query: &str, params: impl rusqlite::Params) -> CoreResult<Vec<Arc<str>>> {
        let mut stmt = self.conn.prepare_cached(query).map_err(sql)?;
        let rows = stmt
            .query_map(params, |r| r.get::<_, String>(0))
            .map_err(sql)?;
        rows.map(|id| id.map(Arc::from))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)
    }

    /// Counts and the drained mark after `job` moved from `was`.
    fn moved(&mut self, job: &Job, was: JobState) -> CoreResult<()> {
        if job.state != was {
            count_delta(self.conn, was, -1)?;
            count_delta(self.conn, job.state, 1)?;
        }
        if job.state == JobState::Waiting {
            self.undrain()?;
        }
        Ok(())
    }

    fn update_with<R>(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut Job) -> CoreResult<R>,
        write: fn(&Connection, &Job) -> CoreResult<()>,
    ) -> CoreResult<Option<R>> {
        let Some(mut job) = load(self.conn, id)? else {
            return Ok(None);
        };
        let was = job.state;
        let outcome = change(&mut job)?;
        write(self.conn, &job)?;
        self.moved(&job, was)?;
        Ok(Some(outcome))
    }
}

/// Runs `op` on the file as one operation's `SqlStore`, then writes what it kept back
/// (`SqlStore::done`): how the backend runs every shared decision. The automatic ids it takes
/// are read once and written once (`SqlStore::batched`), however many jobs it creates.
pub fn run<T>(
    conn: &Connection,
    env: &mut Env,
    op: impl FnOnce(&mut SqlStore<'_>) -> CoreResult<T>,
) -> CoreResult<T> {
    let mut store = SqlStore::batched(conn, env);
    let out = op(&mut store)?;
    store.done()?;
    Ok(out)
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
        count_delta(self.conn, job.state, 1)?;
        if job.state == JobState::Waiting {
            self.undrain()?;
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
        flows::settle_removals(self.conn, self.env, now, hard)
    }

    fn queue_name(&self) -> &str {
        &self.env.queue
    }

    fn children(&mut self, id: &str) -> CoreResult<Vec<ParentRef>> {
        flow_sets::children(self.conn, id)
    }

    fn remote_locked(&mut self, child: &ParentRef, now: Millis) -> CoreResult<Option<String>> {
        flows::remote_locked(self.env, child, now)
    }

    fn remove_remote(&mut self, child: &ParentRef, now: Millis) -> CoreResult<()> {
        flows::remove_remote(self.conn, self.env, child, now)
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
                manage::order_of(state)
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
                    "SELECT {} FROM jobs WHERE state = 0 ORDER BY priority, ord LIMIT ?1",
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
        read_gate(self.conn)
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
