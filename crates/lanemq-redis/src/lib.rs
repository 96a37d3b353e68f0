//! The Redis (and Valkey) backend of lanemq: every state transition is one Lua script (see
//! `lua/README.md` for the key layout); `RedisJobBackend` is the `JobBackend` the bindings use.

mod admin;
mod backend;
mod compose;
mod decode;
mod dedup;
mod events;
mod flows;
mod job_backend;
mod keys;
mod lifecycle;
mod observe;
mod reads;
mod replicas;
mod resp;
mod schedulers;
mod scripts;
mod topology;
mod waits;
mod wire;
mod wire_calls;

pub use backend::RedisBackend;
pub use job_backend::RedisJobBackend;
pub use keys::Keys;
pub use topology::cluster::{is_cluster_url, slot_of, Cluster};
pub use topology::connect::{describe, is_tls, mask_url, EvictionPolicy};
pub use topology::sentinel::is_sentinel_url;
pub use topology::server::{Server, ServerOptions, CONNECT_TIMEOUT, RESPONSE_TIMEOUT};
pub use wire::Wire;
pub use wire_calls::{CompletedAndClaimed, Settle, Settled, WireCall, WireCalls};
