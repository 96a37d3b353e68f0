//! `RedisJobBackend`: `RedisBackend` as a `JobBackend` (the bindings hold it as a trait object).
//! Each concern's impl is in the file of its name, as in the memory and local backends
//! (`lifecycle.rs`, `reads.rs`, `admin.rs`, `events.rs`, `dedup.rs`, `flows.rs`,
//! `schedulers.rs`); each method clones the shared backend into a `'static` future (`call!`).

use std::sync::Arc;

use lanemq_core::CoreResult;

use crate::backend::RedisBackend;

#[derive(Clone)]
pub struct RedisJobBackend {
    backend: Arc<RedisBackend>,
    max_payload_bytes: usize,
}

impl RedisJobBackend {
    pub fn new(backend: RedisBackend, max_payload_bytes: usize) -> Self {
        Self {
            backend: Arc::new(backend),
            max_payload_bytes,
        }
    }

    pub(crate) fn backend(&self) -> &Arc<RedisBackend> {
        &self.backend
    }

    /// The server whose connections this queue shares.
    pub fn server(&self) -> Arc<crate::Server> {
        self.backend.server()
    }

    /// The cluster this queue is in, if it is.
    pub fn cluster(&self) -> Option<&Arc<crate::Cluster>> {
        self.backend.cluster()
    }

    /// The warning for an existing queue whose name the queue-name rule refuses, once.
    pub fn take_name_warning(&self) -> Option<String> {
        self.backend.take_name_warning()
    }

    /// Waits until this queue's server answers, for at most `timeout`; whether it did.
    pub async fn backend_wait_reachable(&self, timeout: std::time::Duration) -> bool {
        self.backend.wait_reachable(timeout).await
    }

    /// Whether this queue connected and checked the server (`RedisBackend::ready`).
    pub fn is_ready(&self) -> bool {
        self.backend.is_ready()
    }

    /// Connects and checks the server for this queue (`RedisBackend::ready`).
    pub async fn backend_ready(&self) -> CoreResult<()> {
        self.backend.ready().await
    }

    pub(crate) fn max_payload_bytes(&self) -> usize {
        self.max_payload_bytes
    }
}

/// `backend.$method(args...)` as a boxed future over a clone of the shared backend.
macro_rules! call {
    ($self:ident, |$b:ident| $body:expr) => {{
        let $b = std::sync::Arc::clone($self.backend());
        Box::pin(async move { $body.await })
    }};
}
pub(crate) use call;
