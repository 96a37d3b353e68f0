//! Flows across queues on the local backend. A file holds one queue, and SQLite commits one
//! file at a time (a transaction over ATTACHed WAL files is atomic per file, not as a whole),
//! so what a change in one queue means for another is a message: written to this file's
//! `flow_outbox` in the transaction of the change, then delivered, once that committed, into
//! the other queue's file (`<dir>/<queue>.sqlite3`, beside this one) by one transaction there
//! that applies it and records it in `flow_inbox` (the last message applied from each
//! sender). So a message is applied exactly once, even when a delivery is interrupted and
//! repeated, and in the order it was written.
//!
//! The writer delivers right after its commit and before it answers, so a caller sees the
//! other queue changed. Messages left over (a crash between commit and delivery, a file
//! locked for longer than the busy timeout) are delivered when a writer of this file starts
//! and by every stall-recovery pass (workers run one every `stalled_interval`).
//!
//! This file delivers and applies; the messages, their writing and the connections to the
//! other files are `links.rs`.

use rusqlite::{Connection, OptionalExtension};

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::flow::{self, ChildOutcome, ParentRef};
use crate::jobs::lifecycle;
use crate::jobs::lifecycle::JobStorage;
use crate::jobs::model::Millis;

use super::env::Env;
use super::links::{with_link, Message};
use super::rows::{self, meta, set_meta, sql};
use super::storage::{self, SqlStore};
use super::sync::{sync_outbox, LocalSync};
use super::{flow_dedup, flow_deps, manage};

fn exec(conn: &Connection, statement: &str) -> CoreResult<()> {
    conn.execute_batch(statement).map_err(sql)
}

/// This file as a sender: its queue and an epoch drawn when it first sent, so a file made
/// anew under the same name does not pass for the old one in its receivers' inboxes.
fn sender_id(conn: &Connection, env: &Env, queue: &str) -> CoreResult<String> {
    let epoch = match meta(conn, "flow_epoch")? {
        Some(epoch) => epoch,
        None => {
            let epoch = format!("{:016x}", env.random(crate::jobs::wall_clock_ms()));
            set_meta(conn, "flow_epoch", Some(&epoch))?;
            epoch
        }
    };
    Ok(format!("{queue}#{epoch}"))
}

fn has_outbox(conn: &Connection) -> bool {
    conn.query_row("SELECT 1 FROM flow_outbox LIMIT 1", [], |_| Ok(()))
        .optional()
        .ok()
        .flatten()
        .is_some()
}

/// Delivers what this file's outbox holds, then what the files it delivered to now hold in
/// theirs (a parent failed by its child tells its own parent), as far as it goes. A delivery
/// that fails leaves its messages for a later pass.
pub fn deliver_all(conn: &Connection, env: &mut Env) {
    if !std::mem::take(&mut env.outbox_pending) {
        return;
    }
    let home = env.queue.clone();
    let mut senders = vec![home.clone()];
    let mut passes = 0;
    while let Some(sender) = senders.pop() {
        passes += 1;
        if passes > 256 {
            break;
        }
        let next = if sender == home {
            deliver_from(conn, &sender, env)
        } else {
            with_link(env, &sender, |link, env| {
                Ok(deliver_from(link, &sender, env))
            })
            .unwrap_or_default()
        };
        senders.extend(next);
    }
}

/// Delivers one sender's outbox, target by target; returns the targets whose own outbox now
/// holds messages.
fn deliver_from(conn: &Connection, sender: &str, env: &mut Env) -> Vec<String> {
    let rows: Vec<(i64, String, String)> = match conn
        .prepare_cached("SELECT seq, target, body FROM flow_outbox ORDER BY seq LIMIT 10000")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        }) {
        Ok(rows) => rows,
        Err(_) => {
            env.outbox_pending = true;
            return Vec::new();
        }
    };
    if rows.is_empty() {
        return Vec::new(); // nothing to say: no sender id to draw (a write) either
    }
    let Ok(source) = sender_id(conn, env, sender) else {
        env.outbox_pending = true;
        return Vec::new();
    };
    // The sender's commits may be unsynced (`sync="normal"`, by any process that has the file
    // open): the messages are made durable before another file applies them, or a machine crash
    // could keep the delivery and lose the change that sent it (whose number the file would
    // then hand out again).
    if let Some((last, _, _)) = rows.last() {
        // A link (another queue's file) is fully synced; this queue's own connection runs at
        // its level.
        let level = if sender == env.queue {
            env.sync
        } else {
            LocalSync::Full
        };
        if sync_outbox(conn, level, *last).is_err() {
            env.outbox_pending = true;
            return Vec::new();
        }
    }
    // Runs of messages to one target, in the order they were written: a flow's parents reach
    // their queues before any child of theirs elsewhere can run.
    let mut runs: Vec<(String, Vec<(i64, &str)>)> = Vec::new();
    for (seq, target, body) in &rows {
        match runs.last_mut() {
            Some((last, messages)) if last == target => messages.push((*seq, body.as_str())),
            _ => runs.push((target.clone(), vec![(*seq, body.as_str())])),
        }
    }
    let mut onward = Vec::new();
    for (target, messages) in runs {
        let delivered = with_link(env, &target, |link, env| {
            let last = apply_all(link, &target, &source, sender, &messages, env)?;
            Ok((last, has_outbox(link)))
        });
        let Ok((last, more)) = delivered else {
            // Later messages wait too, so their order holds.
            env.outbox_pending = true;
            break;
        };
        let cleared = conn
            .prepare_cached("DELETE FROM flow_outbox WHERE target = ?1 AND seq <= ?2")
            .and_then(|mut stmt| stmt.execute(rusqlite::params![target, last]));
        if cleared.is_err() {
            env.outbox_pending = true;
        }
        if more && !onward.contains(&target) {
            onward.push(target);
        }
    }
    onward
}

