//! The Redis (and Valkey) backend of lanemq: every state transition is one Lua script (see
//! `lua/README.md` for the key layout); `RedisJobBackend` is the `JobBackend` the bindings use.
//!
//! Its files are layered: none uses a file of a later group below (`scripts/jobs-imports` prints
//! the exact layers, and fails on an import circle).
//!
//! - the parts: the key layout (`keys`), RESP bytes (`resp`), reply decoding (`decode`), the
//!   scripts and how they are composed (`scripts`, `compose`), a raw connection (`wire`);
//! - how calls reach Redis (`topology/`: URLs and errors, TLS, shared server connections,
//!   Sentinel, Cluster, a queue's routing), and the replicas' acknowledgement (`replicas`);
//! - the queue, `RedisBackend` (`backend/`: the queue itself, its first call's checks, the
//!   call machinery, the hot path's arguments and replies);
//! - the contract: `RedisJobBackend` (`job_backend`), each concern in the file of its name
//!   (`lifecycle`, `reads` and `counts`, `admin`, `events`, `dedup`, `flows`, `schedulers`,
//!   `observe`), the blocking waits (`waits`) and the calls a wire makes (`wire_calls`);
//! - the shared lanes' store, `RedisLaneStore` (`lanes/`), beside the queues: it uses the parts
//!   and `topology/`, no queue.

mod admin;
mod backend;
mod cancels;
mod compose;
mod counts;
mod decode;
mod dedup;
mod events;
mod flows;
mod groups;
mod job_backend;
mod keys;
mod lanes;
mod lifecycle;
mod log_lines;
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
pub use lanes::{Claimed, Letter, NewCommand, Outcome, RedisLaneStore};
pub use topology::cluster::{is_cluster_url, slot_of, Cluster};
pub use topology::connect::{describe, is_tls, mask_url, EvictionPolicy};
pub use topology::sentinel::is_sentinel_url;
pub use topology::server::{Server, ServerOptions, CONNECT_TIMEOUT, RESPONSE_TIMEOUT};
pub use wire::Wire;
pub use wire_calls::{CompletedAndClaimed, Settle, Settled, WireCall, WireCalls};
