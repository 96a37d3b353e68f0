//! The local backend's flows (the SQL side of `memory_flow`), decided by `jobs::flow`.
//!
//! A parent's children are rows of `flow_deps` (parent id, child key `<queue>:<id>`, bucket,
//! value or reason). A file holds one queue, so a flow lives in one file: children in another
//! queue are refused before anything is written. What a child's change means for its parent is
//! applied at once, in the transaction of the operation that changed the child (a parent failed
//! by a child tells its own parent in turn, so a failure climbs the tree).

use rusqlite::{Connection, OptionalExtension};

use crate::error::{CoreError, CoreResult};
use crate::jobs::backend::NewJob;
use crate::jobs::flow::{
    self, AddedNode, ChildOutcome, Dependencies, DependencyCounts, FlowNode, ParentRef, Record,
    Then,
};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::{check_payload, JobOptions};

use super::manage;
use super::ops::{self, fail_for_good, to_waiting, transition, Env};
use super::rows::{self, load, reserve, set_meta, sql, AutoIds};

/// The buckets of `flow_deps`, in the order `Dependencies` pages them.
const PROCESSED: i64 = 0;
const UNPROCESSED: i64 = 1;
const FAILED: i64 = 2;
const IGNORED: i64 = 3;

/// The refusal of a node that names another queue than the file's.
fn other_queue(home: &str, queue: &str) -> CoreError {
    CoreError::InvalidConfig(format!(
        "unknown queue {queue:?}: flows across queues need queues in one file; a local file \
         holds one queue ({home:?})"
    ))
}

fn bucket_of(conn: &Connection, parent: &str, child_key: &str) -> CoreResult<Option<i64>> {
    conn.prepare_cached("SELECT bucket FROM flow_deps WHERE parent_id = ?1 AND child_key = ?2")
        .and_then(|mut stmt| stmt.query_row([parent, child_key], |r| r.get(0)).optional())
        .map_err(sql)
}

fn count_in(conn: &Connection, parent: &str, bucket: i64) -> CoreResult<usize> {
    conn.prepare_cached("SELECT count(*) FROM flow_deps WHERE parent_id = ?1 AND bucket = ?2")
        .and_then(|mut stmt| {
            stmt.query_row(rusqlite::params![parent, bucket], |r| r.get::<_, i64>(0))
        })
        .map(|n| n as usize)
        .map_err(sql)
}

/// Puts the child in `bucket` (with `value`), replacing where it was.
fn put(
    conn: &Connection,
    parent: &str,
    child: &ParentRef,
    bucket: i64,
    value: Option<&str>,
) -> CoreResult<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO flow_deps (parent_id, child_key, child_id, bucket, value) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            parent,
            child.key(),
            child.id,
            bucket,
            value
        ])
    })
    .map(|_| ())
    .map_err(sql)
}

fn drop_child(conn: &Connection, parent: &str, child_key: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM flow_deps WHERE parent_id = ?1 AND child_key = ?2")
        .and_then(|mut stmt| stmt.execute([parent, child_key]))
        .map(|_| ())
        .map_err(sql)
}

/// When job `id` (about to be) deleted: its own dependencies go with it (its pending children
/// then run on their own).
pub fn on_delete(conn: &Connection, id: &str) -> CoreResult<()> {
    conn.prepare_cached("DELETE FROM flow_deps WHERE parent_id = ?1")
        .and_then(|mut stmt| stmt.execute([id]))
        .map(|_| ())
        .map_err(sql)
}

/// Obliterate: every dependency goes.
pub fn clear(conn: &Connection) -> CoreResult<()> {
    conn.execute("DELETE FROM flow_deps", [])
        .map(|_| ())
        .map_err(sql)
}

/// Applies `outcome` of the child `child_id` to its parent; `true` if the child was one of the
/// parent's pending dependencies.
fn apply(
    conn: &Connection,
    env: &mut Env,
    parent: &ParentRef,
    child_id: &str,
    outcome: ChildOutcome,
    now: Millis,
) -> CoreResult<bool> {
    if parent.queue != env.queue {
        return Ok(false);
    }
    let Some(mut parent_job) = load(conn, &parent.id)? else {
        return Ok(false);
    };
    let child = ParentRef {
        queue: env.queue.clone(),
        id: child_id.to_owned(),
    };
    let child_key = child.key();
    if bucket_of(conn, &parent.id, &child_key)? != Some(UNPROCESSED) {
        return Ok(false);
    }
    let pending_after = count_in(conn, &parent.id, UNPROCESSED)?.saturating_sub(1);
    let (record, then) = flow::on_child(child_id, outcome, pending_after, parent_job.state);
    match record {
        Record::Processed(value) => put(conn, &parent.id, &child, PROCESSED, Some(&value))?,
        Record::Failed(reason) => put(conn, &parent.id, &child, FAILED, Some(&reason))?,
        Record::Ignored(reason) => put(conn, &parent.id, &child, IGNORED, Some(&reason))?,
        Record::Dropped => drop_child(conn, &parent.id, &child_key)?,
    }
    match then {
        Then::Stay => {}
        Then::Release => release(conn, env, &mut parent_job, now)?,
        Then::Fail(reason) => fail_for_good(conn, env, &mut parent_job, &reason, now)?,
    }
    Ok(true)
}

