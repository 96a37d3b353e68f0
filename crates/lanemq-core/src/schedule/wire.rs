//! The JSON form of a `ScheduleSpec`, one flat object that backends store as it is:
//! `{"every": 1000}` or `{"cron": "0 9 * * 1-5", "tz": "Europe/Berlin"}`, plus `limit`, `start`,
//! `end` (ms since the epoch) and `immediately` when set. Reading it refuses a spec that names
//! both or neither of `every` and `cron`, a `tz` on an `every`, and any unknown key (a typo like
//! `"limt"` would otherwise drop the limit without a word).

use serde::{Deserialize, Serialize};

use crate::jobs::Millis;

use super::spec::{Repeat, ScheduleSpec, DEFAULT_TZ};

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SpecJson {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    every: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tz: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end: Option<Millis>,
    #[serde(default, skip_serializing_if = "is_false")]
    immediately: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl TryFrom<SpecJson> for ScheduleSpec {
    type Error = String;

    fn try_from(json: SpecJson) -> Result<Self, String> {
        let repeat = match (json.every, json.cron, json.tz) {
            (Some(every), None, None) => Repeat::Every { every },
            (Some(_), None, Some(tz)) => {
                return Err(format!(
                    "tz {tz:?} applies only to a cron schedule, not to every"
                ))
            }
            (None, Some(expr), tz) => Repeat::Cron {
                expr,
                tz: tz.unwrap_or_else(|| DEFAULT_TZ.to_string()),
            },
            (Some(_), Some(_), _) => return Err("a schedule has every or cron, not both".into()),
            (None, None, _) => return Err("a schedule needs every (ms) or cron".into()),
        };
        Ok(ScheduleSpec {
            repeat,
            limit: json.limit,
            start: json.start,
            end: json.end,
            immediately: json.immediately,
        })
    }
}

impl From<ScheduleSpec> for SpecJson {
    fn from(spec: ScheduleSpec) -> Self {
        // The zone is written even when it is the default, so a stored spec reads the same
        // if the default ever changes.
        let (every, cron, tz) = match spec.repeat {
            Repeat::Every { every } => (Some(every), None, None),
            Repeat::Cron { expr, tz } => (None, Some(expr), Some(tz)),
        };
        SpecJson {
            every,
            cron,
            tz,
            limit: spec.limit,
            start: spec.start,
            end: spec.end,
            immediately: spec.immediately,
        }
    }
}
