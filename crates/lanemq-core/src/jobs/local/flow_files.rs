//! The files a flow spans on the local backend (`lifecycle::flows::FlowQueues`): the queue it
//! is added on is this file, written in its transaction; a node of another queue goes to the
//! file beside it, under an id reserved there before the flow is written (`reserve_remote`,
//! outside the transaction: no file is locked while another is), and is sent there by a
//! message after the commit, parents first (`links::send`, delivered by `relay`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::flow::{self, AddedNode, FlowNode, ParentRef};
use crate::jobs::lifecycle::{self, flows as shared};
use crate::jobs::model::{Job, JobState, Millis};
use crate::jobs::options::{check_payload, Dedup, JobOptions};

use super::env::Env;
use super::links::{self, Message, RemoteJob};
use super::rows::{self, load, reserve, set_meta, AutoIds};
use super::storage::{self, SqlStore};
use super::{dedup, dedup_keys, flow_deps, schema};

/// What `reserve_remote` read and reserved in the other files a flow spans, before the flow is
/// written.
#[derive(Debug, Default)]
pub struct Reserved {
    /// Per queue, the last id before those reserved for the flow's nodes there (they take the
    /// next ones in preorder, as that queue would).
    ids: HashMap<String, u64>,
    /// Per queue and dedup id, the job there that a node with those dedup options is
    /// deduplicated into (its owner, as read then).
    owners: HashMap<(String, String), Job>,
}

impl Reserved {
    pub fn new() -> Self {
        Self::default()
    }

    fn owner(&self, queue: &str, dedup: &Dedup) -> Option<&Job> {
        self.owners.get(&(queue.to_owned(), dedup.id.clone()))
    }
}

/// Whether any of these nodes is in another queue than `home`.
pub fn spans_queues(nodes: &[&FlowNode], home: &str) -> bool {
    nodes.iter().any(|n| {
        n.queue.as_deref().is_some_and(|q| q != home)
            || spans_queues(
                &n.children.iter().collect::<Vec<_>>(),
                n.queue.as_deref().unwrap_or(home),
            )
    })
}

/// Before a flow with jobs in other queues is written, and outside this queue's transaction
/// (no file is locked while another is): checks its nodes, and in each other queue's file
/// which job holds the dedup key of a node with dedup options (a child's must have no parent;
/// a node whose custom id exists there is that job, not deduplicated), then reserves their
/// automatic ids there (a flow refused after that leaves a gap in those ids).
pub fn reserve_remote(
    dir: Option<&PathBuf>,
    home: &str,
    nodes: &[&FlowNode],
    path: &str,
    max_payload_bytes: usize,
    now: Millis,
) -> CoreResult<Reserved> {
    let mut files: Vec<(String, Connection, u64)> = Vec::new();
    let mut reserved = Reserved::new();
    flow::check_nodes(nodes, home, path, |queue, job: &NewJob, child| {
        check_payload(&job.data, max_payload_bytes)?;
        if queue == home {
            return Ok(());
        }
        let at = match files.iter().position(|(q, _, _)| q == queue) {
            Some(at) => at,
            None => {
                let conn = schema::open(&links::sibling_path(dir, queue)?, queue)?;
                files.push((queue.to_owned(), conn, 0));
                files.len() - 1
            }
        };
        let (_, conn, autos) = &mut files[at];
        // (a custom id that exists there is that job: the flow's checks read it)
        let existing = match job.options.job_id.as_deref() {
            Some(id) => rows::state(conn, id)?.is_some(),
            None => false,
        };
        if let (false, Some(dedup)) = (existing, &job.options.dedup) {
            if let Some(owner) = dedup_keys::flow_owner(conn, dedup, now)? {
                if child {
                    let parent = owner.options.parent.as_ref().map(ParentRef::key);
                    flow::check_dedup_owner(&dedup.id, &owner.id, parent.as_deref())?;
                }
                let at = (queue.to_owned(), dedup.id.clone());
                reserved.owners.insert(at, owner);
            }
        }
        if job.options.job_id.is_none() {
            *autos += 1;
        }
        Ok(())
    })?;
    for (queue, conn, autos) in files {
        reserved
            .ids
            .insert(queue, rows::reserve_auto_ids(&conn, autos)?);
    }
    Ok(reserved)
}

