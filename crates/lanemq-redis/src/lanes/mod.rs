//! The shared lanes' store on Redis (`python/lanemq/lanes/_store.py` is the contract): every
//! operation is one call of `lua/lanes-1.lua`, on a single server, a Redis Cluster (the
//! store's keys share one hash tag, so one slot) or behind Sentinel, through the crate's
//! connections (`topology`). Its files: the lanes as the store dispatches them and the
//! records it returns (`spec`), the script and its replies' errors (`script`), the store and
//! how a call reaches its server (`store`), the operations (`ops`; enqueues and completes, as
//! batches, in `batch`), and the blocking wait on a connection of its own (`wait`). The lanes
//! are the core's `LaneSpec`, checked as the local store checks them.

mod batch;
mod ops;
mod script;
mod spec;
mod store;
mod wait;

pub use spec::{Claimed, Letter, NewCommand, Outcome};
pub use store::RedisLaneStore;
