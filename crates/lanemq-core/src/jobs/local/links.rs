//! The other queues' files beside this one, as a flow reaches them: their paths, one
//! connection to each (`with_link`), and the messages this file's transaction writes for them
//! in its `flow_outbox` (`Message`, `send`), which `relay` delivers after the commit.

use std::path::PathBuf;
use std::time::Duration;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};
use crate::jobs::flow::{ChildOutcome, ParentRef};
use crate::jobs::model::Millis;
use crate::jobs::options::JobOptions;

use super::env::Env;
use super::rows::sql;
use super::schema;

/// What one queue tells another.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// A child in the sender's queue completed, failed for good or left (removed, detached):
    /// its parent here hears of it.
    Child {
        parent: String,
        child: String,
        outcome: ChildOutcome,
        at: Millis,
    },
    /// A child in the sender's queue was retried: counted again if its parent here still
    /// waits for children.
    Rejoin {
        parent: String,
        child: String,
        at: Millis,
    },
    /// Jobs of a flow added on the sender's queue, to create here under the ids reserved for
    /// them, and the children (anywhere) that parents here wait for.
    Create {
        jobs: Vec<RemoteJob>,
        deps: Vec<(String, ParentRef)>,
        at: Millis,
    },
    /// Removes a child here (`remove_unprocessed_children` of its parent in the sender's queue).
    Remove { child: String, at: Millis },
    /// A job here that a flow added on the sender's queue names by its custom id (an existing
    /// node, `lifecycle::flows`): with `hold` it waits for the children that flow gave it;
    /// with `parent` it becomes that parent's child (told at once if it finished; told as
    /// removed if it is gone or has another parent by now, so the parent does not wait).
    Attach {
        id: String,
        parent: Option<ParentRef>,
        hold: bool,
        at: Millis,
    },
    /// A flow node (`job`, its options naming its parent, if any) deduplicated into the job
    /// `owner` here, as the sender read the key before writing the flow: the duplicate's key
    /// and events, and the owner becomes the parent's child (`flow_dedup`).
    Deduplicated {
        owner: String,
        job: Box<RemoteJob>,
        at: Millis,
    },
}

/// A job a flow creates in another queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RemoteJob {
    pub id: String,
    pub name: String,
    pub data: String,
    pub options: JobOptions,
    pub hold: bool,
}

/// Refuses queue names outside the rule (which also keeps `<dir>/<queue>.sqlite3` a file of
/// the directory).
pub fn check_name(queue: &str) -> CoreResult<()> {
    crate::jobs::check_queue_name(queue)
}

/// The file of queue `queue`, beside this queue's.
pub fn sibling_path(dir: Option<&PathBuf>, queue: &str) -> CoreResult<PathBuf> {
    let Some(dir) = dir else {
        return Err(CoreError::InvalidConfig(format!(
            "unknown queue {queue:?}: flows across queues need the queues' files in one \
             directory (LocalJobQueue(name, directory)); this queue's file was named by its path"
        )));
    };
    check_name(queue)?;
    Ok(dir.join(format!("{queue}.sqlite3")))
}

/// How long a delivery waits for another file's write lock before it leaves its messages for
/// a later pass (the writer does not stall its own queue behind another's).
const LINK_BUSY: Duration = Duration::from_secs(1);

/// Runs `f` with a connection to queue `queue`'s file (opened once per writer, created if
/// new). It commits with full syncs whatever this queue's `sync` (see `sync.rs`).
pub fn with_link<T>(
    env: &mut Env,
    queue: &str,
    f: impl FnOnce(&Connection, &mut Env) -> CoreResult<T>,
) -> CoreResult<T> {
    let conn = match env.links.remove(queue) {
        Some(conn) => conn,
        None => schema::open_waiting(&sibling_path(env.dir.as_ref(), queue)?, queue, LINK_BUSY)?,
    };
    let out = f(&conn, env);
    env.links.insert(queue.to_owned(), conn);
    out
}

/// Writes `message` for queue `target` (delivered after the commit).
pub fn send(conn: &Connection, env: &mut Env, target: &str, message: &Message) -> CoreResult<()> {
    let body = serde_json::to_string(message).map_err(|e| CoreError::Storage(e.to_string()))?;
    conn.prepare_cached("INSERT INTO flow_outbox (target, body) VALUES (?1, ?2)")
        .and_then(|mut stmt| stmt.execute([target, &body]))
        .map_err(sql)?;
    env.outbox_pending = true;
    Ok(())
}
