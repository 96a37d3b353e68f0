//! The lanes as the script reads them (`lanes_json`, from the contract's `LaneSpec`, checked by
//! the core as the local store checks them) and the records the store's operations return.

use lanemq_core::lanes::shared::{configs, LaneSpec};
use lanemq_core::{CoreError, CoreResult};
use serde_json::{json, Value};

/// `lanes` checked (as `LocalLaneStore::setup` checks them: the core's `configs`, and a global
/// cap that is at least 1 and at least the lanes' reservations) and written as the script
/// reads them: a JSON list of `{id, p, min, max, rp, rt, bd, bs}` (fields a lane does not use
/// left out).
pub(super) fn lanes_json(lanes: &[LaneSpec], global_max: Option<i64>) -> CoreResult<String> {
    let checked = configs(lanes)?;
    let reserved: i64 = checked.iter().map(|c| i64::from(c.min_concurrency)).sum();
    // As the in-process scheduler: a cap below the reservations could start nothing.
    if let Some(cap) = global_max.filter(|&cap| cap < reserved.max(1) || cap > i64::from(u32::MAX))
    {
        return Err(CoreError::InvalidConfig(format!(
            "invalid global_max: {cap} (must be at least 1 and at least the sum of the lanes' \
             min_concurrency ({reserved}))"
        )));
    }
    let mut written = Vec::with_capacity(lanes.len());
    for spec in lanes {
        let mut lane = json!({
            "id": spec.lane_id,
            "p": spec.priority,
            "min": spec.min_concurrency,
            "max": spec.max_concurrency,
        });
        if let (Some(permits), Some(per_ms)) = (spec.rate_permits, spec.rate_per_ms) {
            // (the bucket counts permits * per_ms units in a Lua double: exact below 2^53)
            if permits
                .checked_mul(per_ms)
                .is_none_or(|units| units >= 1 << 53)
            {
                return Err(CoreError::InvalidConfig(format!(
                    "lane {:?}: invalid rate_permits * rate_per_ms: {permits} * {per_ms} (must \
                     be below 2^53)",
                    spec.lane_id
                )));
            }
            lane["rp"] = json!(permits);
            lane["rt"] = json!(per_ms);
        }
        if let Some(deadline) = spec.boost_deadline_ms {
            lane["bd"] = json!(deadline);
            lane["bs"] = json!(spec
                .boost_steps
                .iter()
                .map(|(fraction, boost)| json!([fraction, boost]))
                .collect::<Vec<Value>>());
        }
        written.push(lane);
    }
    Ok(Value::Array(written).to_string())
}

/// A command `claim` gave this process: (id, lane index, name or None for a callable, payload,
/// attempt (1 at the first run), submitter).
pub type Claimed = (u64, u32, Option<String>, Option<String>, u64, String);

/// (lane index, name, owner, payload): a command as `enqueue` takes it.
pub type NewCommand = (u32, Option<String>, Option<String>, Option<String>);

/// (id, ok, text): the result as JSON text, or the error as `"ClassName: message"`.
pub type Outcome = (u64, bool, String);

/// (command id, command type, lane id, error, attempts, failed at (unix milliseconds)).
pub type Letter = (u64, String, String, String, u64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    fn lane() -> LaneSpec {
        LaneSpec {
            lane_id: "email".to_owned(),
            priority: 1,
            min_concurrency: 1,
            max_concurrency: 2,
            rate_permits: Some(3),
            rate_per_ms: Some(1_000),
            boost_deadline_ms: Some(500),
            boost_steps: vec![(0.5, 2)],
        }
    }

    #[test]
    fn a_lane_reads_as_the_script_expects() {
        let written: Value = serde_json::from_str(&lanes_json(&[lane()], None).unwrap()).unwrap();
        assert_eq!(
            written,
            json!([{"id": "email", "p": 1, "min": 1, "max": 2, "rp": 3, "rt": 1000,
                "bd": 500, "bs": [[0.5, 2]]}])
        );
    }

    #[test]
    fn bad_lanes_and_caps_are_refused_naming_the_value() {
        let mut bad = lane();
        bad.min_concurrency = 3;
        let error = lanes_json(&[bad], None).unwrap_err().to_string();
        assert!(
            error.contains("min_concurrency") && error.contains('3'),
            "{error}"
        );
        let error = lanes_json(&[lane()], Some(0)).unwrap_err().to_string();
        assert!(error.contains("global_max: 0"), "{error}");
        let mut huge = lane();
        huge.rate_permits = Some(1 << 30);
        huge.rate_per_ms = Some(1 << 30);
        let error = lanes_json(&[huge], None).unwrap_err().to_string();
        assert!(error.contains("2^53"), "{error}");
        assert!(lanes_json(&[], None).is_err());
    }
}
