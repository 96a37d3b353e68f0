//! Lanes shared by processes and hosts (issue 31): the dispatch plan that makes the in-process
//! decision over every process's commands (`plan`), the lanes as a store keeps them (`spec`),
//! and the local store, a SQLite file every process on the host opens (`LocalLaneStore`).
//! The semantics are the contract's: python/lanemq/lanes/_store.py.

mod local_claim;
mod local_ends;
mod local_enqueue;
mod local_inputs;
mod local_processes;
mod local_reads;
mod local_recover;
mod local_rows;
mod local_store;
mod local_wait;
pub mod plan;
mod schema;
mod spec;

pub use local_claim::Claimed;
pub use local_enqueue::NewCommand;
pub use local_store::{LetterRecord, LocalLaneStore, Outcome};
pub use plan::{plan, Pending, Plan, PlanLane, Runner};
pub use spec::{configs, ms_to_micros, LaneSpec};
