//! A job's log as `logs-2.lua` stores it: one JSON array per job in the queue's `logs` hash,
//! each line `[time, text]` (the time in ms: the script's `NOW`), or a bare string for a line
//! written before lines carried times, read with no time. A line's kind is its JSON type, never
//! a pattern in its text, so any text round-trips unchanged and old lines need no rewriting.

use lanemq_core::jobs::{LogLine, Millis};
use lanemq_core::CoreResult;
use serde::Deserialize;

use crate::decode::unexpected;

#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    /// cjson writes numbers with 14 significant digits: a time in ms is an integer there, but
    /// it is read as a float so that no other spelling of the number is refused.
    Timed(f64, String),
    Untimed(String),
}

/// The lines of a log's stored JSON array, oldest first.
pub(crate) fn decode_log(raw: &str) -> CoreResult<Vec<LogLine>> {
    let stored: Vec<Stored> =
        serde_json::from_str(raw).map_err(|e| unexpected(&format!("logs: {e}")))?;
    Ok(stored
        .into_iter()
        .map(|line| match line {
            Stored::Timed(time, text) => LogLine {
                time: Some(time.max(0.0) as Millis),
                text,
            },
            Stored::Untimed(text) => LogLine { time: None, text },
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_lines_read_without_a_time_and_new_ones_with_theirs() {
        let raw = r#"["old line",[1796572800123,"[1, \"x\"]"],[1.796572800124e12,"12 34"]]"#;
        let line = |time: Option<Millis>, text: &str| LogLine {
            time,
            text: text.into(),
        };
        assert_eq!(
            decode_log(raw).unwrap(),
            vec![
                line(None, "old line"),
                line(Some(1_796_572_800_123), "[1, \"x\"]"),
                line(Some(1_796_572_800_124), "12 34"),
            ]
        );
        assert!(decode_log(r#"[{"t": 1}]"#).is_err());
    }
}