/// A parent whose children are done: waiting, or delayed by its own delay from now.
fn release(conn: &Connection, env: &mut Env, job: &mut Job, now: Millis) -> CoreResult<()> {
    match flow::release_to(job.options.delay, now) {
        (JobState::Delayed, until) => {
            job.delay_until = until;
            transition(conn, job, JobState::Delayed)?;
            env.event(
                conn,
                now,
                "delayed",
                Some(&job.id),
                Some(("delay", &until.to_string())),
            )
        }
        _ => {
            to_waiting(conn, job, false)?;
            env.event(
                conn,
                now,
                "waiting",
                Some(&job.id),
                Some(("prev", "waiting-children")),
            )
        }
    }
}

/// After the job `id` (with `options`) completed or failed for good: tells its parent.
pub fn on_finish(
    conn: &Connection,
    env: &mut Env,
    options: &JobOptions,
    id: &str,
    outcome: ChildOutcome,
    now: Millis,
) -> CoreResult<()> {
    if let Some(parent) = &options.parent {
        apply(conn, env, parent, id, outcome, now)?;
    }
    Ok(())
}

/// Before `job` is removed (remove, clean, drain): an unfinished child is noted, to leave its
/// parent's dependencies when the removal settles.
pub fn on_removal(env: &mut Env, job: &Job) {
    if let Some(parent) = &job.options.parent {
        if !job.state.is_finished() {
            env.flow_removed.push((parent.clone(), job.id.to_string()));
        }
    }
}

/// After a removal wrote its events: the removed children leave their parents' dependencies
/// (as the memory store settles after the operation).
pub fn settle_removals(conn: &Connection, env: &mut Env, now: Millis) -> CoreResult<()> {
    for (parent, child) in std::mem::take(&mut env.flow_removed) {
        apply(conn, env, &parent, &child, ChildOutcome::Removed, now)?;
    }
    Ok(())
}

/// Before `job` is retried by hand: counted again if its parent still waits for children.
pub fn on_retry(conn: &Connection, env: &Env, job: &Job) -> CoreResult<()> {
    let Some(parent) = &job.options.parent else {
        return Ok(());
    };
    if parent.queue != env.queue || !flow::retry_rejoins(rows::state(conn, &parent.id)?) {
        return Ok(());
    }
    let child = ParentRef {
        queue: env.queue.clone(),
        id: job.id.to_string(),
    };
    put(conn, &parent.id, &child, UNPROCESSED, None)
}

// ------------------------------------------------------------------------- operations

/// The checks of a flow's nodes: in this file's queue, the payload fits, a custom id is free.
fn check(conn: &Connection, env: &Env, nodes: &[&FlowNode], path: &str) -> CoreResult<()> {
    flow::check_nodes(nodes, &env.queue, path, |queue, job: &NewJob| {
        if queue != env.queue {
            return Err(other_queue(&env.queue, queue));
        }
        check_payload(&job.data, env.max_payload_bytes)?;
        if let Some(id) = job.options.job_id.as_deref() {
            if rows::state(conn, id)?.is_some() {
                return Err(CoreError::InvalidConfig(format!(
                    "job_id {id:?} already exists in queue {:?}",
                    env.queue
                )));
            }
        }
        Ok(())
    })
}

fn create_node(
    conn: &Connection,
    env: &mut Env,
    auto_ids: &mut AutoIds,
    node: FlowNode,
    parent: Option<ParentRef>,
    now: Millis,
) -> CoreResult<AddedNode> {
    let hold = !node.children.is_empty();
    let mut new = node.job;
    new.options.parent = parent.clone();
    let seq = reserve(conn, "seq", 1)?;
    let job = ops::create_with(conn, env, &new, seq, auto_ids, hold, now)?;
    let me = ParentRef {
        queue: env.queue.clone(),
        id: job.id.to_string(),
    };
    if let Some(parent) = parent {
        put(conn, &parent.id, &me, UNPROCESSED, None)?;
    }
    let children = node
        .children
        .into_iter()
        .map(|c| create_node(conn, env, auto_ids, c, Some(me.clone()), now))
        .collect::<CoreResult<Vec<_>>>()?;
    Ok(AddedNode {
        queue: env.queue.clone(),
        job,
        children,
    })
}

/// Creates checked nodes under `parent`, in preorder (automatic ids as the memory store takes
/// them).
fn create_all(
    conn: &Connection,
    env: &mut Env,
    nodes: Vec<FlowNode>,
    parent: Option<ParentRef>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    let mut auto_ids = AutoIds::read(conn)?;
    let added = nodes
        .into_iter()
        .map(|n| create_node(conn, env, &mut auto_ids, n, parent.clone(), now))
        .collect::<CoreResult<Vec<_>>>()?;
    auto_ids.write(conn)?;
    if any_waiting(&added) {
        set_meta(conn, "drained", None)?;
    }
    Ok(added)
}

