//! Lane configuration and its validation. Every error names the field and the value.

use crate::error::{CoreError, CoreResult};

use super::Micros;

/// How a failed command is retried. `max_retries` counts retries, so a command runs at most
/// `max_retries + 1` times.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub initial_delay: Micros,
    pub multiplier: f64,
    pub max_delay: Micros,
}

impl RetryPolicy {
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            initial_delay: 0,
            multiplier: 1.0,
            max_delay: 0,
        }
    }

    /// 100 ms, then doubling, capped at 30 s.
    pub fn exponential(max_retries: u32) -> Self {
        Self {
            max_retries,
            initial_delay: 100_000,
            multiplier: 2.0,
            max_delay: 30_000_000,
        }
    }

    pub fn fixed(max_retries: u32, delay: Micros) -> Self {
        Self {
            max_retries,
            initial_delay: delay,
            multiplier: 1.0,
            max_delay: delay,
        }
    }

    /// The wait before retry number `retry` (1-based).
    pub fn delay_for(&self, retry: u32) -> Micros {
        let factor = self
            .multiplier
            .powi(retry.saturating_sub(1).min(1_000) as i32);
        let delay = (self.initial_delay as f64 * factor).min(self.max_delay as f64);
        delay as Micros
    }

    fn validate(&self, lane: &str) -> CoreResult<()> {
        if !self.multiplier.is_finite() || self.multiplier < 1.0 {
            return Err(invalid(lane, "retry.multiplier", self.multiplier));
        }
        if self.max_delay < self.initial_delay {
            return Err(CoreError::InvalidConfig(format!(
                "lane {lane:?}: retry.max_delay ({} us) is below retry.initial_delay ({} us)",
                self.max_delay, self.initial_delay
            )));
        }
        Ok(())
    }
}

/// A token bucket: `permits` tokens refilled evenly over `per`. Bursts up to `permits`.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimit {
    pub permits: u32,
    pub per: Micros,
}

impl RateLimit {
    fn validate(&self, lane: &str) -> CoreResult<()> {
        if self.permits == 0 {
            return Err(invalid(lane, "rate_limit.permits", self.permits));
        }
        if self.per == 0 {
            return Err(invalid(lane, "rate_limit.per", self.per));
        }
        Ok(())
    }
}

/// Lowers a lane's effective priority number as its oldest pending command ages towards
/// `deadline`: once the remaining fraction of the deadline drops to `steps[i].0` or below, the
/// priority is lowered by `steps[i].1` (the largest matching boost applies).
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityBoost {
    pub deadline: Micros,
    pub steps: Vec<(f64, u32)>,
}

impl PriorityBoost {
    /// Boost by 1, 2, 3 when 75 %, 50 %, 25 % of the deadline remains.
    pub fn standard(deadline: Micros) -> Self {
        Self {
            deadline,
            steps: vec![(0.75, 1), (0.50, 2), (0.25, 3)],
        }
    }

    /// Boost earlier and harder: by 1, 2, 3, 5 at 90 %, 75 %, 50 %, 25 % remaining.
    pub fn aggressive(deadline: Micros) -> Self {
        Self {
            deadline,
            steps: vec![(0.90, 1), (0.75, 2), (0.50, 3), (0.25, 5)],
        }
    }

    /// The boost for a command that has waited `waited`.
    pub fn boost_for(&self, waited: Micros) -> u32 {
        let remaining = 1.0 - (waited as f64 / self.deadline as f64);
        self.steps
            .iter()
            .filter(|(threshold, _)| remaining <= *threshold)
            .map(|(_, boost)| *boost)
            .max()
            .unwrap_or(0)
    }

