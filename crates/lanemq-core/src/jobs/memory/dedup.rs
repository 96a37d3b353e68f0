//! `MemoryStore`'s dedup keys: the key table (`DedupTable`) that `lifecycle::dedup` writes, its
//! release when a job is removed by hand, and `JobDedup` for `MemoryBackend`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::CoreResult;

use super::store::{JobId, MemoryStore};
use super::MemoryBackend;
use crate::jobs::contract::{BoxFuture, JobDedup, NewJob};
use crate::jobs::dedup;
use crate::jobs::lifecycle::{self, DedupKey, DedupTable};
use crate::jobs::model::{Job, Millis};

#[derive(Debug)]
struct Key {
    owner: JobId,
    expires_at: Option<Millis>,
    /// A duplicate kept (keep_last) to be added once the owner finishes.
    next: Option<Box<NewJob>>,
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
    fn set(&mut self, id: &str, owner: JobId, expires_at: Option<Millis>) {
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

    fn set_expiry(&mut self, id: &str, expires_at: Option<Millis>) {
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

    fn remove(&mut self, id: &str) -> Option<Key> {
        let (id, key) = self.keys.remove_entry(id)?;
        if let Some(at) = key.expires_at {
            self.by_expiry.remove(&(at, id));
        }
        Some(key)
    }

    /// Drops the keys that expired and carry no next job: they mean nothing any more.
    fn purge(&mut self, now: Millis) {
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

    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.by_expiry.clear();
        self.replaced.clear();
    }
}

impl DedupTable for MemoryStore {
    fn dedup_key(&self, id: &str) -> CoreResult<Option<DedupKey>> {
        Ok(self.dedup.keys.get(id).map(|key| DedupKey {
            owner: Arc::clone(&key.owner),
            expires_at: key.expires_at,
            has_next: key.next.is_some(),
            owner_state: self.jobs.get(&key.owner).map(|j| j.state),
        }))
    }

    fn set_dedup_key(
        &mut self,
        id: &str,
        owner: &Arc<str>,
        expires_at: Option<Millis>,
    ) -> CoreResult<()> {
        self.dedup.set(id, Arc::clone(owner), expires_at);
        Ok(())
    }

    fn extend_dedup_key(
        &mut self,
        id: &str,
        expires_at: Option<Millis>,
        next: Option<NewJob>,
    ) -> CoreResult<()> {
        self.dedup.set_expiry(id, expires_at);
        if let (Some(next), Some(key)) = (next, self.dedup.keys.get_mut(id)) {
            key.next = Some(Box::new(next));
        }
        Ok(())
    }

    fn take_next_job(&mut self, id: &str) -> CoreResult<Option<NewJob>> {
        Ok(self.dedup.remove(id).and_then(|k| k.next).map(|next| *next))
    }

    fn delete_dedup_key(&mut self, id: &str) -> CoreResult<()> {
        self.dedup.remove(id);
        Ok(())
    }

    fn purge_dedup_keys(&mut self, now: Millis) -> CoreResult<()> {
        self.dedup.purge(now);
        Ok(())
    }

    fn note_replaced(&mut self, id: &Arc<str>) -> CoreResult<()> {
        self.dedup.replaced.push(Arc::clone(id));
        Ok(())
    }
}

impl MemoryStore {
    /// The job an add with `dedup` would return instead of adding one (a flow's check of its
    /// nodes; `lifecycle::dedup::owner`).
    pub(super) fn dedup_owner(
        &self,
        dedup: &crate::jobs::options::Dedup,
        now: Millis,
    ) -> Option<Job> {
        let owner =
            lifecycle::dedup::owner(self, dedup, now).expect("the memory store does not fail")?;
        self.jobs.get(&owner).cloned()
    }

    /// A flow's add of a job with dedup options (`lifecycle::dedup::add`); with `hold`, a job
    /// created waits for children (a flow's parent).
    pub(super) fn insert_deduplicated_with(
        &mut self,
        name: &str,
        data: &str,
        options: crate::jobs::options::JobOptions,
        hold: bool,
        now: Millis,
    ) -> (Job, bool) {
        let job = NewJob {
            name: name.to_owned(),
            data: data.to_owned(),
            options,
        };
        let seq =
            lifecycle::JobStorage::reserve_seq(self, 1).expect("the memory store does not fail");
        lifecycle::dedup::add(self, job, seq, hold, now).expect("the memory store does not fail")
    }

    /// Before `job` is removed (remove, clean, drain): deletes its key if it still holds it.
    pub(super) fn dedup_on_removal(&mut self, job: &JobId) {
        let Some(dedup_id) = self.jobs[job].options.dedup.as_ref().map(|d| d.id.as_str()) else {
            return;
        };
        let key = self
            .dedup_key(dedup_id)
            .expect("the memory store does not fail");
        if dedup::released_by_removal(job, key.as_ref().map(DedupKey::view).as_ref()) {
            let dedup_id = dedup_id.to_owned();
            self.dedup.remove(&dedup_id);
        }
    }

    /// Removes a job and releases its dedup key (removals other than retention).
    pub(super) fn delete_releasing(&mut self, job: &JobId, now: Millis) -> Option<Job> {
        if !self.jobs.contains_key(job) {
            return None;
        }
        self.dedup_on_removal(job);
        self.flow_on_removal(job, now);
        self.delete(job)
    }

    /// The jobs that adds with `replace` removed since the last call (their waiters are told).
    pub fn take_replaced(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.dedup.replaced)
    }

    /// The id of the job holding the dedup key `dedup_id`, if it is held.
    pub fn get_deduplication_job_id(&self, dedup_id: &str, now: Millis) -> Option<String> {
        lifecycle::dedup::holder(self, dedup_id, now).expect("the memory store does not fail")
    }

    /// How long the dedup key `dedup_id` is still held (see `JobDedup::get_deduplication_ttl`).
    pub fn get_deduplication_ttl(&self, dedup_id: &str, now: Millis) -> Option<Option<Millis>> {
        lifecycle::dedup::ttl(self, dedup_id, now).expect("the memory store does not fail")
    }

    /// Deletes the dedup key `dedup_id` (and its next job); `true` if it meant anything.
    pub fn remove_deduplication_key(&mut self, dedup_id: &str, now: Millis) -> bool {
        lifecycle::dedup::remove_key(self, dedup_id, now).expect("the memory store does not fail")
    }
}

impl JobDedup for MemoryBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.read(|store| lifecycle::dedup::holder(store, &dedup_id, now))
    }

    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>> {
        self.read(|store| lifecycle::dedup::ttl(store, &dedup_id, now))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| lifecycle::dedup::remove_key(&mut s.store, &dedup_id, now))
    }
}
