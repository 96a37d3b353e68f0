//! The shared group decisions (`lifecycle::groups`) on the memory store, under random
//! operations: the turns hold exactly the claimable groups after every step, and a claim
//! gives groups turns round robin (the conformance suite holds both backends to the cases).

use crate::jobs::contract::{GroupLimits, NewJob};
use crate::jobs::lifecycle::{self, group_admin, GroupStorage, UNGROUPED};
use crate::jobs::model::{Job, Millis};
use crate::jobs::options::{JobOptions, StoreConfig};
use crate::jobs::MemoryStore;

const T: Millis = 1_700_000_000_000;
const GROUPS: [&str; 5] = ["a", "b", "c", "d", "e"];

/// A small deterministic generator (xorshift), so a failure replays.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn add(s: &mut MemoryStore, group: Option<&str>, priority: u32) {
    let options = JobOptions {
        group: group.map(str::to_owned),
        priority,
        ..JobOptions::default()
    };
    let job = NewJob {
        name: group.unwrap_or("none").into(),
        data: "null".into(),
        options,
    };
    lifecycle::add(s, job, 1 << 20, T).unwrap();
}

/// Every group is in the turns exactly when it is claimable (the ungrouped jobs' entry may
/// lag: it is synced at claims and before a group joins).
fn check_turns(s: &mut MemoryStore) {
    for group in GROUPS {
        let state = s.group_state(group).unwrap();
        assert_eq!(
            state.in_turns,
            state.claimable(),
            "group {group}: {state:?}"
        );
    }
}

/// Between two jobs of one group in a claim, no other group comes twice.
fn check_round_robin(claimed: &[Job]) {
    let groups: Vec<&str> = claimed
        .iter()
        .map(|j| j.options.group.as_deref().unwrap_or(UNGROUPED))
        .collect();
    for (i, group) in groups.iter().enumerate() {
        let Some(next) = groups[i + 1..].iter().position(|g| g == group) else {
            continue;
        };
        let between = &groups[i + 1..i + 1 + next];
        let mut seen: Vec<&&str> = between.iter().collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), between.len(), "{groups:?}");
    }
}

#[test]
fn the_turns_hold_exactly_the_claimable_groups_under_random_operations() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    group_admin::set_limits(
        &mut s,
        "a",
        GroupLimits {
            concurrency: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    group_admin::set_limits(
        &mut s,
        "b",
        GroupLimits {
            rate: Some((2, 50)),
            ..Default::default()
        },
    )
    .unwrap();
    let mut active: Vec<Job> = Vec::new();
    let mut now = T;
    for _ in 0..3000 {
        now += dice.roll(10) as Millis;
        match dice.roll(6) {
            0 | 1 => {
                let group = GROUPS.get(dice.roll(GROUPS.len() + 1)).copied();
                add(&mut s, group, dice.roll(3) as u32);
            }
            2 => {
                let claimed = lifecycle::claim(&mut s, "w", 60_000, 1 + dice.roll(4), now).unwrap();
                active.extend(claimed);
            }
            3 if !active.is_empty() => {
                let job = active.swap_remove(dice.roll(active.len()));
                let token = job.lock.as_ref().unwrap().token.clone();
                lifecycle::complete(&mut s, &job.id, &token, "null", now).unwrap();
            }
            4 => {
                let group = GROUPS[dice.roll(GROUPS.len())];
                group_admin::set_paused(&mut s, group, dice.roll(2) == 0).unwrap();
            }
            _ => {
                let group = GROUPS[2 + dice.roll(3)];
                let concurrency = [None, Some(1), Some(3)][dice.roll(3)];
                let limits = GroupLimits {
                    concurrency,
                    ..Default::default()
                };
                group_admin::set_limits(&mut s, group, limits).unwrap();
            }
        }
        check_turns(&mut s);
    }
}

#[test]
fn a_claim_gives_groups_turns_round_robin() {
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    for _ in 0..50 {
        let mut s = MemoryStore::new(StoreConfig::default());
        for _ in 0..dice.roll(40) {
            let group = GROUPS.get(dice.roll(GROUPS.len() + 1)).copied();
            add(&mut s, group, dice.roll(3) as u32);
        }
        let claimed = lifecycle::claim(&mut s, "w", 60_000, 100, T).unwrap();
        check_round_robin(&claimed);
        assert_eq!(s.count(crate::jobs::model::JobState::Waiting), 0);
    }
}
