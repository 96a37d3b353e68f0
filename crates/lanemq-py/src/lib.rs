//! `lanemq._core`: the Python face of the Rust core. Each exposed class lives in its own file;
//! the typed public API in `python/lanemq/` wraps these.

use pyo3::prelude::*;

mod bridge;
mod dead_letter;
mod durable_journal;
mod errors;
mod flows;
mod hub;
mod interrupt;
mod job_options;
mod job_queue;
mod job_record;
mod lane_config;
mod lane_scheduler;
mod ready;
mod scheduler_record;
mod wire_link;
mod worker_book;

/// The runtime that drives backend futures: one worker thread. A call's round trip crosses
/// threads twice (the loop's thread hands the request to the runtime, the runtime hands the
/// reply back through the hub), and on a small machine each wake-up of a sleeping thread costs
/// more than the work; with more workers, an unparked worker also wakes its siblings to look
/// for work. Measured on 2 cores (`benches/compare.py`, a worker at concurrency 100 and an
/// idle-worker latency run): one worker processed ~15% more jobs/s and cut latency ~10%. The
/// work on it is I/O and encoding; blocking work goes to `spawn_blocking`'s pool.
fn init_runtime() {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder
        .worker_threads(1)
        .thread_name("lanemq-runtime")
        .enable_all();
    pyo3_async_runtimes::tokio::init(builder);
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    init_runtime();
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
    m.add_class::<lane_scheduler::LaneScheduler>()?;
    m.add_class::<durable_journal::DurableJournal>()?;
    m.add_class::<job_options::Backoff>()?;
    m.add_class::<job_options::KeepJobs>()?;
    m.add_class::<job_options::Dedup>()?;
    m.add_class::<job_options::JobOptions>()?;
    m.add_class::<job_record::JobRecord>()?;
    m.add_class::<job_queue::JobQueueCore>()?;
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
