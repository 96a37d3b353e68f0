//! The queues of a `MemoryGroup` as a flow spans them (`lifecycle::flows::FlowQueues`): a node
//! of another queue is written in that queue's store, under the group's one lock; and adding a
//! flow on a queue of the group.

use crate::error::{CoreError, CoreResult};
use crate::jobs::contract::NewJob;
use crate::jobs::flow::{self, AddedNode, FlowNode, ParentRef};
use crate::jobs::lifecycle::{self, flows as shared};
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::{check_payload, Dedup, JobOptions};

use super::store::MemoryStore;
use super::Queues;

impl MemoryStore {
    /// This store's checks of a flow node: the payload fits, and a child deduplicated into an
    /// existing job takes a job without a parent (a custom id that exists is that job).
    fn check_flow_job(&self, job: &NewJob, child: bool, now: Millis) -> CoreResult<()> {
        check_payload(&job.data, self.config.max_payload_bytes)?;
        if let (true, Some(dedup)) = (child, &job.options.dedup) {
            if let Some(owner) = self.dedup_owner(dedup, now) {
                let parent = owner.options.parent.as_ref().map(ParentRef::key);
                flow::check_dedup_owner(&dedup.id, &owner.id, parent.as_deref())?;
            }
        }
        Ok(())
    }
}

/// The queues of the group as a flow added on queue `at` spans them
/// (`lifecycle::flows::FlowQueues`): a node of another queue is written in that queue's store,
/// under the same lock.
pub(super) struct GroupFlow<'a> {
    queues: &'a mut Queues,
    at: usize,
}

impl<'a> GroupFlow<'a> {
    pub(super) fn new(queues: &'a mut Queues, at: usize) -> Self {
        Self { queues, at }
    }

    /// The store of a queue the flow's checks found in the group.
    fn store(&mut self, queue: &str) -> &mut MemoryStore {
        let i = self.queues.index(queue).expect("a checked queue exists");
        &mut self.queues.states[i].store
    }

    fn home_store(&mut self) -> &mut MemoryStore {
        &mut self.queues.states[self.at].store
    }
}

impl shared::FlowQueues for GroupFlow<'_> {
    fn home(&self) -> &str {
        self.queues.states[self.at].store.queue_name()
    }

    fn check_job(&mut self, queue: &str, job: &NewJob, child: bool, now: Millis) -> CoreResult<()> {
        let i = self.queues.index(queue).ok_or_else(|| {
            CoreError::InvalidConfig(format!(
                "unknown queue {queue:?} (not a queue of this queue's group)"
            ))
        })?;
        self.queues.states[i].store.check_flow_job(job, child, now)
    }

    fn check_group_room(&mut self, queue: &str, options: &[&JobOptions]) -> CoreResult<()> {
        lifecycle::groups::check_room(self.store(queue), options.iter().copied())
    }

    fn dedup_owner(
        &mut self,
        queue: &str,
        dedup: &Dedup,
        now: Millis,
    ) -> CoreResult<Option<String>> {
        Ok(self
            .store(queue)
            .dedup_owner(dedup, now)
            .map(|owner| owner.id.to_string()))
    }

    fn skip_id(&mut self, queue: &str, custom_id: bool) -> CoreResult<()> {
        if !custom_id {
            self.store(queue).next_job_id(&JobOptions::default());
        }
        Ok(())
    }

    fn create_job(
        &mut self,
        queue: &str,
        job: NewJob,
        hold: bool,
        now: Millis,
    ) -> CoreResult<(Job, bool)> {
        let i = self.queues.index(queue).expect("a checked queue exists");
        let state = &mut self.queues.states[i];
        let NewJob {
            name,
            data,
            options,
        } = job;
        if options.dedup.is_none() {
            return Ok((
                state.store.create_with(&name, &data, options, hold, now),
                true,
            ));
        }
        let created = state
            .store
            .insert_deduplicated_with(&name, &data, options, hold, now);
        super::settle_replaced(state);
        Ok(created)
    }

    fn adopt(&mut self, queue: &str, owner: Job, parent: &ParentRef) -> CoreResult<Job> {
        let store = self.store(queue);
        let job = store
            .jobs
            .get_mut(owner.id.as_ref())
            .expect("an owner exists");
        job.options.parent = Some(parent.clone());
        Ok(job.clone())
    }

    fn depend(&mut self, parent: &ParentRef, child: ParentRef) -> CoreResult<()> {
        self.store(&parent.queue).add_dependency(&parent.id, child);
        Ok(())
    }

    fn load(&mut self, queue: &str, id: &str) -> CoreResult<Option<Job>> {
        Ok(self
            .queues
            .index(queue)
            .and_then(|i| self.queues.states[i].store.jobs.get(id).cloned()))
    }

    fn children_of(&mut self, queue: &str, id: &str) -> CoreResult<Vec<ParentRef>> {
        Ok(self
            .queues
            .index(queue)
            .map(|i| self.queues.states[i].store.children_of(id))
            .unwrap_or_default())
    }

    fn park(&mut self, id: &str, token: &str, now: Millis) -> CoreResult<()> {
        lifecycle::park_for_children(self.home_store(), id, token, now)
    }

    fn release_if_done(&mut self, id: &str, now: Millis) -> CoreResult<()> {
        shared::release_if_done(self.home_store(), id, now)
    }

    fn hold(&mut self, queue: &str, id: &str, now: Millis) -> CoreResult<()> {
        lifecycle::hold_for_children(self.store(queue), id, now)
    }

    fn duplicated(&mut self, job: &Job, now: Millis) -> CoreResult<()> {
        lifecycle::JobStorage::event(self.home_store(), now, "duplicated", Some(&job.id), None)
    }

    fn written(&mut self, _added: &[AddedNode], _now: Millis) -> CoreResult<()> {
        Ok(())
    }

    /// Told what the owner is now (a later node may have changed it).
    fn tell_finished_owner(&mut self, queue: &str, owner: &Job, now: Millis) -> CoreResult<()> {
        let store = self.store(queue);
        let job = &store.jobs[owner.id.as_ref()];
        match (
            flow::finished_owner_outcome(job),
            job.options.parent.clone(),
        ) {
            (Some(outcome), Some(parent)) => {
                shared::on_finish(store, &parent, &owner.id, outcome, now)
            }
            _ => Ok(()),
        }
    }
}

