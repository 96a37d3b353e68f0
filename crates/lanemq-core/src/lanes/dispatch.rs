//! The dispatch decision, pure: of the lanes with work whose capacity lets them start a
//! command, the one with the lowest effective priority number (its priority less the boost its
//! oldest command has earned by waiting), then the lower configured priority, then the first.
//! FIFO within a lane is the caller's (it starts the lane's oldest command).

use super::capacity::Capacity;
use super::config::LaneConfig;
use super::Micros;

/// A lane with work, as the decision sees it.
pub struct Candidate<'a> {
    pub lane: usize,
    pub config: &'a LaneConfig,
    /// How long the lane's oldest pending command has waited.
    pub waited: Micros,
}

/// The lane to start a command from now, if any.
pub fn next_lane<'a, C: Capacity>(
    candidates: impl IntoIterator<Item = Candidate<'a>>,
    capacity: &mut C,
    now: Micros,
) -> Option<usize> {
    let mut best: Option<(u32, u32, usize)> = None;
    for candidate in candidates {
        if !capacity.may_start(candidate.lane, now) {
            continue;
        }
        let config = candidate.config;
        let boost = config
            .priority_boost
            .as_ref()
            .map_or(0, |boost| boost.boost_for(candidate.waited));
        let key = (
            config.priority.saturating_sub(boost),
            config.priority,
            candidate.lane,
        );
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    best.map(|(_, _, lane)| lane)
}
