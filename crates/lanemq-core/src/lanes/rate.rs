//! A token bucket per lane. Tokens are taken only when a command actually starts, so a lane with
//! no work or no free slot never wastes its budget.
//!
//! Integer arithmetic, so spacing is exact: the bucket counts in units where one microsecond
//! refills `permits` units and one start costs `per` units (a full bucket holds `permits` starts).

use super::{Micros, RateLimit};

#[derive(Debug, Clone)]
pub struct TokenBucket {
    permits: u128,
    cost: u128,
    capacity: u128,
    units: u128,
    updated: Micros,
}

impl TokenBucket {
    pub fn new(limit: &RateLimit, now: Micros) -> Self {
        let permits = u128::from(limit.permits);
        let cost = u128::from(limit.per);
        Self {
            permits,
            cost,
            capacity: permits * cost,
            units: permits * cost,
            updated: now,
        }
    }

    fn refresh(&mut self, now: Micros) {
        if now > self.updated {
            let gained = u128::from(now - self.updated) * self.permits;
            self.units = (self.units + gained).min(self.capacity);
            self.updated = now;
        }
    }

    /// A bucket as it was saved (`units` and `updated` from `saved`): how a store shared by
    /// processes keeps a lane's tokens between claims.
    pub fn restored(limit: &RateLimit, units: u128, updated: Micros) -> Self {
        let mut bucket = Self::new(limit, updated);
        bucket.units = units.min(bucket.capacity);
        bucket
    }

    /// The bucket's state to save: (units, updated).
    pub fn saved(&self) -> (u128, Micros) {
        (self.units, self.updated)
    }

    pub fn available(&mut self, now: Micros) -> bool {
        self.refresh(now);
        self.units >= self.cost
    }

    pub fn take(&mut self, now: Micros) {
        self.refresh(now);
        self.units = self.units.saturating_sub(self.cost);
    }

    /// Microseconds until one token is available (0 if one is).
    pub fn wait_time(&mut self, now: Micros) -> Micros {
        self.refresh(now);
        let missing = self.cost.saturating_sub(self.units);
        missing.div_ceil(self.permits) as Micros
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_second_spaces_starts() {
        let limit = RateLimit {
            permits: 1,
            per: 1_000_000,
        };
        let mut bucket = TokenBucket::new(&limit, 0);
        assert!(bucket.available(0));
        bucket.take(0);
        assert!(!bucket.available(10));
        assert_eq!(bucket.wait_time(10), 999_990);
        assert!(!bucket.available(999_999));
        assert!(bucket.available(1_000_000));
    }

    #[test]
    fn bursts_up_to_permits() {
        let limit = RateLimit {
            permits: 3,
            per: 1_000_000,
        };
        let mut bucket = TokenBucket::new(&limit, 0);
        for _ in 0..3 {
            assert!(bucket.available(0));
            bucket.take(0);
        }
        assert!(!bucket.available(0));
        assert_eq!(bucket.wait_time(0), 333_334);
    }
}
