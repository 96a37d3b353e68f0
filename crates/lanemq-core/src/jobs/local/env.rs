//! The writer thread's `Env`: what it keeps between the operations on one file (its queue,
//! limits, connections to other queues' files) and what an operation reports back (finished
//! jobs, removed flow children, a pending outbox), with the event writes every operation shares.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;

use rusqlite::Connection;

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::model::{FinishedResult, Millis};

use super::rows::event;
use super::sync::LocalSync;

/// What the writer thread keeps between operations, and what an operation reports back.
pub struct Env {
    /// The name of the file's one queue (flows name jobs `<queue>:<id>`).
    pub queue: String,
    pub max_events: usize,
    pub max_payload_bytes: usize,
    random: RandomState,
    /// Jobs that finished or disappeared in this batch, for in-process `wait_finished` callers.
    pub finished: Vec<(String, FinishedResult)>,
    /// Set by `close`: the writer stops after committing the current batch.
    pub closing: bool,
    /// Unfinished children removed by this operation, with their parents: their parents hear
    /// of it once the removal's events are written (`job_storage::settle_removals`).
    pub flow_removed: Vec<(ParentRef, String)>,
    /// The directory of this queue's file when it is `<dir>/<queue>.sqlite3`: other queues'
    /// files are beside it, so flows may span them (`relay`).
    pub dir: Option<PathBuf>,
    /// Connections to other queues' files, opened once (`links::with_link`).
    pub links: HashMap<String, Connection>,
    /// Set when a message was written to the outbox: delivered after the commit.
    pub outbox_pending: bool,
    /// How this file's own connection syncs its commits (`relay` makes messages durable
    /// before delivering them when that is `Normal`).
    pub sync: LocalSync,
}

impl Env {
    pub fn new(queue: &str, max_payload_bytes: usize, max_events: usize) -> Self {
        Self {
            queue: queue.to_owned(),
            max_events,
            max_payload_bytes,
            random: RandomState::new(),
            finished: Vec::new(),
            closing: false,
            flow_removed: Vec::new(),
            dir: None,
            links: HashMap::new(),
            outbox_pending: false,
            sync: LocalSync::Full,
        }
    }

    pub fn random(&self, seed: u64) -> u64 {
        let mut hasher = self.random.build_hasher();
        hasher.write_u64(seed);
        hasher.finish()
    }

    pub fn event(
        &self,
        conn: &Connection,
        now: Millis,
        name: &str,
        job: Option<&str>,
        field: Option<(&str, &str)>,
    ) -> CoreResult<()> {
        event(conn, self.max_events, now, name, job, [field, None])
    }

    /// Like `event`, with a second field.
    pub fn event_fields(
        &self,
        conn: &Connection,
        now: Millis,
        name: &str,
        job: Option<&str>,
        fields: [Option<(&str, &str)>; 2],
    ) -> CoreResult<()> {
        event(conn, self.max_events, now, name, job, fields)
    }
}
