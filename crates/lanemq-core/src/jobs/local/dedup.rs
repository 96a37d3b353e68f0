//! The local backend's dedup keys (the SQL side of `memory_dedup`), decided by `jobs::dedup`.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::dedup::{self, KeyView, OnAdd, OnFinish, OnRetry};
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::JobOptions;

use super::ops::{self, Env};
use super::rows::{self, reserve, set_meta, sql, AutoIds};
use super::LocalBackend;
use crate::jobs::contract::{BoxFuture, JobDedup};

/// A key as stored (its next job, if any, stays in the table until it is taken).
struct KeyRow {
    owner: String,
    expires_at: Option<Millis>,
    has_next: bool,
}

impl KeyRow {
    fn view(&self, conn: &Connection) -> CoreResult<KeyView<'_>> {
        Ok(KeyView {
            owner: &self.owner,
            expires_at: self.expires_at,
            owner_state: rows::state(conn, &self.owner)?,
            has_next: self.has_next,
        })
    }
}

fn load_key(conn: &Connection, id: &str) -> CoreResult<Option<KeyRow>> {
    conn.prepare_cached("SELECT job_id, expires_at, next_name IS NOT NULL FROM dedup WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([id], |r| {
                Ok(KeyRow {
                    owner: r.get(0)?,
                    expires_at: r.get::<_, Option<i64>>(1)?.map(|v| v as Millis),
                    has_next: r.get(2)?,
                })
            })
            .optional()
        })
        .map_err(sql)
}

/// The key `id` with the view its decisions need.
fn with_view<T>(
    conn: &Connection,
    id: &str,
    decide: impl FnOnce(Option<&KeyView<'_>>) -> T,
) -> CoreResult<T> {
    let row = load_key(conn, id)?;
    let view = row.as_ref().map(|r| r.view(conn)).transpose()?;
    Ok(decide(view.as_ref()))
}

/// Points the key `id` at `owner`, expiring at `expires_at`, with no next job.
fn set_key(conn: &Connection, id: &str, owner: &str, expires_at: Option<Millis>) -> CoreResult<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO dedup (id, job_id, expires_at) VALUES (?1, ?2, ?3)")
        .and_then(|mut stmt| {
            stmt.execute(rusqlite::params![id, owner, expires_at.map(|v| v as i64)])
        })
        .map(|_| ())
        .map_err(sql)
}

fn delete_key(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM dedup WHERE id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// Drops the keys that expired and carry no next job: they mean nothing any more.
fn purge(conn: &Connection, now: Millis) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM dedup WHERE expires_at <= ?1 AND next_name IS NULL")
        .and_then(|mut stmt| stmt.execute([now as i64]))
        .map(|_| ())
        .map_err(sql)
}

fn json(options: &JobOptions) -> CoreResult<String> {
    serde_json::to_string(options).map_err(|e| CoreError::Storage(e.to_string()))
}

/// The job an add with `dedup` would return instead of adding one (`flow::dedup_owner`).
pub fn flow_owner(
    conn: &Connection,
    dedup: &crate::jobs::options::Dedup,
    now: Millis,
) -> CoreResult<Option<Job>> {
    let owner = with_view(conn, &dedup.id, |view| {
        crate::jobs::flow::dedup_owner(dedup, view, now).map(str::to_owned)
    })?;
    owner.map(|id| rows::require(conn, &id)).transpose()
}

/// `ops::insert` for a job with dedup options (its custom id, if any, is free).
pub fn add(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    add_with(conn, env, new, seq, auto_ids, false, now)
}

/// `add`; with `hold`, a job created waits for children (a flow's parent).
pub fn add_with(
    conn: &Connection,
    env: &mut Env,
    new: &NewJob,
    seq: u64,
    auto_ids: &mut AutoIds,
    hold: bool,
    now: Millis,
) -> CoreResult<(Job, bool)> {
    let dedup = new
        .options
        .dedup
        .as_ref()
        .expect("a job with dedup options");
    purge(conn, now)?;
    let row = load_key(conn, &dedup.id)?;
    let view = row.as_ref().map(|r| r.view(conn)).transpose()?;
    let decision = dedup::on_add(dedup, view.as_ref(), now);
    let owner = row.map(|r| r.owner);
    match decision {
        OnAdd::Create { expires_at } => {
            let job = ops::create_with(conn, env, new, seq, auto_ids, hold, now)?;
            set_key(conn, &dedup.id, &job.id, expires_at)?;
            Ok((job, true))
        }
        OnAdd::Replace { expires_at } => {
            let owner = owner.expect("a held key has an owner");
            ops::delete(conn, &owner)?;
            env.finished.push((owner.clone(), FinishedResult::Missing));
            env.event(
                conn,
                now,
                "removed",
                Some(&owner),
                Some(("prev", "delayed")),
            )?;
            let job = ops::create_with(conn, env, new, seq, auto_ids, hold, now)?;
            set_key(conn, &dedup.id, &job.id, expires_at)?;
            Ok((job, true))
        }
        OnAdd::Duplicate { expires_at, store } => {
            let owner = rows::require(conn, &owner.expect("a held key has an owner"))?;
            if store {
                // A kept duplicate runs on its own: a flow's parent waits for the owner.
                let options = json(&JobOptions {
                    parent: None,
                    ..new.options.clone()
                })?;
                conn.prepare_cached(
                    "UPDATE dedup SET expires_at = ?1, next_name = ?2, next_data = ?3, \
                     next_options = ?4 WHERE id = ?5",
                )
                .and_then(|mut stmt| {
                    stmt.execute(rusqlite::params![
                        expires_at.map(|v| v as i64),
                        new.name,
                        new.data,
                        options,
                        dedup.id
                    ])
                })
                .map_err(sql)?;
            } else {
                conn.prepare_cached("UPDATE dedup SET expires_at = ?1 WHERE id = ?2")
                    .and_then(|mut stmt| {
                        stmt.execute(rusqlite::params![expires_at.map(|v| v as i64), dedup.id])
                    })
                    .map_err(sql)?;
            }
            let duplicate_id = new.options.job_id.as_deref();
            env.event_fields(
                conn,
                now,
                "deduplicated",
                Some(&owner.id),
                [
                    Some(("deduplicationId", &dedup.id)),
                    duplicate_id.map(|j| ("deduplicatedJobId", j)),
                ],
            )?;
            env.event(
                conn,
                now,
                "debounced",
                Some(&owner.id),
                Some(("debounceId", &dedup.id)),
            )?;
            Ok((owner, false))
        }
    }
}

