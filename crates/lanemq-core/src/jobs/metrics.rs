//! Per-minute metrics of finished jobs (BullMQ's `getMetrics`): per kind (completed, failed)
//! a total and a dense series of per-minute counts, newest first, at most `max_data_points`
//! minutes long (the oldest dropped). A minute with no jobs between two recorded minutes is a 0,
//! as BullMQ fills gaps.
//!
//! The decisions are here once, for every backend: `check_record` (what a record call may
//! carry), `update` (what it changes) and `read` (the slice a reader asks for). The memory and
//! SQLite backends store a series as its `SeriesHead` and the minutes that have a count (a
//! minute of the series that is not stored is 0), and apply `update`'s `Update`; the Redis
//! backend keeps the series dense, as a list, and runs the same steps in Lua
//! (`lua/metrics-2.lua`; `MINUTE_MS` there is `MINUTE`).

use std::collections::BTreeMap;
use std::ops::Range;

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::Millis;
use crate::jobs::paging::index_range;

/// A minute, in ms: the unit of the series.
pub const MINUTE: Millis = 60_000;
/// The longest series kept, in minutes (about 69 days; BullMQ's `MetricsTime.TWO_WEEKS` is
/// 20,160): a bound on what one record call may have to fill with zeros.
pub const MAX_DATA_POINTS: usize = 100_000;
/// The largest count or minute accepted: 2^53 - 1, the largest integer every backend holds
/// exactly (Redis' Lua numbers are doubles).
pub const MAX_EXACT: u64 = (1 << 53) - 1;

/// What a series counts: jobs completed, or failed for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricsKind {
    Completed,
    Failed,
}

impl MetricsKind {
    pub const ALL: [MetricsKind; 2] = [MetricsKind::Completed, MetricsKind::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            MetricsKind::Completed => "completed",
            MetricsKind::Failed => "failed",
        }
    }

    /// Its index in `ALL` (the local file's `kind` column).
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn parse(name: &str) -> CoreResult<Self> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| {
                CoreError::InvalidConfig(format!(
                    "invalid metrics kind: {name:?} (must be \"completed\" or \"failed\")"
                ))
            })
    }
}

/// A series as read (`read`): the `count` of jobs ever recorded, the per-minute counts asked
/// for (`data`, newest first), how many minutes the series holds (`data_points`) and the
/// start of its newest minute (`newest_minute`, ms since the epoch; None before any record).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metrics {
    pub count: u64,
    pub data: Vec<u64>,
    pub data_points: usize,
    pub newest_minute: Option<Millis>,
}

/// A stored series without its per-minute counts: the total, the start of the newest minute
/// and how many minutes the series holds (`len`, ending at `newest`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeriesHead {
    pub count: u64,
    pub newest: Option<Millis>,
    pub len: usize,
}

impl SeriesHead {
    /// The start of the oldest minute the series holds.
    fn oldest(&self) -> Option<Millis> {
        let newest = self.newest?;
        Some(newest - (self.len.max(1) as u64 - 1) * MINUTE)
    }
}

/// What a record call does to a stored series: its new head, the counts to add into minutes
/// (`(minute, n)`; a minute not stored starts at 0), and the oldest minute kept: counts of
/// minutes before it are forgotten. Applied in that order (an add may be to a minute that the
/// same call then drops).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub head: SeriesHead,
    pub adds: Vec<(Millis, u64)>,
    pub keep_from: Option<Millis>,
}

/// Checks a record call: `max_data_points` from 1 to `MAX_DATA_POINTS`, each minute the start
/// of a minute (a multiple of `MINUTE`) and each minute and count at most `MAX_EXACT`. Returns
/// the counts sorted by minute, those of one minute summed (so every backend applies them in
/// the same order). A refusal names the first bad value.
pub fn check_record(
    counts: &[(Millis, u64)],
    max_data_points: usize,
) -> CoreResult<Vec<(Millis, u64)>> {
    check_max_data_points(max_data_points)?;
    let mut sorted: Vec<(Millis, u64)> = Vec::with_capacity(counts.len());
    for &(minute, n) in counts {
        if minute % MINUTE != 0 || minute > MAX_EXACT {
            return Err(CoreError::InvalidConfig(format!(
                "invalid minute: {minute} (must be the start of a minute: a multiple of \
                 {MINUTE} ms since the epoch, at most {MAX_EXACT})"
            )));
        }
        if n > MAX_EXACT {
            return Err(CoreError::InvalidConfig(format!(
                "invalid count: {n} for minute {minute} (must be at most {MAX_EXACT})"
            )));
        }
        sorted.push((minute, n));
    }
    sorted.sort_unstable_by_key(|&(minute, _)| minute);
    sorted.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            earlier.1 = earlier.1.saturating_add(later.1).min(MAX_EXACT);
        }
        same
    });
    Ok(sorted)
}

