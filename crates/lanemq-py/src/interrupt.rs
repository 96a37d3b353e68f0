//! `Interrupt`: stops a `JobQueueCore.wait_and_claim` that is still waiting, without cancelling
//! it. Cancelling the awaitable could drop jobs its claim had just taken (they would sit locked
//! until their lease ran out); an interrupted call instead resolves with whatever it claimed,
//! nothing if it was still waiting.

use std::sync::Arc;

use pyo3::prelude::*;
use tokio::sync::Notify;

#[pyclass(frozen, module = "lanemq._core")]
pub struct Interrupt {
    notify: Arc<Notify>,
}

impl Interrupt {
    /// A new interrupt, and the signal the interrupted future listens to.
    pub fn new() -> (Self, Arc<Notify>) {
        let notify = Arc::new(Notify::new());
        (
            Self {
                notify: Arc::clone(&notify),
            },
            notify,
        )
    }
}

#[pymethods]
impl Interrupt {
    /// Ends the wait if it is still going on (a later call does nothing more).
    fn interrupt(&self) {
        // notify_one keeps a permit when nobody listens yet, so an early interrupt still counts.
        self.notify.notify_one();
    }
}