    fn validate(&self, lane: &str) -> CoreResult<()> {
        if self.deadline == 0 {
            return Err(invalid(lane, "priority_boost.deadline", self.deadline));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LaneConfig {
    pub lane_id: String,
    pub priority: u32,
    pub min_concurrency: u32,
    pub max_concurrency: u32,
    pub timeout: Option<Micros>,
    pub retry: RetryPolicy,
    pub rate_limit: Option<RateLimit>,
    pub priority_boost: Option<PriorityBoost>,
    pub pressure_threshold: Option<u32>,
}

impl LaneConfig {
    pub fn new(lane_id: &str, priority: u32, max_concurrency: u32) -> Self {
        Self {
            lane_id: lane_id.to_owned(),
            priority,
            min_concurrency: 1,
            max_concurrency,
            timeout: None,
            retry: RetryPolicy::none(),
            rate_limit: None,
            priority_boost: None,
            pressure_threshold: None,
        }
    }

    pub fn validate(&self) -> CoreResult<()> {
        let lane = self.lane_id.as_str();
        if lane.trim().is_empty() {
            return Err(CoreError::InvalidConfig(format!(
                "lane_id must not be empty (got {lane:?})"
            )));
        }
        if self.max_concurrency < 1 {
            return Err(invalid(lane, "max_concurrency", self.max_concurrency));
        }
        if self.max_concurrency < self.min_concurrency {
            return Err(CoreError::InvalidConfig(format!(
                "lane {lane:?}: max_concurrency ({}) is below min_concurrency ({})",
                self.max_concurrency, self.min_concurrency
            )));
        }
        if self.timeout == Some(0) {
            return Err(invalid(lane, "timeout", 0));
        }
        if self.pressure_threshold == Some(0) {
            return Err(invalid(lane, "pressure_threshold", 0));
        }
        self.retry.validate(lane)?;
        if let Some(rate) = &self.rate_limit {
            rate.validate(lane)?;
        }
        if let Some(boost) = &self.priority_boost {
            boost.validate(lane)?;
        }
        Ok(())
    }
}

fn invalid(lane: &str, field: &str, value: impl std::fmt::Display) -> CoreError {
    CoreError::InvalidConfig(format!("lane {lane:?}: invalid {field}: {value}"))
}

/// The default lanes: (id, priority, max concurrency), all with min concurrency 1.
pub const DEFAULT_LANES: [(&str, u32, u32); 6] = [
    ("system", 0, 5),
    ("control", 1, 3),
    ("query", 2, 10),
    ("session", 3, 5),
    ("skill", 4, 3),
    ("prompt", 5, 2),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_and_caps() {
        let policy = RetryPolicy::exponential(20);
        assert_eq!(policy.delay_for(1), 100_000);
        assert_eq!(policy.delay_for(2), 200_000);
        assert_eq!(policy.delay_for(3), 400_000);
        assert_eq!(policy.delay_for(20), 30_000_000);
    }

    #[test]
    fn standard_boost_steps() {
        let boost = PriorityBoost::standard(1_000);
        assert_eq!(boost.boost_for(0), 0);
        assert_eq!(boost.boost_for(250), 1);
        assert_eq!(boost.boost_for(500), 2);
        assert_eq!(boost.boost_for(900), 3);
    }

    #[test]
    fn validation_names_the_field() {
        let mut config = LaneConfig::new("a", 0, 1);
        config.min_concurrency = 2;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("max_concurrency (1)") && err.contains("min_concurrency (2)"));
        assert!(LaneConfig::new("", 0, 1).validate().is_err());
        assert!(LaneConfig::new("a", 0, 0)
            .validate()
            .unwrap_err()
            .to_string()
            .contains("max_concurrency"));
    }
}

/// Queue-depth and latency thresholds for alerts. A threshold of `None` is not watched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlertThresholds {
    pub queue_depth_warning: Option<u32>,
    pub queue_depth_critical: Option<u32>,
    pub latency_warning: Option<Micros>,
    pub latency_critical: Option<Micros>,
}

impl AlertThresholds {
    pub fn validate(&self) -> CoreResult<()> {
        if let (Some(w), Some(c)) = (self.queue_depth_warning, self.queue_depth_critical) {
            if c < w {
                return Err(CoreError::InvalidConfig(format!(
                    "alerts: queue_depth_critical ({c}) is below queue_depth_warning ({w})"
                )));
            }
        }
        if let (Some(w), Some(c)) = (self.latency_warning, self.latency_critical) {
            if c < w {
                return Err(CoreError::InvalidConfig(format!(
                    "alerts: latency_critical ({c} us) is below latency_warning ({w} us)"
                )));
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
