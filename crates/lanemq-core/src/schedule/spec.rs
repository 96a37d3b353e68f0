//! `ScheduleSpec`: what a job scheduler repeats, and its `validate` / `first` / `next`.

use std::num::NonZeroU64;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};
use crate::jobs::Millis;

use super::cron::{past_years, CronRule};
use super::every;
use super::wire::SpecJson;

/// The zone of a cron schedule that names none.
pub const DEFAULT_TZ: &str = "UTC";

/// How the occurrences repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// Every `every` milliseconds (> 0), counted from the first run.
    Every { every: Millis },
    /// At the times of the cron pattern `expr`, read on the wall clock of the IANA zone `tz`.
    Cron { expr: String, tz: String },
}

/// A job scheduler's schedule. Serialized as the flat JSON object described in the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SpecJson", into = "SpecJson")]
pub struct ScheduleSpec {
    pub repeat: Repeat,
    /// How many runs in all, the first included (at least 1); `None` for no limit.
    pub limit: Option<u64>,
    /// No run before this instant.
    pub start: Option<Millis>,
    /// No run after this instant (a run exactly at `end` is allowed).
    pub end: Option<Millis>,
    /// Cron only: run once at once, then follow the pattern (refused with a `start`). An
    /// `every` schedule always runs first at once, so there it changes nothing.
    pub immediately: bool,
}

/// The checked, parsed form of a `Repeat`, rebuilt on each call: parsing is microseconds and
/// keeping only the plain spec keeps it trivially serializable. The parsed pattern is a few
/// hundred bytes of bit sets, hence the box.
enum Rule {
    Every(NonZeroU64),
    Cron(Box<CronRule>),
}

impl Repeat {
    fn rule(&self) -> CoreResult<Rule> {
        match self {
            Repeat::Every { every } => NonZeroU64::new(*every).map(Rule::Every).ok_or_else(|| {
                CoreError::InvalidConfig(format!("invalid every: {every} (must be > 0 ms)"))
            }),
            Repeat::Cron { expr, tz } => {
                CronRule::parse(expr, tz).map(|cron| Rule::Cron(Box::new(cron)))
            }
        }
    }
}

impl ScheduleSpec {
    /// Every `every` ms, no limit, no start or end.
    pub fn every(every: Millis) -> Self {
        Self::with_repeat(Repeat::Every { every })
    }

    /// At the times of `expr` in the zone `tz`, no limit, no start or end.
    pub fn cron(expr: impl Into<String>, tz: impl Into<String>) -> Self {
        Self::with_repeat(Repeat::Cron {
            expr: expr.into(),
            tz: tz.into(),
        })
    }

    fn with_repeat(repeat: Repeat) -> Self {
        Self {
            repeat,
            limit: None,
            start: None,
            end: None,
            immediately: false,
        }
    }

    /// Checks everything before a scheduler is written; each error names the bad value.
    ///
    /// Besides the values themselves it refuses a schedule that would never run: a cron pattern
    /// with no time at all (`0 0 30 2 *`), and an `end` that comes before the first run.
    pub fn validate(&self, now: Millis) -> CoreResult<()> {
        let rule = self.repeat.rule()?;
        if self.limit == Some(0) {
            return Err(invalid("invalid limit: 0 (must be at least 1)"));
        }
        if let Some(start) = self.start.filter(|_| self.immediately) {
            // BullMQ refuses the pair too: "at once" and "not before start" contradict.
            return Err(invalid(format!(
                "invalid start: {start} (cannot be combined with immediately, which runs the \
                 first occurrence at once)"
            )));
        }
        if let Some(end) = self.end {
            if end <= now {
                return Err(invalid(format!(
                    "invalid end: {end} (already past at {now})"
                )));
            }
            if let Some(start) = self.start.filter(|&start| start > end) {
                return Err(invalid(format!("invalid start: {start} (after end {end})")));
            }
        }
        if let (Rule::Cron(cron), Repeat::Cron { expr, tz }) = (&rule, &self.repeat) {
            if cron.after(now)?.is_none() {
                let why = past_years(expr, tz, now).unwrap_or_else(|| "it never fires".into());
                return Err(invalid(format!("invalid cron expression {expr:?}: {why}")));
            }
        }
        if self.first(now)?.is_none() {
            // The pattern fires and limit >= 1, so `end` came first, or `start` is so far out
            // that the search gave up before it.
            return Err(invalid(match (self.end, self.start) {
                (Some(end), _) => format!("invalid end: {end} (the schedule has no run before it)"),
                (None, start) => format!(
                    "invalid start: {} (the schedule has no run after it)",
                    start.unwrap_or(now)
                ),
            }));
        }
        Ok(())
    }

    /// When the first run is due, for a scheduler upserted at `now`; `None` when there is none
    /// (only for a spec that `validate` refuses).
    ///
    /// `every`, or `immediately`: `start` if it is in the future, else `now`. Cron: the first
    /// pattern time strictly after `now`, or at or after `start` if that is in the future (a
    /// `start` set on a pattern time is itself a run).
    pub fn first(&self, now: Millis) -> CoreResult<Option<Millis>> {
        let rule = self.repeat.rule()?;
        let from = self.start.map_or(now, |start| start.max(now));
        let first = match rule {
            Rule::Every(_) => Some(from),
            Rule::Cron(_) if self.immediately => Some(from),
            // "At or after start" is "strictly after start - 1" in whole milliseconds.
            Rule::Cron(cron) => cron.after(match self.start {
                Some(start) if start > now => start - 1,
                _ => now,
            })?,
        };
        Ok(first.filter(|&at| self.before_end(at)))
    }

    /// The run after the one due at `prev`, which has just started at `now`, when `count` runs
    /// (`prev` included) have been produced; `None` when `limit` or `end` stops the schedule.
    ///
    /// Missed runs are skipped, never replayed as a backlog, and a run is never produced twice:
    /// `every` gives `prev + every`, or the first later slot of that grid at or after `now`; cron
    /// gives the first pattern time strictly after `prev` that is also at or after `now`.
    pub fn next(&self, prev: Millis, count: u64, now: Millis) -> CoreResult<Option<Millis>> {
        let rule = self.repeat.rule()?;
        if self.limit.is_some_and(|limit| count >= limit) {
            return Ok(None);
        }
        let next = match rule {
            Rule::Every(every) => every::next_slot(prev, every, now),
            // "After prev and at or after now" is "strictly after max(prev, now - 1)".
            Rule::Cron(cron) => cron.after(prev.max(now.saturating_sub(1)))?,
        };
        Ok(next.filter(|&at| self.before_end(at)))
    }

    fn before_end(&self, at: Millis) -> bool {
        self.end.is_none_or(|end| at <= end)
    }
}

fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::InvalidConfig(message.into())
}
