//! `lanemq._core`: the Python face of the Rust core. Each exposed class lives in its own file;
//! the typed public API in `python/lanemq/` wraps these.

use pyo3::prelude::*;

mod bridge;
mod core_args;
mod dead_letter;
mod durable_journal;
mod errors;
mod flows;
mod hub;
mod interrupt;
mod job_options;
mod job_queue;
mod job_queue_forwards;
mod job_queue_groups;
mod job_queue_hot;
mod job_queue_renewals;
mod job_record;
mod lane_config;
mod lane_dispatcher;
mod local_lane_store;
mod ready;
mod redis_lane_store;
mod redis_queue;
mod runtime;
mod scheduler_record;
mod wire_link;
mod worker_book;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The crate's version is the package's (pyproject.toml takes it from Cargo.toml), so the
    // binary and `lanemq.__version__` cannot disagree.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // Which build this binary is, fixed at compile time: a debug build runs many times slower,
    // so a bench must say (and check) which build it measured rather than guess.
    let build_profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    m.add("BUILD_PROFILE", build_profile)?;
    m.add_class::<lane_config::RetryPolicy>()?;
    m.add_class::<lane_config::RateLimit>()?;
    m.add_class::<lane_config::PriorityBoost>()?;
    m.add_class::<lane_config::LaneConfig>()?;
    m.add_class::<lane_config::AlertConfig>()?;
    m.add_class::<dead_letter::DeadLetter>()?;
    m.add_class::<lane_dispatcher::LaneDispatcher>()?;
    // The class's name before the lanes' dispatcher was renamed (a scheduler makes repeatable
    // jobs here): the same class, so old imports and isinstance checks keep working.
    m.add("LaneScheduler", m.getattr("LaneDispatcher")?)?;
    m.add_class::<local_lane_store::LocalLaneStore>()?;
    m.add_class::<durable_journal::DurableJournal>()?;
    m.add_class::<job_options::Backoff>()?;
    m.add_class::<job_options::KeepJobs>()?;
    m.add_class::<job_options::Dedup>()?;
    m.add_class::<job_options::JobOptions>()?;
    m.add_class::<job_record::JobRecord>()?;
    m.add_class::<job_queue::JobQueueCore>()?;
    m.add_class::<redis_queue::RedisQueueCore>()?;
    m.add_class::<redis_lane_store::RedisLaneStore>()?;
    m.add_class::<flows::MemoryGroupCore>()?;
    m.add_class::<scheduler_record::SchedulerRecord>()?;
    m.add_class::<ready::Ready>()?;
    m.add_class::<hub::Hub>()?;
    m.add_class::<interrupt::Interrupt>()?;
    m.add_class::<worker_book::WorkerBook>()?;
    m.add_class::<worker_book::WorkerTurn>()?;
    m.add_class::<worker_book::OutcomeBatch>()?;
    Ok(())
}