pub fn check_max_data_points(max_data_points: usize) -> CoreResult<()> {
    if (1..=MAX_DATA_POINTS).contains(&max_data_points) {
        return Ok(());
    }
    Err(CoreError::InvalidConfig(format!(
        "invalid max_data_points: {max_data_points} (must be from 1 to {MAX_DATA_POINTS})"
    )))
}

/// The change that `counts` (as `check_record` returns them) make to the series `head`, at most
/// `max_data_points` minutes long afterwards. Each count goes to the total; then, by minute:
/// the first minute starts the series; a newer minute becomes the newest, the minutes between
/// it and the previous newest becoming zeros; a count of the newest minute, or of an older one
/// still held, adds into it; a count of a minute older than the series holds only adds to the
/// total.
pub fn update(head: SeriesHead, counts: &[(Millis, u64)], max_data_points: usize) -> Update {
    let mut head = head;
    let mut adds = Vec::with_capacity(counts.len());
    for &(minute, n) in counts {
        head.count = head.count.saturating_add(n).min(MAX_EXACT);
        match head.newest {
            None => {
                head.newest = Some(minute);
                head.len = 1;
            }
            Some(newest) if minute > newest => {
                let gap = ((minute - newest) / MINUTE) as usize;
                head.newest = Some(minute);
                head.len = (head.len + gap).min(max_data_points);
            }
            Some(_) if head.oldest().is_some_and(|oldest| minute < oldest) => continue,
            Some(_) => {}
        }
        if n > 0 {
            adds.push((minute, n));
        }
    }
    head.len = head.len.min(max_data_points);
    Update {
        keep_from: head.oldest(),
        head,
        adds,
    }
}

/// The positions `start..=end` of the series `head` (BullMQ's, as `LRANGE`: 0 is the newest
/// minute, a negative index counts from the oldest end), and the minutes they span (oldest,
/// newest) when there are any.
pub fn window(head: &SeriesHead, start: i64, end: i64) -> (Range<usize>, Option<(Millis, Millis)>) {
    let range = index_range(head.len, start, end);
    let span = head.newest.filter(|_| !range.is_empty()).map(|newest| {
        (
            newest - (range.end as u64 - 1) * MINUTE,
            newest - range.start as u64 * MINUTE,
        )
    });
    (range, span)
}

/// The series `head` as read from `start` to `end` (`window`), with `stored(oldest, newest)`
/// giving the counts stored for the minutes in that span (in any order; the others are 0).
pub fn read(
    head: SeriesHead,
    start: i64,
    end: i64,
    stored: impl FnOnce(Millis, Millis) -> CoreResult<Vec<(Millis, u64)>>,
) -> CoreResult<Metrics> {
    let (range, span) = window(&head, start, end);
    let mut data = vec![0; range.len()];
    if let (Some((oldest, newest)), Some(top)) = (span, head.newest) {
        for (minute, n) in stored(oldest, newest)? {
            if (oldest..=newest).contains(&minute) && minute % MINUTE == 0 {
                data[((top - minute) / MINUTE) as usize - range.start] = n;
            }
        }
    }
    Ok(Metrics {
        count: head.count,
        data,
        data_points: head.len,
        newest_minute: head.newest,
    })
}

/// A series in memory (the memory backend's): its head and the minutes with a count.
#[derive(Debug, Clone, Default)]
pub struct Series {
    head: SeriesHead,
    minutes: BTreeMap<Millis, u64>,
}

