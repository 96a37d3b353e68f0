//! The bookkeeping of a job worker (`JobWorker` in Python): the jobs it runs, the outcomes
//! waiting to be reported, the calls to the backend in flight and the slots their claims may
//! fill, whether the last claim came back short, the pause after a rate limit, the back-off
//! after errors, and the counters. Once per turn of the worker's loop, [`WorkerBook::turn`]
//! says what the loop does next: report, call (report and claim), or wait for work.
//!
//! Like the lanes' dispatcher it holds no user code, no I/O and no clock: `now` is given in
//! microseconds from an origin the caller chose. What it keeps of a job (the running task, the
//! job object, an outcome's values) is the caller's payload, which it never looks into.

mod book;
#[cfg(test)]
mod tests;
mod turn;

pub use book::{ClaimLimit, Counts, Outcome, WorkerBook};
pub use turn::{Call, Idle, Turn};
