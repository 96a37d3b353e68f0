//! Edge-triggered notices the dispatcher raises for the bindings to turn into events and alert
//! callbacks: lane pressure and idleness, and queue-depth and latency alerts.

use super::Micros;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AlertLevel {
    Warning,
    Critical,
}

impl AlertLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }

    pub fn classify(value: u64, warning: Option<u64>, critical: Option<u64>) -> Option<Self> {
        if critical.is_some_and(|c| value >= c) {
            Some(Self::Critical)
        } else if warning.is_some_and(|w| value >= w) {
            Some(Self::Warning)
        } else {
            None
        }
    }
}

/// Remembers the level last reported so an alert fires when the level rises, not on every
/// observation; it re-arms once the value falls back below the warning threshold.
#[derive(Debug, Clone, Copy, Default)]
pub struct AlertWatch {
    reported: Option<AlertLevel>,
}

impl AlertWatch {
    /// Returns the level to report, if the observation raises it.
    pub fn update(&mut self, level: Option<AlertLevel>) -> Option<AlertLevel> {
        match level {
            None => {
                self.reported = None;
                None
            }
            Some(level) if self.reported.is_none_or(|r| level > r) => {
                self.reported = Some(level);
                Some(level)
            }
            Some(_) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The lane's pending count reached its pressure threshold (first crossing).
    Pressure { lane: usize, pending: usize },
    /// The lane's pending count went back to 0 after pressure.
    Idle { lane: usize },
    DepthAlert {
        lane: usize,
        level: AlertLevel,
        pending: usize,
    },
    LatencyAlert {
        lane: usize,
        level: AlertLevel,
        latency: Micros,
    },
}