/// A flow's jobs for another queue, sent once the flow is written: parents first (with the
/// dependencies of parents there), then the jobs without children, so a child never runs
/// before its parent exists.
#[derive(Default)]
struct Remote {
    parents: Vec<RemoteJob>,
    leaves: Vec<RemoteJob>,
    deps: Vec<(String, ParentRef)>,
    /// Existing jobs there that the flow names (`Message::Attach`), sent after the parents.
    attach: Vec<(String, Option<ParentRef>, bool)>,
    /// Nodes deduplicated into a job there (`Message::Deduplicated`), sent last.
    duplicates: Vec<(String, RemoteJob)>,
}

/// This file, inside its transaction, and the files beside it as a flow spans them.
pub struct FileFlow<'a> {
    conn: &'a Connection,
    env: &'a mut Env,
    /// Read on first use, written once the flow is.
    auto_ids: Option<AutoIds>,
    /// The ids `reserve_remote` reserved in the other files.
    reserved: Reserved,
    remote: Vec<(String, Remote)>,
}

impl<'a> FileFlow<'a> {
    pub fn new(conn: &'a Connection, env: &'a mut Env, reserved: Reserved) -> Self {
        Self {
            conn,
            env,
            auto_ids: None,
            reserved,
            remote: Vec::new(),
        }
    }

    fn auto_ids(&mut self) -> CoreResult<&mut AutoIds> {
        if self.auto_ids.is_none() {
            self.auto_ids = Some(AutoIds::read(self.conn)?);
        }
        Ok(self.auto_ids.as_mut().expect("just read"))
    }

    fn remote(&mut self, queue: &str) -> &mut Remote {
        let at = match self.remote.iter().position(|(q, _)| q == queue) {
            Some(at) => at,
            None => {
                self.remote.push((queue.to_owned(), Remote::default()));
                self.remote.len() - 1
            }
        };
        &mut self.remote[at].1
    }

    /// A node of another queue: its job as it will be there, under its custom id or the next
    /// id reserved there, sent once the flow is written.
    fn create_remote(
        &mut self,
        queue: &str,
        new: NewJob,
        hold: bool,
        now: Millis,
    ) -> CoreResult<Job> {
        let id = match &new.options.job_id {
            Some(id) => id.clone(),
            None => {
                let last = self.reserved.ids.get_mut(queue).ok_or_else(|| {
                    CoreError::Storage(format!("no ids reserved in queue {queue:?}"))
                })?;
                *last += 1;
                last.to_string()
            }
        };
        let job = Job::added(
            Arc::from(id.as_str()),
            Arc::from(new.name.as_str()),
            Arc::from(new.data.as_str()),
            new.options.clone(),
            (0, 0),
            hold,
            now,
        );
        let remote = RemoteJob {
            id,
            name: new.name,
            data: new.data,
            options: new.options,
            hold,
        };
        let there = self.remote(queue);
        if hold {
            there.parents.push(remote);
        } else {
            there.leaves.push(remote);
        }
        Ok(job)
    }
}

