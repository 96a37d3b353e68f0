//! A lane as a shared store dispatches it (`LaneSpec`, the contract's tuple), checked and made
//! into the `LaneConfig` the in-process decision uses. The store's clock counts milliseconds;
//! the decision counts microseconds, so durations are scaled here, once.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};
use crate::lanes::{LaneConfig, Micros, PriorityBoost, RateLimit};

/// (lane_id, priority, min_concurrency, max_concurrency, rate_permits, rate_per_ms,
/// boost_deadline_ms, boost_steps), as the contract's `LaneSpec` has them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneSpec {
    pub lane_id: String,
    pub priority: i64,
    pub min_concurrency: i64,
    pub max_concurrency: i64,
    pub rate_permits: Option<i64>,
    pub rate_per_ms: Option<i64>,
    pub boost_deadline_ms: Option<i64>,
    pub boost_steps: Vec<(f64, i64)>,
}

/// Milliseconds of the store's clock as the decision's microseconds.
pub fn ms_to_micros(ms: u64) -> Micros {
    ms.saturating_mul(1_000)
}

fn bad(lane: &str, field: &str, value: impl std::fmt::Display) -> CoreError {
    CoreError::InvalidConfig(format!("lane {lane:?}: invalid {field}: {value}"))
}

/// `value` as a u32 that is at least `least`, or an error naming the field and the value.
fn counted(lane: &str, field: &str, value: i64, least: i64) -> CoreResult<u32> {
    if value < least {
        return Err(bad(lane, field, value));
    }
    u32::try_from(value).map_err(|_| bad(lane, field, value))
}

impl LaneSpec {
    /// The lane's configuration, or an error naming the bad field and its value.
    pub fn config(&self) -> CoreResult<LaneConfig> {
        let lane = self.lane_id.as_str();
        let mut config = LaneConfig::new(
            lane,
            counted(lane, "priority", self.priority, 0)?,
            counted(lane, "max_concurrency", self.max_concurrency, 1)?,
        );
        config.min_concurrency = counted(lane, "min_concurrency", self.min_concurrency, 0)?;
        config.rate_limit = match (self.rate_permits, self.rate_per_ms) {
            (None, None) => None,
            (Some(permits), Some(per_ms)) => Some(RateLimit {
                permits: counted(lane, "rate_permits", permits, 1)?,
                per: ms_to_micros(u64::from(counted(lane, "rate_per_ms", per_ms, 1)?)),
            }),
            (permits, per_ms) => {
                return Err(CoreError::InvalidConfig(format!(
                    "lane {lane:?}: rate_permits ({permits:?}) and rate_per_ms ({per_ms:?}) \
                     must both be set or both be None"
                )))
            }
        };
        if let Some(deadline) = self.boost_deadline_ms {
            let deadline = counted(lane, "boost_deadline_ms", deadline, 1)?;
            let mut steps = Vec::with_capacity(self.boost_steps.len());
            for &(fraction, boost) in &self.boost_steps {
                if !(0.0..=1.0).contains(&fraction) {
                    return Err(bad(lane, "boost step fraction", fraction));
                }
                steps.push((fraction, counted(lane, "boost step", boost, 0)?));
            }
            config.priority_boost = Some(PriorityBoost {
                deadline: ms_to_micros(u64::from(deadline)),
                steps,
            });
        }
        config.validate()?;
        Ok(config)
    }
}

/// The configurations of `specs`, checked (at least one lane, lane ids unique).
pub fn configs(specs: &[LaneSpec]) -> CoreResult<Vec<LaneConfig>> {
    if specs.is_empty() {
        return Err(CoreError::InvalidConfig(
            "lanes: at least one lane is needed (got none)".into(),
        ));
    }
    let mut configs: Vec<LaneConfig> = Vec::with_capacity(specs.len());
    for spec in specs {
        if configs.iter().any(|c| c.lane_id == spec.lane_id) {
            return Err(CoreError::InvalidConfig(format!(
                "lanes: lane id {:?} appears twice",
                spec.lane_id
            )));
        }
        configs.push(spec.config()?);
    }
    Ok(configs)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn spec(id: &str, priority: i64, min: i64, max: i64) -> LaneSpec {
        LaneSpec {
            lane_id: id.into(),
            priority,
            min_concurrency: min,
            max_concurrency: max,
            rate_permits: None,
            rate_per_ms: None,
            boost_deadline_ms: None,
            boost_steps: vec![],
        }
    }

    #[test]
    fn errors_name_the_field_and_value() {
        let err = spec("a", -1, 0, 1).config().unwrap_err().to_string();
        assert!(err.contains("priority") && err.contains("-1"), "{err}");
        let mut half_rate = spec("a", 0, 0, 1);
        half_rate.rate_permits = Some(2);
        let err = half_rate.config().unwrap_err().to_string();
        assert!(err.contains("rate_per_ms"), "{err}");
        let err = configs(&[spec("a", 0, 0, 1), spec("a", 1, 0, 1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"a\""), "{err}");
    }

    #[test]
    fn durations_become_microseconds() {
        let mut s = spec("a", 2, 1, 3);
        s.rate_permits = Some(5);
        s.rate_per_ms = Some(1_000);
        s.boost_deadline_ms = Some(10);
        s.boost_steps = vec![(0.5, 1)];
        let config = s.config().unwrap();
        assert_eq!(config.rate_limit.unwrap().per, 1_000_000);
        assert_eq!(config.priority_boost.unwrap().deadline, 10_000);
    }
}