/// After job `id`, added under `dedup_id`, completed or failed for good: releases its key, or
/// adds the key's next job.
pub fn on_finish(
    conn: &Connection,
    env: &mut Env,
    id: &str,
    dedup_id: &str,
    now: Millis,
) -> CoreResult<()> {
    match with_view(conn, dedup_id, |key| dedup::on_finish(id, key, now))? {
        OnFinish::Keep => Ok(()),
        OnFinish::Release => delete_key(conn, dedup_id),
        OnFinish::Requeue => {
            let (name, data, options): (String, String, String) = conn
                .prepare_cached(
                    "SELECT next_name, next_data, next_options FROM dedup WHERE id = ?1",
                )
                .and_then(|mut stmt| {
                    stmt.query_row([dedup_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                })
                .map_err(sql)?;
            delete_key(conn, dedup_id)?;
            let options: JobOptions =
                serde_json::from_str(&options).map_err(|e| CoreError::Storage(e.to_string()))?;
            let next = NewJob {
                name,
                data,
                options,
            };
            if ops::existing(conn, env, &next.options, now)?.is_some() {
                return Ok(());
            }
            let expires_at = next
                .options
                .dedup
                .as_ref()
                .and_then(|d| dedup::expiry(d, now));
            let seq = reserve(conn, "seq", 1)?;
            let mut auto_ids = AutoIds::read(conn)?;
            let added = ops::create(conn, env, &next, seq, &mut auto_ids, now)?;
            auto_ids.write(conn)?;
            if added.state == JobState::Waiting {
                set_meta(conn, "drained", None)?;
            }
            set_key(conn, dedup_id, &added.id, expires_at)
        }
    }
}

/// Before job `id` is removed (remove, clean, drain): deletes the key it holds, if any (a key
/// only ever points at a job added under it, so this is "its key, if still its").
pub fn release(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM dedup WHERE job_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// Before a finished `job` is retried by hand: it takes its key back, unless another
/// unfinished job holds it (then the retry is refused and nothing changes).
pub fn on_retry(conn: &Connection, job: &Job, now: Millis) -> CoreResult<()> {
    let Some(dedup) = job.options.dedup.as_ref() else {
        return Ok(());
    };
    match with_view(conn, &dedup.id, |key| {
        dedup::on_retry(dedup, &job.id, key, now)
    })? {
        OnRetry::Refuse { holder } => Err(dedup::retry_refused(&job.id, &dedup.id, &holder)),
        OnRetry::Reclaim { expires_at } => set_key(conn, &dedup.id, &job.id, expires_at),
    }
}

pub fn get_job_id(conn: &Connection, id: &str, now: Millis) -> CoreResult<Option<String>> {
    with_view(conn, id, |key| {
        key.filter(|k| k.is_held(now)).map(|k| k.owner.to_owned())
    })
}

/// How long the key `id` is still held at `now` (see `JobDedup::get_deduplication_ttl`).
pub fn get_ttl(conn: &Connection, id: &str, now: Millis) -> CoreResult<Option<Option<Millis>>> {
    with_view(conn, id, |key| {
        key.filter(|k| k.is_held(now))
            .map(|k| k.expires_at.map(|at| at - now))
    })
}

pub fn remove_key(conn: &Connection, id: &str, now: Millis) -> CoreResult<bool> {
    let live = with_view(conn, id, |key| key.is_some_and(|k| k.is_live(now)))?;
    delete_key(conn, id)?;
    Ok(live)
}

impl JobDedup for LocalBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.direct(move |conn, _| get_job_id(conn, &dedup_id, now))
    }

    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>> {
        self.direct(move |conn, _| get_ttl(conn, &dedup_id, now))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.call(move |conn, _| remove_key(conn, &dedup_id, now))
    }
}
