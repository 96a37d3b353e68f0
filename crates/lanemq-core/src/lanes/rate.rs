//! A token bucket per lane. Tokens are taken only when a command actually starts, so a lane with
//! no work or no free slot never wastes its budget.

use super::{Micros, RateLimit};

#[derive(Debug, Clone)]
pub struct TokenBucket {
    capacity: f64,
    /// Tokens per microsecond.
    refill: f64,
    tokens: f64,
    updated: Micros,
}

impl TokenBucket {
    pub fn new(limit: &RateLimit, now: Micros) -> Self {
        let capacity = f64::from(limit.permits);
        Self {
            capacity,
            refill: capacity / limit.per as f64,
            tokens: capacity,
            updated: now,
        }
    }

    fn refresh(&mut self, now: Micros) {
        if now > self.updated {
            let gained = (now - self.updated) as f64 * self.refill;
            self.tokens = (self.tokens + gained).min(self.capacity);
            self.updated = now;
        }
    }

    pub fn available(&mut self, now: Micros) -> bool {
        self.refresh(now);
        self.tokens >= 1.0 - 1e-9
    }

    pub fn take(&mut self, now: Micros) {
        self.refresh(now);
        self.tokens -= 1.0;
    }

    /// Microseconds until one token is available (0 if one is).
    pub fn wait_time(&mut self, now: Micros) -> Micros {
        self.refresh(now);
        if self.tokens >= 1.0 - 1e-9 {
            0
        } else {
            ((1.0 - self.tokens) / self.refill).ceil() as Micros
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_second_spaces_starts() {
        let mut bucket = TokenBucket::new(
            &RateLimit {
                permits: 1,
                per: 1_000_000,
            },
            0,
        );
        assert!(bucket.available(0));
        bucket.take(0);
        assert!(!bucket.available(10));
        assert_eq!(bucket.wait_time(0), 1_000_000);
        assert!(bucket.available(1_000_000));
    }
}
