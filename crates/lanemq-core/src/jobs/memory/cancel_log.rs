//! A memory queue's cancel requests (`lifecycle::CancelTable`), a plain table below the store
//! (like `dedup_keys`; it never names the store): each active job's request, and
//! the log the workers listen to, with the `Notify` that wakes them when a request is pushed.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::jobs::constants::CANCEL_LOG_TTL;
use crate::jobs::contract::CancelRequest;
use crate::jobs::lifecycle::StoredCancel;
use crate::jobs::model::Millis;

#[derive(Debug, Default)]
pub struct CancelLog {
    /// By job id: the request that applies while the job stays active under that lock.
    pub(super) requests: HashMap<String, StoredCancel>,
    /// (when, request), oldest first; entries past `CANCEL_LOG_TTL` go as new ones come.
    log: VecDeque<(Millis, CancelRequest)>,
    last_seq: u64,
    /// Pinged once per pushed request: `wait_cancels` sleeps on it, never on every change.
    pub(super) pushed: Arc<Notify>,
}

impl CancelLog {
    pub(super) fn push(&mut self, id: &str, request: StoredCancel, now: Millis) -> u64 {
        self.last_seq += 1;
        while self
            .log
            .front()
            .is_some_and(|(at, _)| at.saturating_add(CANCEL_LOG_TTL) < now)
        {
            self.log.pop_front();
        }
        self.log.push_back((
            now,
            CancelRequest {
                seq: self.last_seq,
                job_id: id.to_owned(),
                reason: request.reason.clone(),
            },
        ));
        self.requests.insert(id.to_owned(), request);
        self.pushed.notify_waiters();
        self.last_seq
    }

    pub(super) fn drop_request(&mut self, id: &str) {
        if !self.requests.is_empty() {
            self.requests.remove(id);
        }
    }

    pub(super) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The requests past `after`, oldest first.
    pub(super) fn after(&self, after: u64) -> Vec<CancelRequest> {
        let start = self.log.partition_point(|(_, r)| r.seq <= after);
        self.log.range(start..).map(|(_, r)| r.clone()).collect()
    }
}