/// Adds a flow on queue `at`: a flow of one job is added as a single job; otherwise
/// `lifecycle::flows::add_flow`.
pub(super) fn add_flow(
    queues: &mut Queues,
    at: usize,
    root: FlowNode,
    now: Millis,
) -> CoreResult<AddedNode> {
    let home = queues.states[at].store.queue_name().to_owned();
    if flow::is_single_job(&root, &home) {
        let state = &mut queues.states[at];
        let job = root.job;
        let (job, _) = state.store.add(&job.name, &job.data, job.options, now)?;
        super::settle_replaced(state);
        return Ok(AddedNode {
            queue: home,
            job,
            children: Vec::new(),
        });
    }
    shared::add_flow(&mut GroupFlow::new(queues, at), root, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::memory::{lock, MemoryGroup};
    use crate::jobs::model::JobState;
    use crate::jobs::options::StoreConfig;

    const T: Millis = 1_700_000_000_000;

    fn node(queue: Option<&str>, job_id: Option<&str>, children: Vec<FlowNode>) -> FlowNode {
        FlowNode {
            queue: queue.map(str::to_owned),
            job: NewJob {
                name: "n".into(),
                data: "null".into(),
                options: JobOptions {
                    job_id: job_id.map(str::to_owned),
                    ..JobOptions::default()
                },
            },
            children,
        }
    }

    fn ids(node: &AddedNode) -> Vec<String> {
        let mut all = vec![format!("{}:{}", node.queue, node.job.id)];
        for child in &node.children {
            all.extend(ids(child));
        }
        all
    }

    #[test]
    fn a_flow_across_queues_takes_ids_in_preorder_and_an_existing_root_gains_children() {
        let group = MemoryGroup::new();
        group.queue("a", StoreConfig::default());
        group.queue("b", StoreConfig::default());
        let mut queues = lock(&group.shared);
        let flow = |root_id| {
            node(
                None,
                root_id,
                vec![node(Some("b"), None, vec![]), node(None, None, vec![])],
            )
        };
        let added = add_flow(&mut queues, 0, flow(Some("root")), T).unwrap();
        assert_eq!(ids(&added), ["a:root", "b:1", "a:1"]);
        let root = &queues.states[0].store.jobs["root"];
        assert_eq!(root.state, JobState::WaitingChildren);
        let pending = shared::unprocessed_children(&mut queues.states[0].store, "root").unwrap();
        assert_eq!(pending.len(), 2);
        // The same root id again: the existing job, which gains the new children (automatic
        // ids are new jobs), returned with all of them.
        let again = add_flow(&mut queues, 0, flow(Some("root")), T).unwrap();
        assert_eq!(ids(&again), ["a:root", "a:1", "a:2", "b:1", "b:2"]);
        let next = add_flow(&mut queues, 0, flow(None), T).unwrap();
        assert_eq!(ids(&next), ["a:3", "b:3", "a:4"]);
    }
}
