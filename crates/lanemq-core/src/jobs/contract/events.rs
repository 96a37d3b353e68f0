//! The queue's event stream: ids rise by one per event, and readers page through it.

use crate::jobs::events::StreamEvent;
use crate::jobs::model::Millis;

use super::BoxFuture;

pub trait JobEvents: Send + Sync + 'static {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>>;
    fn trim_events(&self, max_len: usize) -> BoxFuture<usize>;
    fn last_event_id(&self) -> BoxFuture<u64>;
    /// Resolves `true` once an event with an id above `after` exists, `false` after `timeout`.
    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool>;
    /// Appends a custom event (BullMQ's `QueueEventsProducer.publishEvent`): `CUSTOM_EVENT`
    /// with fields `name` and `data` (the caller's JSON), checked by `check_custom_event`
    /// first. Returns its id.
    fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> BoxFuture<u64>;
}
