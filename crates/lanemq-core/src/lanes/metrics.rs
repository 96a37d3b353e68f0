//! Per-lane counters and latency percentiles. Latencies are kept in a fixed ring of recent
//! samples, so recording is O(1) and memory is bounded; percentiles sort a copy on demand.

use super::Micros;

const WINDOW: usize = 4096;

#[derive(Debug, Clone, Default)]
pub struct Samples {
    ring: Vec<Micros>,
    next: usize,
}

impl Samples {
    pub fn record(&mut self, value: Micros) {
        if self.ring.len() < WINDOW {
            self.ring.push(value);
        } else {
            self.ring[self.next] = value;
        }
        self.next = (self.next + 1) % WINDOW;
    }

    pub fn percentiles(&self) -> Percentiles {
        let mut sorted = self.ring.clone();
        sorted.sort_unstable();
        let pick = |q: f64| -> Micros {
            if sorted.is_empty() {
                return 0;
            }
            // Nearest-rank: the smallest sample with at least q of the samples at or below it.
            let rank = (q * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        Percentiles {
            count: sorted.len(),
            p50: pick(0.50),
            p90: pick(0.90),
            p95: pick(0.95),
            p99: pick(0.99),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    /// How many samples the percentiles were computed from (at most the window).
    pub count: usize,
    pub p50: Micros,
    pub p90: Micros,
    pub p95: Micros,
    pub p99: Micros,
}

#[derive(Debug, Clone, Default)]
pub struct LaneMetrics {
    pub submitted: u64,
    pub started: u64,
    pub completed: u64,
    pub failed: u64,
    pub timed_out: u64,
    pub retried: u64,
    pub dead_lettered: u64,
    pub cancelled: u64,
    /// Start to finish of each attempt.
    pub latency: Samples,
    /// Submit (or retry due time) to start.
    pub queue_wait: Samples,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples = Samples::default();
        for value in 1..=100 {
            samples.record(value);
        }
        let p = samples.percentiles();
        assert_eq!((p.count, p.p50, p.p90, p.p95, p.p99), (100, 50, 90, 95, 99));
    }

    #[test]
    fn window_keeps_recent_samples() {
        let mut samples = Samples::default();
        for _ in 0..WINDOW {
            samples.record(1);
        }
        for _ in 0..WINDOW {
            samples.record(7);
        }
        assert_eq!(samples.percentiles().p50, 7);
    }
}
