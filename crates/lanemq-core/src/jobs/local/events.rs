//! The event stream, read straight from the file.

use crate::jobs::contract::{BoxFuture, JobEvents};
use crate::jobs::events::{check_custom_event, StreamEvent, CUSTOM_EVENT};
use crate::jobs::model::Millis;

use super::{manage, LocalBackend};

impl JobEvents for LocalBackend {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        self.direct(move |conn, _| manage::read_events(conn, start, end, limit))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        self.call(move |conn, _| manage::trim_events(conn, max_len))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        self.direct(|conn, _| manage::last_event_id(conn))
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        self.wait_until(timeout, move |backend| {
            let last = backend.direct(|conn, _| manage::last_event_id(conn));
            Box::pin(async move { Ok((last.await? > after, None)) })
        })
    }

    fn publish_event(
        &self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> BoxFuture<u64> {
        self.call(move |conn, env| {
            check_custom_event(&name, &data, env.max_payload_bytes)?;
            let fields = [Some(("name", name.as_str())), Some(("data", data.as_str()))];
            env.event_fields(conn, now, CUSTOM_EVENT, job_id.as_deref(), fields)?;
            manage::last_event_id(conn)
        })
    }
}
