//! `MemoryStore` as the `DependencySets` of `lifecycle::flows`, over each parent's `Deps`
//! (`flow_state.rs`): its children by key in four ordered buckets, and one map from a child's
//! key to the child and its bucket, so that finding where a child is takes one lookup.

use std::sync::Arc;

use crate::error::CoreResult;
use crate::jobs::flow::ParentRef;
use crate::jobs::lifecycle::flows::{Bucket, DependencySets};
use crate::jobs::model::JobState;

use super::store::{MemoryStore, NO_FAILURE};

impl MemoryStore {
    /// Every child of `id`, in any set, sorted by key.
    pub(super) fn children_of(&self, id: &str) -> Vec<ParentRef> {
        let mut children: Vec<(&String, &ParentRef)> = self
            .flow
            .deps
            .get(id)
            .map(|d| d.refs.iter().map(|(k, (c, _))| (k, c)).collect())
            .unwrap_or_default();
        children.sort_unstable_by(|a, b| a.0.cmp(b.0));
        children.into_iter().map(|(_, c)| c.clone()).collect()
    }

    /// `parent` waits for `child` (a flow just created them).
    pub(super) fn add_dependency(&mut self, parent: &str, child: ParentRef) {
        let key = child.key();
        self.put_child(parent, &child, key, Bucket::Unprocessed, String::new())
            .expect(NO_FAILURE);
    }
}

impl DependencySets for MemoryStore {
    fn job_state(&mut self, id: &str) -> CoreResult<Option<JobState>> {
        Ok(self.jobs.get(id).map(|j| j.state))
    }

    fn bucket_of(&mut self, parent_id: &str, child_key: &str) -> CoreResult<Option<Bucket>> {
        Ok(self
            .flow
            .deps
            .get(parent_id)
            .and_then(|d| d.refs.get(child_key))
            .map(|(_, bucket)| *bucket))
    }

    fn put_child(
        &mut self,
        parent_id: &str,
        child: &ParentRef,
        child_key: String,
        bucket: Bucket,
        value: String,
    ) -> CoreResult<()> {
        let deps = match self.flow.deps.get_mut(parent_id) {
            Some(deps) => deps,
            None => {
                let key = self.key(parent_id).unwrap_or_else(|_| Arc::from(parent_id));
                self.flow.deps.entry(key).or_default()
            }
        };
        match deps.refs.get_mut(&child_key) {
            Some((_, was)) => {
                deps.buckets[*was as usize].remove(&child_key);
                *was = bucket;
            }
            None => {
                deps.refs.insert(child_key.clone(), (child.clone(), bucket));
            }
        }
        deps.buckets[bucket as usize].insert(child_key, value);
        Ok(())
    }

    fn drop_child(&mut self, parent_id: &str, child_key: &str) -> CoreResult<()> {
        if let Some(deps) = self.flow.deps.get_mut(parent_id) {
            if let Some((_, bucket)) = deps.refs.remove(child_key) {
                deps.buckets[bucket as usize].remove(child_key);
            }
        }
        Ok(())
    }

    fn count_bucket(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<usize> {
        Ok(self
            .flow
            .deps
            .get(parent_id)
            .map_or(0, |d| d.buckets[bucket as usize].len()))
    }

    fn bucket_entries(
        &mut self,
        parent_id: &str,
        bucket: Bucket,
    ) -> CoreResult<Vec<(String, String)>> {
        Ok(self.flow.deps.get(parent_id).map_or_else(Vec::new, |d| {
            d.buckets[bucket as usize]
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        }))
    }

    fn bucket_children(&mut self, parent_id: &str, bucket: Bucket) -> CoreResult<Vec<ParentRef>> {
        Ok(self.flow.deps.get(parent_id).map_or_else(Vec::new, |d| {
            d.buckets[bucket as usize]
                .keys()
                .map(|k| d.refs[k].0.clone())
                .collect()
        }))
    }

    fn forget_parent(&mut self, parent_id: &str) -> CoreResult<()> {
        if !self.flow.deps.is_empty() {
            self.flow.deps.remove(parent_id);
        }
        Ok(())
    }

    fn forget_all(&mut self) -> CoreResult<()> {
        self.flow.deps.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CoreError;
    use crate::jobs::flow::ChildOutcome;
    use crate::jobs::lifecycle::flows::{self as shared, Detached};
    use crate::jobs::model::Millis;
    use crate::jobs::options::{JobOptions, StoreConfig};

    const T: Millis = 1_700_000_000_000;

    /// A parent of queue "default" waiting for two children of the same store.
    fn family() -> (MemoryStore, String, [ParentRef; 2]) {
        let mut store = MemoryStore::new(StoreConfig::default());
        let parent = store.create_with("p", "null", JobOptions::default(), true, T);
        let children = [0, 1].map(|_| {
            let options = JobOptions {
                parent: Some(ParentRef {
                    queue: "default".into(),
                    id: parent.id.to_string(),
                }),
                ..JobOptions::default()
            };
            let child = store.create_with("c", "null", options, false, T);
            let child = ParentRef {
                queue: "default".into(),
                id: child.id.to_string(),
            };
            store.add_dependency(&parent.id, child.clone());
            child
        });
        (store, parent.id.to_string(), children)
    }

    #[test]
    fn shared_steps_move_children_between_sets_and_release_the_parent_once() {
        let (mut store, parent, [a, b]) = family();
        let done = |v: &str| ChildOutcome::Completed(v.to_owned());
        assert!(shared::apply_child(&mut store, &parent, &a, done("1"), T, false).unwrap());
        // Told twice, the second time changes nothing.
        assert!(!shared::apply_child(&mut store, &parent, &a, done("1"), T, false).unwrap());
        assert_eq!(store.jobs[parent.as_str()].state, JobState::WaitingChildren);
        let counts = shared::get_dependencies_count(&mut store, &parent).unwrap();
        assert_eq!((counts.processed, counts.unprocessed), (1, 1));
        assert!(shared::apply_child(&mut store, &parent, &b, done("2"), T, false).unwrap());
        assert_eq!(store.jobs[parent.as_str()].state, JobState::Waiting);
        let page = shared::get_dependencies(&mut store, &parent, [0; 4], Some(1)).unwrap();
        assert_eq!(page.processed, vec![(a.key(), "1".to_owned())]);
        assert_eq!(page.next[0], Some(1));
        assert_eq!(store.children_of(&parent), vec![a, b]);
    }

    #[test]
    fn a_detached_child_no_longer_counts_and_a_missing_parent_is_not_found() {
        let (mut store, parent, [a, _]) = family();
        let detached = shared::remove_child_dependency(&mut store, &a.id, T).unwrap();
        assert_eq!(detached, Detached::Here(true));
        assert_eq!(store.jobs[a.id.as_str()].options.parent, None);
        let pending = shared::unprocessed_children(&mut store, &parent).unwrap();
        assert_eq!(pending.len(), 1);
        let missing = shared::get_dependencies_count(&mut store, "nope").unwrap_err();
        assert!(matches!(missing, CoreError::JobNotFound(_)), "{missing}");
    }
}
