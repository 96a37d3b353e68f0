//! Asking the CPU for a job's memory ahead of its use, without waiting for it: a claim reaches
//! jobs that are cold in the caches (see `claim_head`). A hint only: it changes no value, and
//! where there is no such instruction it does nothing.

use std::mem::size_of;

use crate::jobs::model::Job;

use super::store::MemoryStore;

const LINE: usize = 64;

/// The cache lines of `job` itself and the start of its payload (its reference count is
/// written when a claim clones the job).
pub(super) fn job(job: &Job) {
    let start = (job as *const Job).cast::<u8>();
    for offset in (0..size_of::<Job>()).step_by(LINE) {
        line(start.wrapping_add(offset));
    }
    line(job.data.as_ptr());
}

impl MemoryStore {
    /// Asks for job `id`'s memory (nothing if there is no such job).
    pub(super) fn prefetch(&self, id: &str) {
        if let Some(found) = self.jobs.get(id) {
            job(found);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn line(address: *const u8) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    // SAFETY: SSE is part of x86_64's baseline, and a prefetch reads nothing the program sees
    // and never faults, whatever the address.
    unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast()) };
}

#[cfg(not(target_arch = "x86_64"))]
fn line(_address: *const u8) {}
