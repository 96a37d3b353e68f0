//! The fixed-interval rule: a grid of slots `prev + k * every` anchored at the first run.

use std::num::NonZeroU64;

use crate::jobs::Millis;

/// The slot due after the run at `prev`, as seen at `now`.
///
/// It is `prev + every` when that is not yet past, so a job that runs long (but less than
/// `every`) does not push the schedule back. When it is past (the job or the process was away for
/// longer than an interval), the missed slots are skipped, not replayed: the answer is the first
/// slot `prev + k * every` at or after `now`, which keeps the grid's phase.
///
/// `None` when the slot is not representable in a `u64` (half a billion years out), which ends the
/// schedule instead of wrapping around to the past.
pub(super) fn next_slot(prev: Millis, every: NonZeroU64, now: Millis) -> Option<Millis> {
    let every = every.get();
    let first = prev.checked_add(every)?;
    if first >= now {
        return Some(first);
    }
    // now > prev + every here, so this is at least 2 and the slot lands at or after now.
    let slots = (now - prev).div_ceil(every);
    prev.checked_add(slots.checked_mul(every)?)
}
