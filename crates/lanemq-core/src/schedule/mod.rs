//! When the runs of a repeatable job (a job scheduler, in BullMQ's terms) are due. Pure
//! computation: no I/O, no clock; every instant is `Millis` (ms since the Unix epoch, UTC) and
//! `now` comes from the caller, like everywhere else in the core.
//!
//! # API
//!
//! ```text
//! pub enum Repeat { Every { every: Millis }, Cron { expr: String, tz: String } }
//! pub struct ScheduleSpec {
//!     pub repeat: Repeat, pub limit: Option<u64>, pub start: Option<Millis>,
//!     pub end: Option<Millis>, pub immediately: bool,
//! }
//! impl ScheduleSpec {
//!     pub fn every(every: Millis) -> Self;
//!     pub fn cron(expr: impl Into<String>, tz: impl Into<String>) -> Self;
//!     pub fn validate(&self, now: Millis) -> CoreResult<()>;
//!     pub fn first(&self, now: Millis) -> CoreResult<Option<Millis>>;
//!     pub fn next(&self, prev: Millis, count: u64, now: Millis) -> CoreResult<Option<Millis>>;
//! }
//! pub const DEFAULT_TZ: &str = "UTC";
//! ```
//!
//! A backend calls `validate(now)` before writing a scheduler, stores the spec as JSON, puts the
//! first run at `first(now)`, and when the run due at `prev` starts at `now` (the `count`th run),
//! puts the following one at `next(prev, count, now)`. Bad values are
//! `CoreError::InvalidConfig` whose message names the value.
//!
//! # JSON
//!
//! One flat object: `{"every": 1000}` or `{"cron": "0 9 * * 1-5", "tz": "Europe/Berlin"}`,
//! plus `"limit"`, `"start"`, `"end"` (ms) and `"immediately": true` when set. `tz` defaults to
//! `"UTC"` on reading and is always written for cron. Unknown keys are refused.
//!
//! # Semantics
//!
//! - `every` (ms > 0): the first run at `start` if that is in the future, else at `now`; then
//!   `prev + every`, so a slow job does not shift the grid. If that slot is already past, the
//!   missed slots are skipped: the next run is the first `prev + k * every` at or after `now`.
//! - `cron`: POSIX patterns, 5 fields or 6 with seconds first, or the seed's 7 (seconds first,
//!   a year last: a year, list, range or `*`; once its years have passed the schedule ends);
//!   day-of-week 0 and 7 are Sunday, `1-5` is Monday..Friday, names (`MON-FRI`, `JAN`) and
//!   nicknames (`@daily`) work, and a restricted day-of-month ORs with a restricted
//!   day-of-week. BullMQ's `5/15` (from 5 on, every 15) and croner's extensions (`L`, `W`, `#`,
//!   `+` for AND) are accepted too. Wall clock times are read in the IANA zone `tz`.
//!   - First run: the first pattern time strictly after `now`, or at or after `start` when that
//!     is in the future. With `immediately` (refused with a `start`, as in BullMQ), the first run
//!     is `now` and the pattern takes over from there.
//!   - Next run: the first pattern time strictly after `prev` that is also at or after `now`.
//!     So a run is never produced twice (strictly after `prev`), and after a slow job or an
//!     outage the missed times are skipped, not queued (at or after `now`).
//! - DST (croner's rule, pinned by the tests): a fixed time that the spring-forward gap skips
//!   (`30 2 * * *` in Europe/Berlin) runs once that day, at the first instant after the gap
//!   (03:00 local); a fixed time that the fall-back overlap repeats runs once, at its first
//!   (summer time) instant. Patterns with `*` or a step in the second, minute or hour field follow
//!   real time: they skip the times inside the gap and run in both passes of the overlap, so
//!   `0 * * * *` runs every real hour across both transitions.
//! - `limit` counts every run, the first included; `next` gives `None` once `count >= limit`.
//! - `end`: no run after it (one exactly at `end` runs).
//! - `validate` refuses: `every` 0, `limit` 0, an `end` at or before `now`, a `start` after
//!   `end`, a bad pattern (parsed then, so nothing bad is ever stored), a pattern with 4 or 8
//!   fields, one whose years are all past (the message names the year field), an unknown zone,
//!   a pattern that never fires (`0 0 30 2 *`: croner searches up to the year 5000, more than
//!   the 400-year cycle after which the calendar repeats, so "no time found" is exact), and an
//!   `end` before the first run.

mod cron;
mod every;
mod spec;
#[cfg(test)]
mod tests;
mod wire;

pub use spec::{Repeat, ScheduleSpec, DEFAULT_TZ};