impl shared::FlowQueues for FileFlow<'_> {
    fn home(&self) -> &str {
        &self.env.queue
    }

    /// Another queue's file must be able to sit beside this one (`reserve_remote` checked the
    /// rest of its nodes there).
    fn check_job(&mut self, queue: &str, job: &NewJob, child: bool, now: Millis) -> CoreResult<()> {
        check_payload(&job.data, self.env.max_payload_bytes)?;
        if queue != self.env.queue {
            return links::sibling_path(self.env.dir.as_ref(), queue).map(drop);
        }
        if let (true, Some(dedup)) = (child, &job.options.dedup) {
            if let Some(owner) = dedup_keys::flow_owner(self.conn, dedup, now)? {
                let parent = owner.options.parent.as_ref().map(ParentRef::key);
                flow::check_dedup_owner(&dedup.id, &owner.id, parent.as_deref())?;
            }
        }
        Ok(())
    }

    /// Home only: another file's nodes are written there after this commit.
    fn check_group_room(&mut self, queue: &str, options: &[&JobOptions]) -> CoreResult<()> {
        if queue != self.env.queue {
            return Ok(());
        }
        let mut rows = super::group_rows::GroupRows(self.conn);
        crate::jobs::lifecycle::groups::check_room(&mut rows, options.iter().copied())
    }

    /// Another queue's, as `reserve_remote` read it.
    fn dedup_owner(
        &mut self,
        queue: &str,
        dedup: &Dedup,
        now: Millis,
    ) -> CoreResult<Option<String>> {
        if queue != self.env.queue {
            return Ok(self.reserved.owner(queue, dedup).map(|o| o.id.to_string()));
        }
        let owner = dedup_keys::flow_owner(self.conn, dedup, now)?;
        Ok(owner.map(|owner| owner.id.to_string()))
    }

    fn skip_id(&mut self, queue: &str, custom_id: bool) -> CoreResult<()> {
        if custom_id {
            return Ok(());
        }
        if queue == self.env.queue {
            self.auto_ids()?.take();
        } else if let Some(last) = self.reserved.ids.get_mut(queue) {
            *last += 1;
        }
        Ok(())
    }

    /// A node of another queue deduplicated into the owner `reserve_remote` read there is that
    /// owner, which hears of it by a message (`Message::Deduplicated`: the duplicate's events
    /// and key, its new parent); one created there takes the key when it is (`relay`).
    fn create_job(
        &mut self,
        queue: &str,
        new: NewJob,
        hold: bool,
        now: Millis,
    ) -> CoreResult<(Job, bool)> {
        if queue != self.env.queue {
            let owner = new
                .options
                .dedup
                .as_ref()
                .and_then(|d| self.reserved.owner(queue, d))
                .cloned();
            if let Some(owner) = owner {
                let duplicate = RemoteJob {
                    id: owner.id.to_string(),
                    name: new.name,
                    data: new.data,
                    options: new.options,
                    hold,
                };
                let owner_id = duplicate.id.clone();
                self.remote(queue).duplicates.push((owner_id, duplicate));
                return Ok((owner, false));
            }
            return Ok((self.create_remote(queue, new, hold, now)?, true));
        }
        let seq = reserve(self.conn, "seq", 1)?;
        self.auto_ids()?;
        let auto_ids = self.auto_ids.as_mut().expect("just read");
        if new.options.dedup.is_some() {
            dedup::add_with(self.conn, self.env, &new, seq, auto_ids, hold, now)
        } else {
            let job = storage::create_with(self.conn, self.env, &new, seq, auto_ids, hold, now)?;
            Ok((job, true))
        }
    }

    /// Another queue's job takes its parent there after this commit: an owner that a node was
    /// deduplicated into when its `Message::Deduplicated` arrives, an existing job (a custom
    /// id) by `Message::Attach`.
    fn adopt(&mut self, queue: &str, mut owner: Job, parent: &ParentRef) -> CoreResult<Job> {
        owner.options.parent = Some(parent.clone());
        if queue == self.env.queue {
            rows::save(self.conn, &owner)?;
        } else {
            let remote = self.remote(queue);
            if !remote.duplicates.iter().any(|(id, _)| *id == *owner.id) {
                let entry = (owner.id.to_string(), Some(parent.clone()), false);
                remote.attach.push(entry);
            }
        }
        Ok(owner)
    }

    fn depend(&mut self, parent: &ParentRef, child: ParentRef) -> CoreResult<()> {
        if parent.queue == self.env.queue {
            return flow_deps::depend(self.conn, &parent.id, &child);
        }
        let parent_id = parent.id.clone();
        self.remote(&parent.queue).deps.push((parent_id, child));
        Ok(())
    }

    fn load(&mut self, queue: &str, id: &str) -> CoreResult<Option<Job>> {
        if queue == self.env.queue {
            return load(self.conn, id);
        }
        links::with_link(self.env, queue, |link, _| load(link, id))
    }

    fn children_of(&mut self, queue: &str, id: &str) -> CoreResult<Vec<ParentRef>> {
        if queue == self.env.queue {
            return flow_deps::children(self.conn, id);
        }
        links::with_link(self.env, queue, |link, _| flow_deps::children(link, id))
    }

    fn park(&mut self, id: &str, token: &str, now: Millis) -> CoreResult<()> {
        lifecycle::park_for_children(&mut SqlStore::new(self.conn, self.env), id, token, now)
    }

    fn release_if_done(&mut self, id: &str, now: Millis) -> CoreResult<()> {
        shared::release_if_done(&mut SqlStore::new(self.conn, self.env), id, now)
    }

    /// A job of another queue waits for its children there, after this commit.
    fn hold(&mut self, queue: &str, id: &str, now: Millis) -> CoreResult<()> {
        if queue != self.env.queue {
            self.remote(queue).attach.push((id.to_owned(), None, true));
            return Ok(());
        }
        lifecycle::hold_for_children(&mut SqlStore::new(self.conn, self.env), id, now)
    }

    fn duplicated(&mut self, job: &Job, now: Millis) -> CoreResult<()> {
        self.env
            .event(self.conn, now, "duplicated", Some(&job.id), None)
    }

    /// Writes the automatic ids taken, then sends the other queues' nodes: parents (and
    /// their dependencies) first, then leaves.
    fn written(&mut self, added: &[AddedNode], now: Millis) -> CoreResult<()> {
        if let Some(ids) = self.auto_ids.take() {
            ids.write(self.conn)?;
        }
        if any_waiting(added, &self.env.queue) {
            set_meta(self.conn, "drained", None)?;
        }
        let mut leaves = Vec::new();
        for (queue, remote) in std::mem::take(&mut self.remote) {
            let message = Message::Create {
                jobs: remote.parents,
                deps: remote.deps,
                at: now,
            };
            links::send(self.conn, self.env, &queue, &message)?;
            for (id, parent, hold) in remote.attach {
                let message = Message::Attach {
                    id,
                    parent,
                    hold,
                    at: now,
                };
                links::send(self.conn, self.env, &queue, &message)?;
            }
            leaves.push((queue, remote.leaves, remote.duplicates));
        }
        for (queue, jobs, duplicates) in leaves {
            if !jobs.is_empty() {
                let message = Message::Create {
                    jobs,
                    deps: Vec::new(),
                    at: now,
                };
                links::send(self.conn, self.env, &queue, &message)?;
            }
            // Last: a new parent there exists by then.
            for (owner, job) in duplicates {
                let job = Box::new(job);
                let message = Message::Deduplicated {
                    owner,
                    job,
                    at: now,
                };
                links::send(self.conn, self.env, &queue, &message)?;
            }
        }
        Ok(())
    }

    /// Another queue's job tells its parent when its `Message::Deduplicated` (an owner) or
    /// `Message::Attach` (an existing job) arrives.
    fn tell_finished_owner(&mut self, queue: &str, owner: &Job, now: Millis) -> CoreResult<()> {
        if queue != self.env.queue {
            return Ok(());
        }
        match (flow::finished_owner_outcome(owner), &owner.options.parent) {
            (Some(outcome), Some(parent)) => {
                let mut store = SqlStore::new(self.conn, self.env);
                shared::on_finish(&mut store, parent, &owner.id, outcome, now)
            }
            _ => Ok(()),
        }
    }
}

/// Whether a node of this queue was created waiting (a leaf without a delay), as a claim may
/// then find it.
fn any_waiting(nodes: &[AddedNode], home: &str) -> bool {
    nodes.iter().any(|n| {
        (n.queue == home && n.job.state == JobState::Waiting) || any_waiting(&n.children, home)
    })
}
