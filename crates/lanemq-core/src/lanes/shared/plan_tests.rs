//! The shared plan's decisions, driven with explicit lanes, counters and time.

use super::*;
use crate::lanes::capacity::LocalCapacity;
use crate::lanes::rate::TokenBucket;
use crate::lanes::{PriorityBoost, RateLimit};

const MINE: Runner = Runner::Me { idle_other: false };

fn lane(id: &str, priority: u32, min: u32, max: u32) -> LaneConfig {
    let mut config = LaneConfig::new(id, priority, max);
    config.min_concurrency = min;
    config
}

fn pending(ids: &[i64], runner: Runner) -> Vec<Pending> {
    ids.iter()
        .map(|&id| Pending {
            id,
            waited: 0,
            runner,
        })
        .collect()
}

fn plan_lane(config: LaneConfig, pending: Vec<Pending>) -> PlanLane {
    PlanLane {
        config,
        pending,
        held_by_me: 0,
    }
}

/// Plans over fresh counters (`active` per lane) with a global cap.
fn run(lanes: Vec<PlanLane>, active: &[u32], cap: Option<u32>, max_n: usize) -> Plan {
    let configs: Vec<LaneConfig> = lanes.iter().map(|l| l.config.clone()).collect();
    let mut capacity = LocalCapacity::loaded(&configs, cap, active, vec![], 0);
    plan(lanes, &mut capacity, max_n, 0)
}

fn ids(plan: &Plan) -> Vec<i64> {
    plan.claimed.iter().map(|&(_, id)| id).collect()
}

#[test]
fn strict_priority_then_fifo() {
    let lanes = vec![
        plan_lane(lane("low", 5, 0, 10), pending(&[1, 2], MINE)),
        plan_lane(lane("high", 1, 0, 10), pending(&[3, 4], MINE)),
    ];
    let plan = run(lanes, &[0, 0], None, 10);
    assert_eq!(ids(&plan), vec![3, 4, 1, 2]);
    assert_eq!(plan.claimed[0].0, 1);
}

#[test]
fn lane_cap_counts_every_process_and_max_n_stops() {
    let lanes = vec![plan_lane(lane("a", 0, 0, 3), pending(&[1, 2, 3], MINE))];
    assert_eq!(ids(&run(lanes.clone(), &[2], None, 10)), vec![1]);
    assert_eq!(ids(&run(lanes, &[0], None, 2)), vec![1, 2]);
}

#[test]
fn global_cap_keeps_the_other_lanes_min_reservations() {
    let lanes = vec![
        plan_lane(lane("hi", 0, 0, 10), pending(&[1, 2, 3, 4], MINE)),
        plan_lane(lane("lo", 1, 1, 10), vec![]),
    ];
    // Three global slots, one reserved by lo (idle, unfilled).
    assert_eq!(ids(&run(lanes, &[0, 0], Some(3), 10)), vec![1, 2]);
}

#[test]
fn owed_commands_hold_their_slot_against_lower_lanes() {
    let lanes = vec![
        plan_lane(lane("hi", 0, 0, 10), pending(&[1], Runner::Other)),
        plan_lane(lane("lo", 1, 0, 10), pending(&[2, 3], MINE)),
    ];
    // Two global slots: the owed hi command takes one, this process one of lo's.
    assert_eq!(ids(&run(lanes, &[0, 0], Some(2), 10)), vec![2]);
}

#[test]
fn nobodys_commands_block_nothing() {
    let lanes = vec![
        plan_lane(lane("hi", 0, 0, 10), pending(&[1, 2], Runner::Nobody)),
        plan_lane(lane("lo", 1, 0, 10), pending(&[3], MINE)),
    ];
    assert_eq!(ids(&run(lanes, &[0, 0], Some(1), 10)), vec![3]);
    // Within a lane too: the oldest command someone can run starts.
    let mut mixed = pending(&[1], Runner::Nobody);
    mixed.extend(pending(&[2], MINE));
    let lanes = vec![plan_lane(lane("a", 0, 0, 1), mixed)];
    assert_eq!(ids(&run(lanes, &[0], None, 10)), vec![2]);
}

#[test]
fn rate_tokens_limit_starts_and_give_the_wait() {
    let mut config = lane("a", 0, 0, 10);
    let limit = RateLimit {
        permits: 2,
        per: 1_000,
    };
    config.rate_limit = Some(limit.clone());
    let lanes = vec![plan_lane(config.clone(), pending(&[1, 2, 3], MINE))];
    let plan = run(lanes.clone(), &[0], None, 10);
    assert_eq!(ids(&plan), vec![1, 2]);
    // Two tokens per 1000 us: the next in 500 us.
    assert_eq!(plan.token_wait, Some(500));
    // A saved bucket with one token left.
    let bucket = TokenBucket::restored(&limit, 1_000, 0);
    let mut capacity = LocalCapacity::loaded(&[config], None, &[0], vec![Some(bucket)], 0);
    assert_eq!(ids(&plan_with(lanes, &mut capacity)), vec![1]);
}

fn plan_with(lanes: Vec<PlanLane>, capacity: &mut LocalCapacity) -> Plan {
    plan(lanes, capacity, 10, 0)
}

#[test]
fn boost_lifts_a_lane_whose_oldest_waited() {
    let mut boosted = lane("low", 3, 0, 10);
    boosted.priority_boost = Some(PriorityBoost::standard(1_000));
    let mut old = pending(&[1], MINE);
    old[0].waited = 900; // 10 % left: boost 3, effective priority 0
    let lanes = vec![
        plan_lane(lane("high", 1, 0, 10), pending(&[2], MINE)),
        plan_lane(boosted, old),
    ];
    assert_eq!(ids(&run(lanes, &[0, 0], Some(1), 10)), vec![1]);
}

#[test]
fn turns_leave_a_second_command_to_an_idle_process() {
    let turn = Runner::Me { idle_other: true };
    let lanes = vec![plan_lane(lane("a", 0, 0, 2), pending(&[1, 2], turn))];
    let plan = run(lanes, &[0], None, 10);
    assert_eq!(ids(&plan), vec![1]);
    // Holding one already, it leaves the lane's command to the idle one.
    let mut holding = plan_lane(lane("a", 0, 0, 2), pending(&[3], turn));
    holding.held_by_me = 1;
    assert_eq!(ids(&run(vec![holding], &[1], None, 10)), Vec::<i64>::new());
    // With no idle process, it takes both.
    let lanes = vec![plan_lane(lane("a", 0, 0, 2), pending(&[1, 2], MINE))];
    assert_eq!(ids(&run(lanes, &[0], None, 10)), vec![1, 2]);
}