/// Whether a node created waiting (a leaf without a delay), as a claim may then find it.
fn any_waiting(nodes: &[AddedNode]) -> bool {
    nodes
        .iter()
        .any(|n| n.job.state == JobState::Waiting || any_waiting(&n.children))
}

/// Adds a flow: every node checked first, then all written.
pub fn add_flow(
    conn: &Connection,
    env: &mut Env,
    root: FlowNode,
    now: Millis,
) -> CoreResult<AddedNode> {
    check(conn, env, &[&root], "root")?;
    Ok(create_all(conn, env, vec![root], None, now)?.remove(0))
}

/// Adds children to the active job `parent_id` held by `token` and parks it in
/// waiting_children (no attempt used, lock released) until they are done.
pub fn add_children(
    conn: &Connection,
    env: &mut Env,
    parent_id: &str,
    token: &str,
    children: Vec<FlowNode>,
    now: Millis,
) -> CoreResult<Vec<AddedNode>> {
    flow::check_children_count(parent_id, children.len())?;
    let mut parent = ops::locked(conn, parent_id, token, now)?;
    let nodes: Vec<&FlowNode> = children.iter().collect();
    check(conn, env, &nodes, "children")?;
    parent.attempts_made = parent.attempts_made.saturating_sub(1);
    parent.lock = None;
    transition(conn, &mut parent, JobState::WaitingChildren)?;
    env.event(
        conn,
        now,
        "waiting-children",
        Some(parent_id),
        Some(("prev", "active")),
    )?;
    let me = ParentRef {
        queue: env.queue.clone(),
        id: parent_id.to_owned(),
    };
    create_all(conn, env, children, Some(me), now)
}

fn bucket(conn: &Connection, parent: &str, bucket: i64) -> CoreResult<Vec<(String, String)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT child_key, COALESCE(value, '') FROM flow_deps \
             WHERE parent_id = ?1 AND bucket = ?2 ORDER BY child_key",
        )
        .map_err(sql)?;
    let rows = stmt
        .query_map(rusqlite::params![parent, bucket], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .map_err(sql)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql)
}

/// A page of the dependencies of `id` (see `MemoryStore::get_dependencies`).
pub fn get_dependencies(
    conn: &Connection,
    id: &str,
    cursors: [usize; 4],
    count: Option<usize>,
) -> CoreResult<Dependencies> {
    rows::require(conn, id)?;
    let unprocessed: Vec<String> = bucket(conn, id, UNPROCESSED)?
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let (processed, p) = flow::page(&bucket(conn, id, PROCESSED)?, cursors[0], count);
    let (unprocessed, u) = flow::page(&unprocessed, cursors[1], count);
    let (failed, f) = flow::page(&bucket(conn, id, FAILED)?, cursors[2], count);
    let (ignored, i) = flow::page(&bucket(conn, id, IGNORED)?, cursors[3], count);
    Ok(Dependencies {
        processed,
        unprocessed,
        failed,
        ignored,
        next: [p, u, f, i],
    })
}

pub fn get_dependencies_count(conn: &Connection, id: &str) -> CoreResult<DependencyCounts> {
    rows::require(conn, id)?;
    Ok(DependencyCounts {
        processed: count_in(conn, id, PROCESSED)?,
        unprocessed: count_in(conn, id, UNPROCESSED)?,
        failed: count_in(conn, id, FAILED)?,
        ignored: count_in(conn, id, IGNORED)?,
    })
}

/// Detaches the child `child_id` from its parent; `true` if it was one of the parent's pending
/// dependencies (the parent is released if it was the last).
pub fn remove_child_dependency(
    conn: &Connection,
    env: &mut Env,
    child_id: &str,
    now: Millis,
) -> CoreResult<bool> {
    let mut child = rows::require(conn, child_id)?;
    let Some(parent) = child.options.parent.take() else {
        return Ok(false);
    };
    rows::save(conn, &child)?;
    apply(conn, env, &parent, child_id, ChildOutcome::Removed, now)
}

/// Removes every unprocessed child of `parent_id` that no worker holds (each leaves the
/// parent's dependencies, so the parent is released once none is left); returns how many.
pub fn remove_unprocessed_children(
    conn: &Connection,
    env: &mut Env,
    parent_id: &str,
    now: Millis,
) -> CoreResult<usize> {
    rows::require(conn, parent_id)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT child_id FROM flow_deps WHERE parent_id = ?1 AND bucket = ?2 \
             ORDER BY child_key",
        )
        .map_err(sql)?;
    let children = stmt
        .query_map(rusqlite::params![parent_id, UNPROCESSED], |r| {
            r.get::<_, String>(0)
        })
        .map_err(sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(sql)?;
    drop(stmt);
    let mut removed = 0;
    for child in children {
        // A refused removal (a child under a live lock, or gone) writes nothing.
        match manage::remove(conn, env, &child, now) {
            Ok(()) => removed += 1,
            Err(CoreError::Refused(_) | CoreError::JobNotFound(_)) => {}
            Err(other) => return Err(other),
        }
    }
    Ok(removed)
}
