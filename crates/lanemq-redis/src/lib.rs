//! The Redis backend of lanemq (work in progress: connections, checks and the key layout are
//! here; the transitions follow, one Lua script each, see `lua/README.md`).

mod backend;
mod connect;
mod decode;
mod keys;
mod scripts;

pub use backend::RedisBackend;
pub use connect::{connect, describe, Connection, EvictionPolicy};
pub use keys::Keys;
