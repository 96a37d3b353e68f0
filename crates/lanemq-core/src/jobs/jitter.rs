//! The one random source of the job side: backoff jitter and lock tokens, on every backend (the
//! Redis backend draws here too and passes the value to its script, which must be
//! deterministic). Not for secrets: it is std's randomly keyed SipHash over a counter.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

static KEY: LazyLock<RandomState> = LazyLock::new(RandomState::new);
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// 64 bits that differ on every call.
pub fn random_bits() -> u64 {
    random_bits_and_count().0
}

/// `random_bits`, with the count it was drawn from: never the same twice in a process, so
/// the two together make a unique token.
pub fn random_bits_and_count() -> (u64, u64) {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = KEY.build_hasher();
    hasher.write_u64(count);
    (hasher.finish(), count)
}

/// A value in `0..1` (53 bits), for the backoff jitter.
pub fn random_unit() -> f64 {
    (random_bits() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_in_range_and_differ() {
        let draws: Vec<f64> = (0..1000).map(|_| random_unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let mut sorted = draws.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.dedup();
        assert_eq!(sorted.len(), draws.len());
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((0.4..0.6).contains(&mean), "mean {mean}");
    }
}
