//! What a transition leaves to be done once it has written its own job, and `apply`, the one
//! function that does it, in this order (Lua follows the same one; see `lua/README.md`):
//!
//! 1. the job's own write (done by the transition, before any effect);
//! 2. its events, in the order the transition emitted them;
//! 3. for a job that finished for good, in this order: waiters told, its dedup key settled
//!    (which may add the key's next job), its flow parent told, then its retention applied
//!    (which may delete it and older finished jobs: last, so every reaction before it still
//!    finds the job);
//! 4. for a claim: the job schedulers whose occurrences started produce their next ones (after
//!    every claimed job's events, so a next occurrence due at once is not claimed by the claim
//!    that produced it), and then `drained` if nothing was left.

use std::sync::Arc;

use smallvec::SmallVec;

use crate::error::CoreResult;
use crate::jobs::model::{Job, Millis};

use super::finished::Finished;
use super::retention::retain;
use super::storage::{EventField, JobStorage};

#[derive(Debug)]
enum Effect {
    Event(&'static str, Option<Arc<str>>, EventField),
    Finished(Box<Finished>),
    NextOccurrence(String, Arc<str>),
}

/// The effects of one transition, in the order they were added (a finish has three or fewer:
/// kept inline, no allocation).
#[derive(Debug, Default)]
pub struct Effects(SmallVec<[Effect; 3]>);

impl Effects {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` effects at once (a claim's events, one per job: grown one at a time, the
    /// list is copied several times per batch).
    pub fn with_capacity(n: usize) -> Self {
        Self(SmallVec::with_capacity(n))
    }

    pub fn event(&mut self, name: &'static str, job: Option<&Arc<str>>, field: EventField) {
        self.0.push(Effect::Event(name, job.cloned(), field));
    }

    pub fn finished(&mut self, job: &Job) {
        self.0.push(Effect::Finished(Box::new(Finished::of(job))));
    }

    pub fn next_occurrence(&mut self, key: &str, job: &Arc<str>) {
        self.0
            .push(Effect::NextOccurrence(key.to_owned(), Arc::clone(job)));
    }

    /// Does what the transition left, in the order of the module's documentation.
    pub fn apply<S: JobStorage>(self, storage: &mut S, now: Millis) -> CoreResult<()> {
        for effect in self.0 {
            match effect {
                Effect::Event(name, job, field) => storage.event(now, name, job.as_ref(), field)?,
                Effect::Finished(finished) => {
                    storage.tell_waiters(&finished)?;
                    super::dedup::on_finish(storage, &finished, now)?;
                    storage.tell_parent(&finished, now)?;
                    retain(storage, &finished, now)?;
                }
                Effect::NextOccurrence(key, job) => {
                    super::schedulers::on_claim(storage, &key, &job, now)?
                }
            }
        }
        Ok(())
    }
}
