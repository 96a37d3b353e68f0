//! `MemoryStore`'s dedup keys: what adds, finishes, removals and manual retries do to them, as
//! `dedup` decides.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::error::CoreResult;

use super::store::{JobId, MemoryStore};
use super::MemoryBackend;
use crate::jobs::contract::{BoxFuture, JobDedup};
use crate::jobs::dedup::{self, KeyView, OnAdd, OnFinish, OnRetry};
use crate::jobs::events::Text;
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::JobOptions;

/// A duplicate kept (keep_last) to be added once the key's owner finishes.
#[derive(Debug)]
pub(super) struct NextJob {
    name: String,
    data: String,
    options: JobOptions,
}

#[derive(Debug)]
pub(super) struct DedupKey {
    owner: JobId,
    expires_at: Option<Millis>,
    next: Option<Box<NextJob>>,
}

/// The keys by dedup id, and those with an expiry by expiry, so that expired keys are dropped
/// without a scan.
#[derive(Debug, Default)]
pub(super) struct DedupKeys {
    keys: HashMap<Arc<str>, DedupKey, foldhash::fast::RandomState>,
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
        let key = DedupKey {
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

    fn remove(&mut self, id: &str) -> Option<DedupKey> {
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

impl MemoryStore {
    fn key_view(&self, dedup_id: &str) -> Option<KeyView<'_>> {
        self.dedup.keys.get(dedup_id).map(|key| KeyView {
            owner: &key.owner,
            expires_at: key.expires_at,
            owner_state: self.jobs.get(&key.owner).map(|j| j.state),
            has_next: key.next.is_some(),
        })
    }

    /// The job an add with `dedup` would return instead of adding one (`flow::dedup_owner`).
    pub(super) fn dedup_owner(
        &self,
        dedup: &crate::jobs::options::Dedup,
        now: Millis,
    ) -> Option<Job> {
        let view = self.key_view(&dedup.id);
        let owner = crate::jobs::flow::dedup_owner(dedup, view.as_ref(), now)?;
        self.jobs.get(owner).cloned()
    }

    /// `insert` for a job with dedup options (its custom id, if any, is free).
    pub(super) fn insert_deduplicated(
        &mut self,
        name: &str,
        data: &str,
        options: JobOptions,
        now: Millis,
    ) -> (Job, bool) {
        self.insert_deduplicated_with(name, data, options, false, now)
    }

    /// `insert_deduplicated`; with `hold`, a job created waits for children (a flow's parent).
    pub(super) fn insert_deduplicated_with(
        &mut self,
        name: &str,
        data: &str,
        mut options: JobOptions,
        hold: bool,
        now: Millis,
    ) -> (Job, bool) {
        let dedup = options.dedup.clone().expect("a job with dedup options");
        self.dedup.purge(now);
        let view = self.key_view(&dedup.id);
        let owner = view.map(|v| Arc::<str>::from(v.owner));
        match dedup::on_add(&dedup, view.as_ref(), now) {
            OnAdd::Create { expires_at } => {
                let job = self.create_with(name, data, options, hold, now);
                self.dedup.set(&dedup.id, Arc::clone(&job.id), expires_at);
                (job, true)
            }
            OnAdd::Replace { expires_at } => {
                let owner = owner.expect("a held key has an owner");
                let key = self.key(&owner).expect("a delayed owner exists");
                self.delete(&key);
                self.events
                    .push(now, "removed", Some(&key), Some(("prev", "delayed".into())));
                self.dedup.replaced.push(key);
                let job = self.create_with(name, data, options, hold, now);
                self.dedup.set(&dedup.id, Arc::clone(&job.id), expires_at);
                (job, true)
            }
            OnAdd::Duplicate { expires_at, store } => {
                let owner = self
                    .key(&owner.expect("a held key has an owner"))
                    .expect("a held key's owner exists");
                self.dedup.set_expiry(&dedup.id, expires_at);
                let duplicate_id = options.job_id.clone();
                if store {
                    // A kept duplicate runs on its own: a flow's parent waits for the owner.
                    options.parent = None;
                    if let Some(key) = self.dedup.keys.get_mut(dedup.id.as_str()) {
                        key.next = Some(Box::new(NextJob {
                            name: name.to_owned(),
                            data: data.to_owned(),
                            options,
                        }));
                    }
                }
                let id: Arc<str> = Arc::from(dedup.id);
                self.events.push_fields(
                    now,
                    "deduplicated",
                    Some(&owner),
                    Some(("deduplicationId", Text::Shared(Arc::clone(&id)))),
                    duplicate_id.map(|j| ("deduplicatedJobId", Text::Owned(j))),
                );
                self.events.push(
                    now,
                    "debounced",
                    Some(&owner),
                    Some(("debounceId", Text::Shared(id))),
                );
                (self.jobs[&owner].clone(), false)
            }
        }
    }

    /// After `job` completed or failed for good: releases its key, or adds the key's next job.
    pub(super) fn dedup_on_finish(&mut self, job: &JobId, now: Millis) {
        let Some(dedup_id) = self.jobs[job].options.dedup.as_ref().map(|d| d.id.clone()) else {
            return;
        };
        match dedup::on_finish(job, self.key_view(&dedup_id).as_ref(), now) {
            OnFinish::Keep => {}
            OnFinish::Release => {
                self.dedup.remove(&dedup_id);
            }
            OnFinish::Requeue => {
                let next = self
                    .dedup
                    .remove(&dedup_id)
                    .and_then(|k| k.next)
                    .expect("a key to requeue carries a next job");
                if self.existing(&next.options, now).is_some() {
                    return;
                }
                let expires_at = next
                    .options
                    .dedup
                    .as_ref()
                    .and_then(|d| dedup::expiry(d, now));
                let added = self.create(&next.name, &next.data, next.options, now);
                self.dedup.set(&dedup_id, added.id, expires_at);
            }
        }
    }

    /// Before `job` is removed (remove, clean, drain): deletes its key if it still holds it.
    pub(super) fn dedup_on_removal(&mut self, job: &JobId) {
        let Some(dedup_id) = self.jobs[job].options.dedup.as_ref().map(|d| d.id.as_str()) else {
            return;
        };
        if dedup::released_by_removal(job, self.key_view(dedup_id).as_ref()) {
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

    /// Before a finished `job` is retried by hand: it takes its key back, unless another
    /// unfinished job holds it (then the retry is refused and nothing changes).
    pub(super) fn dedup_on_retry(&mut self, job: &JobId, now: Millis) -> CoreResult<()> {
        let Some(dedup) = self.jobs[job].options.dedup.clone() else {
            return Ok(());
        };
        match dedup::on_retry(&dedup, job, self.key_view(&dedup.id).as_ref(), now) {
            OnRetry::Refuse { holder } => Err(dedup::retry_refused(job, &dedup.id, &holder)),
            OnRetry::Reclaim { expires_at } => {
                self.dedup.set(&dedup.id, Arc::clone(job), expires_at);
                Ok(())
            }
        }
    }

    /// The jobs that adds with `replace` removed since the last call (their waiters are told).
    pub fn take_replaced(&mut self) -> Vec<JobId> {
        std::mem::take(&mut self.dedup.replaced)
    }

    /// The id of the job holding the dedup key `dedup_id`, if it is held.
    pub fn get_deduplication_job_id(&self, dedup_id: &str, now: Millis) -> Option<String> {
        self.key_view(dedup_id)
            .filter(|k| k.is_held(now))
            .map(|k| k.owner.to_owned())
    }

    /// How long the dedup key `dedup_id` is still held (see `JobDedup::get_deduplication_ttl`).
    pub fn get_deduplication_ttl(&self, dedup_id: &str, now: Millis) -> Option<Option<Millis>> {
        self.key_view(dedup_id)
            .filter(|k| k.is_held(now))
            .map(|k| k.expires_at.map(|at| at - now))
    }

    /// Deletes the dedup key `dedup_id` (and its next job); `true` if it meant anything.
    pub fn remove_deduplication_key(&mut self, dedup_id: &str, now: Millis) -> bool {
        let live = self.key_view(dedup_id).is_some_and(|k| k.is_live(now));
        self.dedup.remove(dedup_id);
        live
    }
}

impl JobDedup for MemoryBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        self.read(|store| Ok(store.get_deduplication_job_id(&dedup_id, now)))
    }

    fn get_deduplication_ttl(
        &self,
        dedup_id: String,
        now: Millis,
    ) -> BoxFuture<Option<Option<Millis>>> {
        self.read(|store| Ok(store.get_deduplication_ttl(&dedup_id, now)))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        self.write(|s| Ok(s.store.remove_deduplication_key(&dedup_id, now)))
    }
}
