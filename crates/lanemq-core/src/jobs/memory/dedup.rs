//! `MemoryStore` as the `DedupTable` that `lifecycle::dedup` writes (over its `DedupKeys`,
//! `dedup_keys.rs`), a key's release when a job is removed by hand, the store's dedup entry
//! points, and `JobDedup` for `MemoryBackend`.

use std::sync::Arc;

use crate::error::CoreResult;

use super::job_id::JobId;
use super::store::MemoryStore;
use super::MemoryBackend;
use crate::jobs::contract::{BoxFuture, JobDedup, NewJob};
use crate::jobs::dedup;
use crate::jobs::lifecycle::{self, DedupKey, DedupTable};
use crate::jobs::model::{Job, Millis};

impl DedupTable for MemoryStore {
    fn dedup_key(&self, id: &str) -> CoreResult<Option<DedupKey>> {
        Ok(self.dedup.get(id).map(|key| DedupKey {
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
        if let Some(next) = next {
            self.dedup.keep_next(id, next);
        }
        Ok(())
    }

    fn take_next_job(&mut self, id: &str) -> CoreResult<Option<NewJob>> {
        Ok(self.dedup.remove(id).and_then(|k| k.next).map(|next| *next))
    }

    fn next_job_id(&self, id: &str) -> CoreResult<Option<String>> {
        Ok(self
            .dedup
            .get(id)
            .and_then(|key| key.next.as_ref())
            .and_then(|next| next.options.job_id.clone()))
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
        self.dedup.note_replaced(id);
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
        self.dedup.take_replaced()
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

/// `lifecycle::dedup` over the memory store: the steps each decision takes, and their events.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::options::{Dedup, JobOptions};
    use crate::jobs::StoreConfig;

    const T: Millis = 1_000;

    fn with_dedup(f: impl FnOnce(&mut Dedup)) -> JobOptions {
        let mut dedup = Dedup::simple("k");
        f(&mut dedup);
        JobOptions {
            dedup: Some(dedup),
            ..JobOptions::default()
        }
    }

    /// Claims the one waiting job; its lock token.
    fn claim_token(s: &mut MemoryStore) -> String {
        let mut claimed = lifecycle::claim(s, "w", 1000, 1, T).unwrap();
        claimed.remove(0).lock.unwrap().token
    }

    /// The events after `from`, as (name, job, fields).
    fn events_after(s: &MemoryStore, from: u64) -> Vec<(String, String, Vec<String>)> {
        s.read_events(from + 1, u64::MAX, usize::MAX)
            .into_iter()
            .map(|e| {
                let fields = e
                    .fields()
                    .map(|(k, v)| format!("{k}={}", v.as_str()))
                    .collect();
                let job = e.job_id.as_deref().unwrap_or("").to_owned();
                (e.event.to_owned(), job, fields)
            })
            .collect()
    }

    #[test]
    fn a_duplicate_tells_the_owner_and_keep_last_requeues_it_once() {
        let mut s = MemoryStore::new(StoreConfig::default());
        let keep = || with_dedup(|d| d.keep_last = true);
        let (owner, _) = s.add("a", "1", keep(), T).unwrap();
        let token = claim_token(&mut s);
        let before = s.last_event_id();
        let mut duplicate = keep();
        duplicate.job_id = Some("dup".into());
        let (got, created) = s.add("a", "2", duplicate, T + 1).unwrap();
        assert_eq!((&*got.id, created), (&*owner.id, false));
        assert_eq!(
            events_after(&s, before),
            vec![
                (
                    "deduplicated".into(),
                    "1".into(),
                    vec!["deduplicationId=k".into(), "deduplicatedJobId=dup".into()]
                ),
                ("debounced".into(), "1".into(), vec!["debounceId=k".into()]),
            ]
        );
        lifecycle::complete(&mut s, &owner.id, &token, "null", T + 2).unwrap();
        let next = s.get_job("dup").expect("the kept duplicate was added");
        assert_eq!((&*next.data, next.created_at), ("2", T + 2));
        assert_eq!(
            s.get_deduplication_job_id("k", T + 2).as_deref(),
            Some("dup")
        );
    }

    #[test]
    fn replace_removes_the_delayed_owner_and_tells_its_waiters() {
        let mut s = MemoryStore::new(StoreConfig::default());
        let replace = || {
            let mut options = with_dedup(|d| {
                d.replace = true;
                d.ttl = Some(500);
            });
            options.delay = 100;
            options
        };
        let (first, _) = s.add("a", "1", replace(), T).unwrap();
        let before = s.last_event_id();
        let (second, created) = s.add("a", "2", replace(), T + 1).unwrap();
        assert!(created && second.id != first.id);
        assert!(s.get_job(&first.id).is_none());
        assert_eq!(events_after(&s, before)[0].0, "removed");
        assert_eq!(s.take_replaced(), vec![first.id]);
        // The key keeps its expiry (no `extend`).
        assert_eq!(s.get_deduplication_ttl("k", T + 1), Some(Some(499)));
    }

    #[test]
    fn a_retry_takes_the_key_back_unless_another_job_holds_it() {
        let mut s = MemoryStore::new(StoreConfig::default());
        let (first, _) = s.add("a", "1", with_dedup(|_| {}), T).unwrap();
        let token = claim_token(&mut s);
        lifecycle::complete(&mut s, &first.id, &token, "null", T).unwrap();
        let (second, created) = s.add("a", "2", with_dedup(|_| {}), T + 1).unwrap();
        assert!(created);
        let refused = lifecycle::retry_job(&mut s, &first.id, false, T + 2);
        assert!(matches!(refused, Err(crate::CoreError::Refused(_))));
        assert!(s.remove_deduplication_key("k", T + 2));
        lifecycle::retry_job(&mut s, &first.id, false, T + 3).unwrap();
        assert_eq!(
            s.get_deduplication_job_id("k", T + 3).as_deref(),
            Some(&*first.id)
        );
        assert_ne!(first.id, second.id);
    }
}
