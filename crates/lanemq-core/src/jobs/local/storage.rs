//! One operation's view of the SQLite file, `SqlStore`: its connection inside the writer
//! thread's transaction, the writer's `Env`, where its automatic job ids come from, and the
//! row steps its storage traits share. The shared transitions (`jobs::lifecycle`) run over it:
//! its `JobStorage` is `job_storage.rs`, its dedup, dependency, management and scheduler tables
//! `dedup.rs`, `flow_sets.rs`, `manage.rs`, `schedulers.rs`. `run` is how the backend runs any
//! shared operation on the file; `create_with`/`create_as` how flows and the relay create a job.

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::lifecycle;
use crate::jobs::model::{Job, JobState, Millis, JOB_STATES_COUNT};

use super::env::Env;
use super::rows::{code, count_delta, load, set_meta, sql, AutoIds};

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
    pub(super) undrained: bool,
    /// Whether `cancel_requests` holds a row, read once per operation (`cancels.rs`): a job
    /// leaving active drops its request only when some request exists, so the common case
    /// (none) costs one read per operation, not a write per job.
    pub(super) cancels_stored: Option<bool>,
    /// The jobs this operation created, by state, not yet added to `counts`: a store that
    /// calls `done` adds them there once per state, not with one UPDATE per job (a 1,000-job
    /// add_bulk made 1,000); None for a store without `done`, which adds each at once.
    created: Option<[i64; JOB_STATES_COUNT]>,
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
            undrained: false,
            cancels_stored: None,
            created: matches!(auto_ids, AutoIdSource::Batch(_)).then_some([0; JOB_STATES_COUNT]),
            auto_ids,
        }
    }

    /// Counts a job created in `state` (see `created`).
    pub(super) fn count_created(&mut self, state: JobState) -> CoreResult<()> {
        match &mut self.created {
            Some(created) => {
                created[code(state) as usize] += 1;
                Ok(())
            }
            None => count_delta(self.conn, state, 1),
        }
    }

    /// Adds the jobs created so far to `counts`: before `counts` is read, and at `done`.
    pub(super) fn write_created(&mut self) -> CoreResult<()> {
        let Some(created) = &mut self.created else {
            return Ok(());
        };
        for state in JobState::ALL {
            let n = std::mem::take(&mut created[code(state) as usize]);
            if n != 0 {
                count_delta(self.conn, state, n)?;
            }
        }
        Ok(())
    }

    /// Writes what the store kept back (the counts of the jobs created, the automatic ids an
    /// add batch took). Operations of `adding` call it last.
    pub fn done(mut self) -> CoreResult<()> {
        self.write_created()?;
        match self.auto_ids {
            AutoIdSource::Batch(Some(ids)) => ids.write(self.conn),
            _ => Ok(()),
        }
    }

    /// The next automatic id.
    pub(super) fn take_auto_id(&mut self) -> CoreResult<u64> {
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
    pub(super) fn undrain(&mut self) -> CoreResult<()> {
        if !self.undrained {
            set_meta(self.conn, "drained", None)?;
            self.undrained = true;
        }
        Ok(())
    }

    pub(super) fn ids(
        &self,
        query: &str,
        params: impl rusqlite::Params,
    ) -> CoreResult<Vec<Arc<str>>> {
        let mut stmt = self.conn.prepare_cached(query).map_err(sql)?;
        let rows = stmt
            .query_map(params, |r| r.get::<_, String>(0))
            .map_err(sql)?;
        rows.map(|id| id.map(Arc::from))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql)
    }

    /// Counts, the drained mark and the job's group after `job` moved from `was`.
    fn moved(&mut self, job: &Job, was: JobState) -> CoreResult<()> {
        if job.state != was {
            count_delta(self.conn, was, -1)?;
            count_delta(self.conn, job.state, 1)?;
            if let Some(group) = &job.options.group {
                super::group_rows::moved(self.conn, group, Some(was), Some(job.state))?;
            }
        }
        if job.state == JobState::Waiting {
            self.undrain()?;
        }
        Ok(())
    }

    pub(super) fn update_with<R>(
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

/// Writes a new job (its checks done) and its events; with `hold`, the job waits for children
/// (a flow's parent) before anything else, its delay counting from its release.
pub fn create_with(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    hold: bool,
    now: Millis,
) -> CoreResult<Job> {
    let id = match &new.options.job_id {
        Some(id) => id.clone(),
        None => auto_ids.take().to_string(),
    };
    create_as(conn, env, new, &id, seq, hold, now)
}

/// `create_with` under the id `id` (a flow's job whose id its parent's queue reserved here).
pub fn create_as(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    id: &str,
    seq: u64,
    hold: bool,
    now: Millis,
) -> CoreResult<Job> {
    let mut store = SqlStore::new(conn, env);
    lifecycle::create_as(&mut store, new.clone(), Arc::from(id), seq, hold, now)
}
