//! `DedupKeys`: the memory store's dedup key table, with the jobs that adds replaced. A plain
//! table: `dedup.rs` makes it the store's `DedupTable` for `lifecycle::dedup`, which decides
//! what a key means.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::job_id::JobId;
use crate::jobs::contract::NewJob;
use crate::jobs::model::Millis;

/// A held dedup key: the job holding it and until when.
#[derive(Debug)]
pub(super) struct Key {
    pub(super) owner: JobId,
    pub(super) expires_at: Option<Millis>,
    /// A duplicate kept (keep_last) to be added once the owner finishes.
    pub(super) next: Option<Box<NewJob>>,
}

/// The keys by dedup id, and those with an expiry by expiry, so that expired keys are dropped
/// without a scan.
#[derive(Debug, Default)]
pub(super) struct DedupKeys {
    keys: HashMap<Arc<str>, Key, foldhash::fast::RandomState>,
    by_expiry: BTreeSet<(Millis, Arc<str>)>,
    /// Jobs that adds replaced (and removed) since the last `take_replaced`.
    replaced: Vec<JobId>,
}

impl DedupKeys {
    pub(super) fn set(&mut self, id: &str, owner: JobId, expires_at: Option<Millis>) {
        self.remove(id);
        let id: Arc<str> = Arc::from(id);
        if let Some(at) = expires_at {
            self.by_expiry.insert((at, Arc::clone(&id)));
        }
        let key = Key {
            owner,
            expires_at,
            next: None,
        };
        self.keys.insert(id, key);
    }

    pub(super) fn set_expiry(&mut self, id: &str, expires_at: Option<Millis>) {
        let Some((id, key)) = self.keys.get_key_value(id) else {
            return;
        };
        let id = Arc::clone(id);
        if let Some(at) = key.expires_at {
            self.by_expiry.remove(&(at, Arc::clone(&id)));
        }
        if let Some(at) = expires_at {
            self.by_expiry.insert((at, Arc::clone(&id)));
        }
        if let Some(key) = self.keys.get_mut(&id) {
            key.expires_at = expires_at;
        }
    }

    pub(super) fn remove(&mut self, id: &str) -> Option<Key> {
        let (id, key) = self.keys.remove_entry(id)?;
        if let Some(at) = key.expires_at {
            self.by_expiry.remove(&(at, id));
        }
        Some(key)
    }

    /// Drops the keys that expired and carry no next job: they mean nothing any more.
    pub(super) fn purge(&mut self, now: Millis) {
        while let Some((at, id)) = self.by_expiry.first().cloned() {
            if at > now {
                break;
            }
            self.by_expiry.pop_first();
            if self.keys.get(&id).is_some_and(|k| k.next.is_none()) {
                self.keys.remove(&id);
            }
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&Key> {
        self.keys.get(id)
    }

    /// Keeps `next` on the key `id`, if it is held, to be added once its owner finishes.
    pub(super) fn keep_next(&mut self, id: &str, next: NewJob) {
        if let Some(key) = self.keys.get_mut(id) {
            key.next = Some(Box::new(next));
        }
    }

    pub(super) fn note_replaced(&mut self, job: &JobId) {
        self.replaced.push(Arc::clone(job));
    }

    /// The jobs noted as replaced since the last call.
    pub(super) fn take_replaced(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.replaced)
    }

    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.by_expiry.clear();
        self.replaced.clear();
    }
}
