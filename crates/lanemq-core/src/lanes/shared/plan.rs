//! The shared dispatch plan, pure: which pending commands the claiming process takes, decided
//! as if one in-process dispatcher (`dispatch::next_lane` over `LocalCapacity`) ran for every
//! process. A store loads the lanes' pending commands, active counts and rate buckets, marks
//! each command by who can run it, and applies the plan's claims in one transaction.

use crate::lanes::capacity::{Capacity, LocalCapacity};
use crate::lanes::dispatch::{next_lane, Candidate};
use crate::lanes::{LaneConfig, Micros};

/// Who can run a pending command, seen from the claiming process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// This process can run it. `idle_other`: another live process that registered its name
    /// is idle, so by turns this process leaves it to that one once it holds a command of the
    /// lane (a callable is never left: only its owner runs it).
    Me { idle_other: bool },
    /// Only another live process can run it: it is owed to that one.
    Other,
    /// No live process can run it: it is passed over and blocks nothing.
    Nobody,
}

/// A pending command as the plan sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: i64,
    /// How long it has waited in its lane (its lane's boost comes from its oldest's).
    pub waited: Micros,
    pub runner: Runner,
}

/// A lane as the plan sees it: its configuration, its pending commands (FIFO) and how many of
/// its commands this process holds already (for turns).
#[derive(Debug, Clone)]
pub struct PlanLane {
    pub config: LaneConfig,
    pub pending: Vec<Pending>,
    pub held_by_me: u32,
}

/// What the plan decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    /// The commands this process claims, as (lane index, command id), in start order.
    pub claimed: Vec<(usize, i64)>,
    /// How long until a lane with a pending command this process can run, held back only by
    /// its rate limit, gets a token (None: none is).
    pub token_wait: Option<Micros>,
}

/// Decides the claims of one process at most `max_n`. `capacity` holds the lanes' loaded
/// counters (active commands and rate buckets across every process); the plan takes slots and
/// tokens in it for owed commands too, so the caller must save only the claimed commands'
/// tokens (`Plan::claimed`), not the capacity's buckets.
pub fn plan(
    mut lanes: Vec<PlanLane>,
    capacity: &mut LocalCapacity,
    max_n: usize,
    now: Micros,
) -> Plan {
    // Nobody's commands block nothing: they are not candidates at all.
    for lane in &mut lanes {
        lane.pending.retain(|p| p.runner != Runner::Nobody);
        // Oldest last, so a lane's next command is popped from the end.
        lane.pending.reverse();
    }
    let mut claimed = Vec::new();
    while claimed.len() < max_n {
        let candidates = lanes.iter().enumerate().filter_map(|(index, lane)| {
            lane.pending.last().map(|oldest| Candidate {
                lane: index,
                config: &lane.config,
                waited: oldest.waited,
            })
        });
        let Some(index) = next_lane(candidates, capacity, now) else {
            break;
        };
        let lane = &mut lanes[index];
        let command = lane
            .pending
            .pop()
            .expect("a candidate has a pending command");
        capacity.take(index, now);
        let mine = match command.runner {
            Runner::Me { idle_other } => !idle_other || lane.held_by_me == 0,
            Runner::Other | Runner::Nobody => false,
        };
        if mine {
            lane.held_by_me += 1;
            claimed.push((index, command.id));
        }
    }
    let token_wait = lanes
        .iter()
        .enumerate()
        .filter(|(_, lane)| {
            lane.pending
                .iter()
                .any(|p| matches!(p.runner, Runner::Me { .. }))
        })
        .filter_map(|(index, _)| capacity.token_wait(index, now))
        .filter(|&wait| wait > 0)
        .min();
    Plan {
        claimed,
        token_wait,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
