//! The tokio runtime that drives backend futures (and the journal's blocking writes). Results
//! reach asyncio through the loop's hub (`ready`), never from a runtime thread.

use std::sync::OnceLock;

use tokio::runtime::Runtime;

/// The runtime, started on first use: one worker thread. A call's round trip crosses threads
/// twice (the loop's thread hands the request to the runtime, the runtime hands the reply back
/// through the hub), and on a small machine each wake-up of a sleeping thread costs more than
/// the work; with more workers, an unparked worker also wakes its siblings to look for work.
/// On 2 cores one worker gave more jobs/s and lower latency than more workers
/// (`benches/compare.py`; the figures are in benches/history/5-10.md). The work on it is I/O and
/// encoding; blocking work goes to `spawn_blocking`'s pool.
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("lanemq-runtime")
            .enable_all()
            .build()
            .expect("lanemq: could not start its tokio runtime")
    })
}
