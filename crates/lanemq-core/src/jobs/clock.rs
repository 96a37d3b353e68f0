//! Time as jobs count it: `Millis` and the wall clock. It sits below every other job module
//! (options count their delays in it, the model its timestamps), so it uses none of them.

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = u64;

/// The wall clock, in `Millis` (0 before 1970).
pub fn wall_clock_ms() -> Millis {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as Millis)
}