/// Applies, in one transaction on `target`'s file, the messages from `source` it has not
/// applied yet; returns the last one's number.
fn apply_all(
    conn: &Connection,
    target: &str,
    source: &str,
    sender: &str,
    messages: &[(i64, &str)],
    env: &Env,
) -> CoreResult<i64> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let applied = (|| {
        let last: i64 = conn
            .query_row(
                "SELECT last_seq FROM flow_inbox WHERE source = ?1",
                [source],
                |r| r.get(0),
            )
            .optional()
            .map_err(sql)?
            .unwrap_or(0);
        let mut here = Env::new(target, env.max_payload_bytes, env.max_events);
        here.dir = env.dir.clone();
        let mut newest = last;
        for &(seq, body) in messages.iter().filter(|(seq, _)| *seq > last) {
            newest = seq;
            // A message that cannot apply (its JSON, a job that is gone) changes nothing and
            // does not hold up the ones after it.
            let Ok(message) = serde_json::from_str::<Message>(body) else {
                continue;
            };
            exec(conn, "SAVEPOINT message")?;
            if apply(conn, &mut here, sender, message).is_err() {
                exec(conn, "ROLLBACK TO message")?;
            }
            exec(conn, "RELEASE message")?;
            here.flow_removed.clear();
        }
        conn.prepare_cached("INSERT OR REPLACE INTO flow_inbox (source, last_seq) VALUES (?1, ?2)")
            .and_then(|mut stmt| stmt.execute(rusqlite::params![source, newest]))
            .map_err(sql)?;
        rows::trim_events(conn, here.max_events)?;
        Ok(messages.last().map_or(last, |(seq, _)| *seq))
    })();
    match applied {
        Ok(last) => exec(conn, "COMMIT").map(|()| last),
        Err(e) => {
            let _ = exec(conn, "ROLLBACK");
            Err(e)
        }
    }
}

/// `Message::Attach` here: what the checks on the sender's side saw may have changed since (a
/// parent that cannot have the job any more hears of it as removed).
fn attach(
    store: &mut SqlStore<'_>,
    id: &str,
    parent: Option<ParentRef>,
    hold: bool,
    at: Millis,
) -> CoreResult<()> {
    if hold {
        match lifecycle::hold_for_children(store, id, at) {
            Ok(()) | Err(CoreError::JobState { .. } | CoreError::JobNotFound(_)) => {}
            Err(other) => return Err(other),
        }
    }
    let Some(parent) = parent else {
        return Ok(());
    };
    // None: it has another parent; else what its new parent hears now, if anything.
    let told = store.update_options(id, |job| {
        Ok(match &job.options.parent {
            None => {
                job.options.parent = Some(parent.clone());
                Some(flow::finished_owner_outcome(job))
            }
            Some(has) if has == &parent => Some(None),
            Some(_) => None,
        })
    })?;
    let outcome = match told {
        None | Some(None) => Some(ChildOutcome::Removed),
        Some(Some(outcome)) => outcome,
    };
    match outcome {
        Some(outcome) => lifecycle::flows::on_finish(store, &parent, id, outcome, at),
        None => Ok(()),
    }
}

/// Applies one message from queue `sender` here.
fn apply(conn: &Connection, env: &mut Env, sender: &str, message: Message) -> CoreResult<()> {
    let child_of = |id: String| ParentRef {
        queue: sender.to_owned(),
        id,
    };
    match message {
        Message::Child {
            parent,
            child,
            outcome,
            at,
        } => {
            let mut store = SqlStore::new(conn, env);
            let child = child_of(child);
            lifecycle::flows::apply_child(&mut store, &parent, &child, outcome, at, false).map(drop)
        }
        Message::Rejoin { parent, child, at } => {
            let mut store = SqlStore::new(conn, env);
            lifecycle::flows::rejoin(&mut store, &parent, &child_of(child), at)
        }
        Message::Create { jobs, deps, at } => {
            let mut waiting = false;
            for job in jobs {
                if rows::state(conn, &job.id)?.is_some() {
                    continue; // taken since it was reserved: that child is not created
                }
                let seq = rows::reserve(conn, "seq", 1)?;
                if job.options.dedup.is_some() {
                    let created = flow_dedup::create(conn, env, job, seq, at)?;
                    waiting |= created.state == crate::jobs::model::JobState::Waiting;
                    continue;
                }
                let new = NewJob {
                    name: job.name,
                    data: job.data,
                    options: job.options,
                };
                let created = storage::create_as(conn, env, &new, &job.id, seq, job.hold, at)?;
                waiting |= created.state == crate::jobs::model::JobState::Waiting;
            }
            for (parent, child) in deps {
                flow_deps::depend(conn, &parent, &child)?;
            }
            if waiting {
                set_meta(conn, "drained", None)?;
            }
            Ok(())
        }
        Message::Remove { child, at } => match manage::remove(conn, env, &child, at) {
            Ok(()) | Err(CoreError::Refused(_) | CoreError::JobNotFound(_)) => Ok(()),
            Err(other) => Err(other),
        },
        Message::Attach {
            id,
            parent,
            hold,
            at,
        } => attach(&mut SqlStore::new(conn, env), &id, parent, hold, at),
        Message::Deduplicated { owner, job, at } => {
            flow_dedup::deduplicated(conn, env, &owner, *job, at)
        }
    }
}
