//! The lanes as the store dispatches them (`LaneSpec`, checked before `setup` stores them) and
//! the records its operations return.

use lanemq_core::{CoreError, CoreResult};
use serde_json::{json, Value};

/// A lane as the store dispatches it (the contract's `LaneSpec` tuple).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneSpec {
    pub id: String,
    pub priority: u32,
    pub min_concurrency: u32,
    pub max_concurrency: u32,
    /// `(permits, per_ms)`: a bucket of `permits` tokens refilled evenly over `per_ms`.
    pub rate: Option<(u64, u64)>,
    /// `(deadline_ms, steps)`: the boost a command earns by waiting, as `PriorityBoost` has it
    /// (`(remaining fraction, boost)` pairs).
    pub boost: Option<(u64, Vec<(f64, u32)>)>,
}

fn invalid(lane: &str, field: &str, value: impl std::fmt::Display, why: &str) -> CoreError {
    CoreError::InvalidConfig(format!("invalid lane {lane:?} {field}: {value} ({why})"))
}

impl LaneSpec {
    /// Refuses a lane the dispatch could not use, naming the field and its value.
    pub fn check(&self) -> CoreResult<()> {
        let lane = self.id.as_str();
        if self.max_concurrency < 1 {
            return Err(invalid(lane, "max_concurrency", 0, "must be at least 1"));
        }
        if self.min_concurrency > self.max_concurrency {
            return Err(invalid(
                lane,
                "min_concurrency",
                self.min_concurrency,
                "must be at most max_concurrency",
            ));
        }
        if let Some((permits, per_ms)) = self.rate {
            if permits < 1 {
                return Err(invalid(lane, "rate_permits", permits, "must be at least 1"));
            }
            if per_ms < 1 {
                return Err(invalid(lane, "rate_per_ms", per_ms, "must be at least 1"));
            }
            // (the bucket counts permits * per_ms units in a Lua double: exact below 2^53)
            if permits
                .checked_mul(per_ms)
                .is_none_or(|units| units >= 1 << 53)
            {
                return Err(invalid(
                    lane,
                    "rate_permits * rate_per_ms",
                    format!("{permits} * {per_ms}"),
                    "must be below 2^53",
                ));
            }
        }
        if let Some((deadline, steps)) = &self.boost {
            if *deadline < 1 {
                return Err(invalid(
                    lane,
                    "boost_deadline_ms",
                    deadline,
                    "must be at least 1",
                ));
            }
            for (fraction, _) in steps {
                if !(0.0..=1.0).contains(fraction) {
                    return Err(invalid(lane, "boost step", fraction, "must be from 0 to 1"));
                }
            }
        }
        Ok(())
    }

    /// The lane as `lua/lanes-1.lua` reads it (fields it does not use are left out).
    pub(crate) fn to_json(&self) -> Value {
        let mut lane = json!({
            "id": self.id,
            "p": self.priority,
            "min": self.min_concurrency,
            "max": self.max_concurrency,
        });
        if let Some((permits, per_ms)) = self.rate {
            lane["rp"] = json!(permits);
            lane["rt"] = json!(per_ms);
        }
        if let Some((deadline, steps)) = &self.boost {
            lane["bd"] = json!(deadline);
            lane["bs"] = json!(steps
                .iter()
                .map(|(fraction, boost)| json!([fraction, boost]))
                .collect::<Vec<_>>());
        }
        lane
    }
}

/// A command `claim` gave this process: (id, lane index, name or None for a callable, payload,
/// attempt (1 at the first run), submitter).
pub type Claimed = (u64, u32, Option<String>, Option<String>, u64, String);

/// (id, ok, text): the result as JSON text, or the error as `"ClassName: message"`.
pub type Outcome = (u64, bool, String);

/// (command id, command type, lane id, error, attempts, failed at (unix seconds)).
pub type Letter = (u64, String, String, String, u64, f64);

#[cfg(test)]
mod tests {
    use super::*;

    fn lane() -> LaneSpec {
        LaneSpec {
            id: "email".to_owned(),
            priority: 1,
            min_concurrency: 0,
            max_concurrency: 2,
            rate: Some((3, 1_000)),
            boost: Some((500, vec![(0.5, 2)])),
        }
    }

    #[test]
    fn a_lane_reads_as_the_script_expects() {
        assert_eq!(
            lane().to_json(),
            json!({"id": "email", "p": 1, "min": 0, "max": 2, "rp": 3, "rt": 1000,
                "bd": 500, "bs": [[0.5, 2]]})
        );
    }

    #[test]
    fn bad_lanes_are_refused_naming_the_value() {
        let mut bad = lane();
        bad.min_concurrency = 3;
        let error = bad.check().unwrap_err().to_string();
        assert!(error.contains("\"email\" min_concurrency: 3"), "{error}");
        let mut bad = lane();
        bad.rate = Some((0, 10));
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("rate_permits: 0"));
        let mut bad = lane();
        bad.boost = Some((10, vec![(1.5, 1)]));
        assert!(bad
            .check()
            .unwrap_err()
            .to_string()
            .contains("boost step: 1.5"));
        assert!(lane().check().is_ok());
    }
}
