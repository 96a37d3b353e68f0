//! The event stream of the queue's store.

use crate::jobs::contract::{BoxFuture, JobEvents};
use crate::jobs::events::StreamEvent;
use crate::jobs::model::Millis;

use super::MemoryBackend;

impl JobEvents for MemoryBackend {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        self.read(|store| Ok(store.read_events(start, end, limit)))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        self.read(|store| Ok(store.trim_events(max_len)))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        self.read(|store| Ok(store.last_event_id()))
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, move |store, _| {
            (store.last_event_id() > after, None)
        })
    }

    fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> BoxFuture<u64> {
        // A write: it wakes the readers waiting for events.
        self.write(move |state| state.store.publish_event(name, job_id, data, now))
    }
}
