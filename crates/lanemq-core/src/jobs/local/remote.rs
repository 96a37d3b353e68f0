//! A flow's children in other queues' files, as this file's operations reach them: whether a
//! live lock holds one's tree there, and its removal there by a message after the commit.

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::model::Millis;

use super::env::Env;
use super::flow_deps::children;
use super::links::{self, Message};
use super::rows::load;

/// The id of a job of the tree under `id` in the file `conn` (of queue `queue`) that a live
/// lock holds. Descendants in yet other files are checked when their removal arrives there.
pub fn tree_locked(
    conn: &Connection,
    queue: &str,
    id: &str,
    now: Millis,
) -> CoreResult<Option<String>> {
    let Some(job) = load(conn, id)? else {
        return Ok(None);
    };
    if job.lock.as_ref().is_some_and(|l| l.expires_at > now) {
        return Ok(Some(id.to_owned()));
    }
    for child in children(conn, id)? {
        if child.queue == queue {
            if let Some(held) = tree_locked(conn, queue, &child.id, now)? {
                return Ok(Some(held));
            }
        }
    }
    Ok(None)
}

/// For a child in another queue's file: the id of a job of its tree there under a live lock.
pub fn remote_locked(env: &mut Env, child: &ParentRef, now: Millis) -> CoreResult<Option<String>> {
    links::with_link(env, &child.queue, |link, _| {
        tree_locked(link, &child.queue, &child.id, now)
    })
}

/// Removes a child in another queue's file with its tree there, by a message delivered after
/// the commit.
pub fn remove_remote(
    conn: &Connection,
    env: &mut Env,
    child: &ParentRef,
    now: Millis,
) -> CoreResult<()> {
    let message = Message::Remove {
        child: child.id.clone(),
        at: now,
    };
    links::send(conn, env, &child.queue, &message)
}
