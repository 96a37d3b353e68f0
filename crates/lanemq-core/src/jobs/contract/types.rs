//! The values the contract's methods take and give, beside the shared job model.

use crate::jobs::model::Millis;
use crate::jobs::options::JobOptions;

#[derive(Debug, Clone)]
pub struct NewJob {
    pub name: String,
    pub data: String,
    pub options: JobOptions,
}

#[derive(Debug, Clone)]
pub struct Completion {
    pub id: String,
    pub token: String,
    pub result: String,
}

#[derive(Debug, Clone)]
pub struct Failure {
    pub id: String,
    pub token: String,
    pub error: String,
    pub stacktrace: Option<String>,
    pub retry: bool,
    /// Overrides the backoff when set (milliseconds).
    pub delay: Option<Millis>,
}

/// What became of a failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailOutcome {
    /// The job will run again: waiting now, or delayed until `delay_until`.
    Retry { delay_until: Option<Millis> },
    /// The failure is final.
    Failed,
}