impl Series {
    /// Records `counts` (checked first: nothing changes if one is refused).
    pub fn record(&mut self, counts: &[(Millis, u64)], max_data_points: usize) -> CoreResult<()> {
        let counts = check_record(counts, max_data_points)?;
        let change = update(self.head, &counts, max_data_points);
        for (minute, n) in change.adds {
            let slot = self.minutes.entry(minute).or_default();
            *slot = slot.saturating_add(n);
        }
        if let Some(from) = change.keep_from {
            self.minutes = self.minutes.split_off(&from);
        }
        self.head = change.head;
        Ok(())
    }

    pub fn read(&self, start: i64, end: i64) -> Metrics {
        let stored = |from, to| {
            Ok(self
                .minutes
                .range(from..=to)
                .map(|(m, n)| (*m, *n))
                .collect())
        };
        read(self.head, start, end, stored).expect("a series in memory reads without failing")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Millis = 1_700_000_040_000; // the start of a minute

    fn at(minutes: u64) -> Millis {
        T + minutes * MINUTE
    }

    #[test]
    fn a_series_is_dense_newest_first_with_zeros_for_quiet_minutes() {
        let mut s = Series::default();
        s.record(&[(at(0), 2), (at(3), 1)], 10).unwrap();
        let read = s.read(0, -1);
        assert_eq!(read.data, [1, 0, 0, 2]);
        assert_eq!((read.count, read.data_points), (3, 4));
        assert_eq!(read.newest_minute, Some(at(3)));
        assert_eq!(s.read(1, 2).data, [0, 0]);
        assert_eq!(s.read(-1, -1).data, [2]);
        assert!(s.read(5, 9).data.is_empty());
    }

    #[test]
    fn the_series_keeps_at_most_max_points_and_late_counts_add_where_they_can() {
        let mut s = Series::default();
        s.record(&[(at(0), 1)], 3).unwrap();
        s.record(&[(at(10), 5)], 3).unwrap();
        assert_eq!(s.read(0, -1).data, [5, 0, 0]);
        assert_eq!(s.minutes.len(), 1, "the minutes dropped are forgotten");
        s.record(&[(at(9), 2), (at(2), 7)], 3).unwrap();
        let read = s.read(0, -1);
        assert_eq!(read.data, [5, 2, 0], "minute 2 is no longer held");
        assert_eq!(read.count, 15, "but it counts in the total");
        // A smaller maximum trims the series at the next record.
        s.record(&[(at(10), 1)], 1).unwrap();
        assert_eq!(s.read(0, -1).data, [6]);
        assert_eq!(s.read(0, -1).data_points, 1);
    }

    #[test]
    fn counts_of_one_minute_are_summed_and_applied_oldest_first() {
        assert_eq!(
            check_record(&[(at(2), 1), (at(1), 2), (at(2), 3)], 5).unwrap(),
            [(at(1), 2), (at(2), 4)]
        );
        let mut s = Series::default();
        s.record(&[(at(5), 1), (at(4), 1)], 5).unwrap();
        assert_eq!(s.read(0, -1).data, [1, 1]);
    }

    #[test]
    fn bad_records_are_refused_naming_the_value() {
        let refused = |counts: &[(Millis, u64)], max| match check_record(counts, max) {
            Err(CoreError::InvalidConfig(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(refused(&[(T + 1, 1)], 5).contains(&format!("minute: {}", T + 1)));
        assert!(refused(&[(T, MAX_EXACT + 1)], 5).contains("count: 9007199254740992"));
        assert!(refused(&[], 0).contains("max_data_points: 0"));
        assert!(refused(&[], MAX_DATA_POINTS + 1).contains("max_data_points: 100001"));
        assert!(MetricsKind::parse("done").is_err());
        assert_eq!(MetricsKind::parse("failed").unwrap(), MetricsKind::Failed);
    }

    #[test]
    fn an_empty_series_reads_as_nothing() {
        let read = Series::default().read(0, -1);
        assert_eq!(read, Metrics::default());
    }

    #[test]
    fn zero_counts_advance_the_series_without_storing_anything() {
        let mut s = Series::default();
        s.record(&[(at(0), 1), (at(2), 0)], 5).unwrap();
        assert_eq!(s.read(0, -1).data, [0, 0, 1]);
        assert_eq!(s.minutes.len(), 1);
    }
}
