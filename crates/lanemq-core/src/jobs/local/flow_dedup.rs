//! Dedup on a flow's nodes in another file, as the relay applies them there. The flow's own
//! transaction read each key in this file beforehand (`flow_files::reserve_remote`) and wrote
//! the flow as that read decided; no file is locked while another is, so what arrives here
//! is applied as things stand now, leaving no parent waiting for a job that will not come.

use std::sync::Arc;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::contract::NewJob;
use crate::jobs::flow::{self, ChildOutcome};
use crate::jobs::lifecycle;
use crate::jobs::model::{Job, Millis};

use super::env::Env;
use super::links::RemoteJob;
use super::rows;
use super::storage::{self, SqlStore};

fn new_job(job: RemoteJob) -> NewJob {
    NewJob {
        name: job.name,
        data: job.data,
        options: job.options,
    }
}

/// Creates a node with dedup options under its reserved id, taking its key as an add does
/// (or replacing the delayed job that held it, under `replace`). A key held since it was
/// read: the node is created without it (its parent waits for it).
pub fn create(
    conn: &Connection,
    env: &mut Env,
    job: RemoteJob,
    seq: u64,
    at: Millis,
) -> CoreResult<Job> {
    let (id, hold) = (job.id.clone(), job.hold);
    let new = new_job(job);
    let dedup = new
        .options
        .dedup
        .clone()
        .expect("a node with dedup options");
    let mut store = SqlStore::new(conn, env);
    if lifecycle::dedup::owner(&store, &dedup, at)?.is_some() {
        return storage::create_as(conn, env, &new, &id, seq, hold, at);
    }
    let id: Arc<str> = Arc::from(id);
    lifecycle::dedup::add_as(&mut store, new, Some(id), seq, hold, at).map(|(job, _)| job)
}

/// A node deduplicated into the job `owner` here: the duplicate's effects (key expiry, a kept
/// `keep_last` job, its events) while the key still names the owner, then the owner becomes
/// the node's parent's child, told at once of a finish it had already. An owner gone, or
/// another parent's child since, is a child removed for that parent (it stops waiting).
pub fn deduplicated(
    conn: &Connection,
    env: &mut Env,
    owner: &str,
    job: RemoteJob,
    at: Millis,
) -> CoreResult<()> {
    let new = new_job(job);
    let dedup = new
        .options
        .dedup
        .clone()
        .expect("a node with dedup options");
    let parent = new.options.parent.clone();
    let mut store = SqlStore::new(conn, env);
    if lifecycle::dedup::owner(&store, &dedup, at)?.as_deref() == Some(owner) {
        let seq = rows::reserve(conn, "seq", 1)?;
        lifecycle::dedup::add(&mut store, new, seq, false, at)?;
    }
    let Some(parent) = parent else {
        return Ok(());
    };
    let outcome = match rows::load(conn, owner)? {
        Some(mut found) if found.options.parent.is_none() => {
            found.options.parent = Some(parent.clone());
            rows::save(conn, &found)?;
            match flow::finished_owner_outcome(&found) {
                Some(outcome) => outcome,
                None => return Ok(()),
            }
        }
        _ => ChildOutcome::Removed,
    };
    let mut store = SqlStore::new(conn, env);
    lifecycle::flows::on_finish(&mut store, &parent, owner, outcome, at)
}
