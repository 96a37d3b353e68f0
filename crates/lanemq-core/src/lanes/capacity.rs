//! The lanes' capacity: each lane's slots (`max_concurrency`, with `min_concurrency` reserved
//! under a global cap), the manager's global slots and each lane's rate tokens. The dispatch
//! decision (`dispatch`) asks it whether a lane may start a command; the dispatcher takes a slot
//! when one starts and gives it back when it ends. `LocalCapacity` is one process's counters;
//! a capacity shared by processes (leased permits kept by the backend, issue "Lanes across
//! processes and hosts") answers the same questions.

use super::config::LaneConfig;
use super::rate::TokenBucket;
use super::Micros;

/// What the dispatch decision needs to know of the slots and tokens.
pub trait Capacity {
    /// Whether lane `lane` may start one more command at `now`: a slot of its own, a global
    /// slot that no other lane's unfilled `min_concurrency` reserves, and a rate token.
    fn may_start(&mut self, lane: usize, now: Micros) -> bool;
    /// A command of `lane` starts: it holds a slot and spends a rate token.
    fn take(&mut self, lane: usize, now: Micros);
    /// A command of `lane` ended (or was cancelled) while it held a slot.
    fn give_back(&mut self, lane: usize);
    /// The commands of `lane` holding a slot.
    fn active(&self, lane: usize) -> u32;
    /// How long until `lane`, which has a free slot of its own and work, gets a rate token
    /// (None: it has no rate limit).
    fn token_wait(&mut self, lane: usize, now: Micros) -> Option<Micros>;
}

#[derive(Debug)]
struct LaneSlots {
    max: u32,
    min: u32,
    active: u32,
    bucket: Option<TokenBucket>,
}

impl LaneSlots {
    fn unfilled_reservation(&self) -> u32 {
        self.min.saturating_sub(self.active)
    }
}

/// The slots and tokens of one process: counters, as the lanes had them.
#[derive(Debug)]
pub struct LocalCapacity {
    lanes: Vec<LaneSlots>,
    global_cap: Option<u32>,
    total_active: u32,
}

impl LocalCapacity {
    pub fn new(lanes: &[LaneConfig], global_cap: Option<u32>, now: Micros) -> Self {
        let lanes = lanes
            .iter()
            .map(|config| LaneSlots {
                max: config.max_concurrency,
                min: config.min_concurrency,
                active: 0,
                bucket: config.rate_limit.as_ref().map(|r| TokenBucket::new(r, now)),
            })
            .collect();
        Self {
            lanes,
            global_cap,
            total_active: 0,
        }
    }

    /// The counters as a store shared by processes loaded them: `active[lane]` commands
    /// holding a slot of each lane, and each lane's rate bucket as saved (None: a fresh one).
    pub fn loaded(
        lanes: &[LaneConfig],
        global_cap: Option<u32>,
        active: &[u32],
        mut buckets: Vec<Option<TokenBucket>>,
        now: Micros,
    ) -> Self {
        let mut capacity = Self::new(lanes, global_cap, now);
        buckets.resize_with(capacity.lanes.len(), || None);
        for ((slots, &count), bucket) in capacity.lanes.iter_mut().zip(active).zip(buckets) {
            slots.active = count;
            if bucket.is_some() {
                slots.bucket = bucket;
            }
        }
        capacity.total_active = capacity.lanes.iter().map(|l| l.active).sum();
        capacity
    }

    /// How many commands can run at once: the global cap, or the sum of the lanes' maxima.
    pub fn total(&self) -> u32 {
        let sum = self.lanes.iter().map(|l| l.max).sum();
        self.global_cap.map_or(sum, |cap| cap.min(sum))
    }
}

impl Capacity for LocalCapacity {
    fn may_start(&mut self, lane: usize, now: Micros) -> bool {
        let slots = &self.lanes[lane];
        if slots.active >= slots.max {
            return false;
        }
        if let Some(cap) = self.global_cap {
            let free = cap.saturating_sub(self.total_active);
            let reserved_by_others: u32 = self
                .lanes
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != lane)
                .map(|(_, l)| l.unfilled_reservation())
                .sum();
            if free <= reserved_by_others {
                return false;
            }
        }
        self.lanes[lane]
            .bucket
            .as_mut()
            .is_none_or(|bucket| bucket.available(now))
    }

    fn take(&mut self, lane: usize, now: Micros) {
        let slots = &mut self.lanes[lane];
        slots.active += 1;
        if let Some(bucket) = slots.bucket.as_mut() {
            bucket.take(now);
        }
        self.total_active += 1;
    }

    fn give_back(&mut self, lane: usize) {
        self.lanes[lane].active -= 1;
        self.total_active -= 1;
    }

    fn active(&self, lane: usize) -> u32 {
        self.lanes[lane].active
    }

    fn token_wait(&mut self, lane: usize, now: Micros) -> Option<Micros> {
        let slots = &mut self.lanes[lane];
        if slots.active >= slots.max {
            return None;
        }
        slots.bucket.as_mut().map(|bucket| bucket.wait_time(now))
    }
}
