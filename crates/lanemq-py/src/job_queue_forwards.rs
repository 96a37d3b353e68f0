//! `JobQueueCore`'s plain forwards, from one table: each converts its arguments (`core_args`:
//! seconds to ms, an omitted `now` to the wall clock), calls the backend and converts the
//! value for Python. The hot path (adding, claiming, finishing: what workers call, and the
//! wire) is written out in `job_queue_hot.rs`, the constructors in `job_queue.rs` (in
//! process) and `redis_queue.rs` (Redis).

use lanemq_core::jobs::{
    Dependencies, DependencyCounts, FinishedResult, Job, JobScheduler, JobState, LogLine, Metrics,
    Millis, QueueStats, StreamEvent, WorkerEntry,
};
use pyo3::prelude::*;

use crate::bridge::millis_to_seconds;
use crate::core_args::{
    Criteria, DataPoints, Dict, Kind, MinuteCounts, Now, Positive, Priority, RateWait, Secs, State,
    States, Text,
};
use crate::flows::{self, DependencyRows};
use crate::job_queue::{records, unit, JobQueueCore};
use crate::job_record::JobRecord;
use crate::scheduler_record::SchedulerRecord;

/// Lines `fn name(arg: Type [= default], ...) -> convert { backend_method(args...) }`: the
/// Python method `name` with those arguments (each converted by `CoreArg`; its name is the
/// field a refusal names), awaiting `convert` of what the backend's method gives.
macro_rules! forwards {
    ($(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $ty:ty $(= $default:tt)?),* $(,)?) -> $convert:path {
            $method:ident($($call:expr),* $(,)?)
        }
    )*) => {
        #[pymethods]
        impl JobQueueCore {$(
            $(#[doc = $doc])*
            #[pyo3(signature = ($($arg $(= $default)?),*))]
            fn $name<'py>(&self, py: Python<'py>, $($arg: $ty),*) -> PyResult<Bound<'py, PyAny>> {
                $(let $arg = $crate::core_args::CoreArg::core($arg, stringify!($arg))?;)*
                self.resolve(py, self.backend.$method($($call),*), $convert)
            }
        )*}
    };
}
pub(crate) use forwards;

forwards! {
    // ------------------------------------------------------------------ flows

    fn get_dependencies(id: Text, cursors: [usize; 4], count: Option<usize> = None)
        -> dependencies { get_dependencies(id, cursors, count) }
    /// Awaits `{processed, unprocessed, failed, ignored}`.
    fn get_dependencies_count(id: Text) -> dependency_counts { get_dependencies_count(id) }
    fn remove_child_dependency(id: Text, now: Option<Now> = None) -> Ok {
        remove_child_dependency(id, now)
    }
    fn remove_unprocessed_children(id: Text, now: Option<Now> = None) -> Ok {
        remove_unprocessed_children(id, now)
    }

    // ------------------------------------------------------------ leases, waits

    fn wait_for_job(timeout: Option<Secs> = None) -> Ok { wait_for_job(timeout) }
    fn move_to_delayed(id: Text, token: Text, delay_until: u64, now: Option<Now> = None)
        -> unit { move_to_delayed(id, token, delay_until, now) }
    fn release(id: Text, token: Text, now: Option<Now> = None) -> unit {
        release(id, token, now)
    }
    fn recover_stalled(now: Option<Now> = None) -> Ok { recover_stalled(now) }
    fn holds_lock(id: Text, token: Text, now: Option<Now> = None) -> Ok {
        holds_lock(id, token, now)
    }

    // ---------------------------------------------------------------- reading

    fn get_job(id: Text) -> record { get_job(id) }
    /// The job's state, or `unknown` if there is no such job.
    fn get_state(id: Text) -> state_name { get_state(id) }
    /// Counts per state, in the order asked (repeats dropped); all six when none.
    fn get_job_counts(states: States) -> state_counts { get_job_counts(states) }
    /// How many jobs are in `states` together; all jobs when none.
    fn get_job_count(states: States) -> Ok { get_job_count(states) }
    fn count_pending() -> Ok { count_pending() }
    fn get_counts_per_priority(priorities: Vec<u32>) -> priority_counts {
        get_counts_per_priority(priorities)
    }
    fn list_jobs(states: States, start: i64, end: i64, ascending: bool) -> records {
        list_jobs(states, start, end, ascending)
    }
    /// Awaits `(records, total)`: `list_jobs`'s page and how many jobs it was cut from.
    fn list_jobs_with_total(states: States, start: i64, end: i64, ascending: bool) -> page {
        list_jobs_with_total(states, start, end, ascending)
    }
    /// Awaits `(records, cursor)`: up to `count` jobs of `states` meeting the criteria, from
    /// position `cursor`, and where the next page starts (None: the end).
    fn search_jobs(
        states: States,
        criteria: Criteria,
        page: (usize, usize),
        ascending: bool,
        now: Option<Now> = None,
    ) -> search_page {
        search_jobs(states, criteria, page, ascending, now)
    }
    /// Awaits `(counts, paused, max_active, rate_limit, rate_limit_ttl)`, read at one moment:
    /// counts per state, the rate limit as `(max, seconds)` or None, its ttl in seconds.
    fn get_stats(now: Option<Now> = None) -> stats { get_stats(now) }
    /// Awaits `(kind, value)`: ("missing", None), ("pending", state), ("completed", json or
    /// None), ("failed", reason).
    fn finished_result(id: Text) -> finished { finished_result(id) }
    /// Like `finished_result`, once the job finishes (or `timeout` seconds pass).
    fn wait_finished(id: Text, timeout: Option<Secs> = None) -> finished {
        wait_finished(id, timeout)
    }
    /// Awaits `(lines, total)`: the texts of lines `start..=end` and how many the log holds.
    fn get_logs(id: Text, start: i64, end: i64, ascending: bool) -> log_texts {
        get_logs(id, start, end, ascending)
    }
    /// Awaits `(entries, total)` as `get_logs`, each entry `(time in ms or None, text)`.
    fn get_log_entries(id: Text, start: i64, end: i64, ascending: bool) -> log_entries {
        get_logs(id, start, end, ascending)
    }
    /// The names of the queues this queue's backend holds, sorted.
    fn queue_names() -> Ok { queue_names() }

    // ---------------------------------------------------------------- editing

    fn promote(id: Text, now: Option<Now> = None) -> unit { promote(id, now) }
    /// Promotes the delayed jobs due at `now`; awaits how many.
    fn promote_due(now: Option<Now> = None) -> Ok { promote_due(now) }
    /// Promotes delayed jobs, earliest first, at most `count` (None: all); awaits how many.
    fn promote_jobs(count: Option<Positive> = None, now: Option<Now> = None) -> Ok {
        promote_jobs(count.map(|n| n as usize), now)
    }
    /// Delays a waiting or delayed job to `delay` seconds from `now`.
    fn reschedule(id: Text, delay: Secs, now: Option<Now> = None) -> unit {
        reschedule(id, now.saturating_add(delay), now)
    }
    fn delay_job(id: Text, delay: Secs, now: Option<Now> = None) -> unit {
        delay_job(id, now.saturating_add(delay), now)
    }
    fn retry_job(id: Text, reset_attempts: bool = false, now: Option<Now> = None) -> unit {
        retry_job(id, reset_attempts, now)
    }
    fn update_priority(id: Text, priority: Priority, lifo: bool) -> unit {
        update_priority(id, priority, lifo)
    }
    fn update_data(id: Text, data: Text) -> unit { update_data(id, data) }
    fn update_progress(id: Text, progress: Text, now: Option<Now> = None) -> unit {
        update_progress(id, progress, now)
    }
    /// Appends a line written at `now` (ms; None: the wall clock); awaits the line count.
    fn add_log(id: Text, line: Text, keep: usize, now: Option<Now> = None) -> Ok {
        add_log(id, line, keep, now)
    }
    fn clear_logs(id: Text, keep: usize) -> unit { clear_logs(id, keep) }
    fn save_stacktrace(id: Text, lines: Vec<Text>, reason: Option<Text> = None) -> unit {
        save_stacktrace(id, lines, reason)
    }
    fn remove(id: Text, now: Option<Now> = None) -> unit { remove(id, now) }
    /// Awaits how many jobs of `states` meeting the criteria were removed (at most `limit`).
    fn remove_jobs(
        states: States,
        criteria: Criteria,
        limit: Option<usize> = None,
        now: Option<Now> = None,
    ) -> Ok {
        remove_jobs(states, criteria, limit, now)
    }

    // -------------------------------------------------------------- the queue

    fn pause(now: Option<Now> = None) -> unit { pause(now) }
    fn resume(now: Option<Now> = None) -> unit { resume(now) }
    fn is_paused() -> Ok { is_paused() }
    fn drain(delayed: bool, now: Option<Now> = None) -> Ok { drain(delayed, now) }
    fn clean(grace: Secs, limit: usize, state: State, now: Option<Now> = None) -> Ok {
        clean(grace, limit, state, now)
    }
    fn obliterate(force: bool, now: Option<Now> = None) -> unit { obliterate(force, now) }
    /// At most `max` claims per `duration` seconds.
    fn set_rate_limit(max: Positive, duration: Secs) -> unit { set_rate_limit(max, duration) }
    /// Awaits `(max, duration in seconds)`, or None.
    fn get_rate_limit() -> rate_limit_seconds { get_rate_limit() }
    fn clear_rate_limit() -> unit { clear_rate_limit() }
    /// Holds every claim back for `duration` seconds from `now`.
    fn rate_limit(duration: RateWait, now: Option<Now> = None) -> unit {
        rate_limit(duration, now)
    }
    /// Awaits how long the rate limits still hold claims back at `now`, in seconds.
    fn get_rate_limit_ttl(now: Option<Now> = None) -> seconds { get_rate_limit_ttl(now) }
    fn remove_rate_limit_key() -> unit { remove_rate_limit_key() }
    /// Awaits how many jobs that no state referenced were removed.
    fn remove_orphaned_jobs() -> Ok { remove_orphaned_jobs() }
    fn set_max_active(max_active: Option<Positive> = None) -> unit { set_max_active(max_active) }
    fn get_max_active() -> Ok { get_max_active() }
    fn is_maxed() -> Ok { is_maxed() }

    // ------------------------------------------------------------- dedup keys

    /// The id of the job holding the dedup key `dedup_id` at `now`, or None if it is not held.
    fn get_deduplication_job_id(dedup_id: Text, now: Option<Now> = None) -> Ok {
        get_deduplication_job_id(dedup_id, now)
    }
    /// Awaits the seconds the dedup key `dedup_id` is still held at `now`: None when it is not
    /// held, infinity when it has no expiry (held until its job finishes).
    fn get_deduplication_ttl(dedup_id: Text, now: Option<Now> = None) -> ttl_seconds {
        get_deduplication_ttl(dedup_id, now)
    }
    /// Deletes the dedup key `dedup_id`; awaits True if a held key was deleted.
    fn remove_deduplication_key(dedup_id: Text, now: Option<Now> = None) -> Ok {
        remove_deduplication_key(dedup_id, now)
    }

    // --------------------------------------------------------- job schedulers

    fn get_scheduler(key: Text) -> scheduler { get_scheduler(key) }
    fn list_schedulers(start: i64, end: i64, ascending: bool) -> schedulers {
        list_schedulers(start, end, ascending)
    }
    fn count_schedulers() -> Ok { count_schedulers() }
    /// Removes the scheduler `key` (and its occurrence, if it has not started); awaits True
    /// if it existed.
    fn remove_scheduler(key: Text, now: Option<Now> = None) -> Ok { remove_scheduler(key, now) }

    // ----------------------------------------------------------------- events

    /// Events `(id, timestamp, event, job_id, fields)` with `start <= id <= end`.
    fn read_events(start: u64, end: u64, limit: usize) -> event_rows {
        read_events(start, end, limit)
    }
    fn trim_events(max_len: usize) -> Ok { trim_events(max_len) }
    fn last_event_id() -> Ok { last_event_id() }
    /// Awaits True once an event after `after` exists (False after `timeout` seconds).
    fn wait_events(after: u64, timeout: Option<Secs> = None) -> Ok { wait_events(after, timeout) }
    /// Appends the custom event `name` (its `data`: a JSON object) and awaits its id.
    fn publish_event(name: Text, job_id: Option<Text>, data: Text, now: Option<Now> = None)
        -> Ok { publish_event(name, job_id, data, now) }

    // ------------------------------------------------------------ observation

    /// Adds `(minute start ms, count)` pairs to the `kind` series ("completed" or "failed").
    fn record_metrics(kind: Kind, counts: MinuteCounts, max_data_points: DataPoints) -> unit {
        record_metrics(kind, counts, max_data_points)
    }
    /// Awaits `(count, data, data_points, newest_minute)` of the `kind` series.
    fn get_metrics(kind: Kind, start: i64, end: i64) -> metrics_row {
        get_metrics(kind, start, end)
    }
    /// Records worker `id` alive at `now`, described by `info` (JSON), for `ttl` seconds.
    fn heartbeat_worker(id: Text, info: Text, ttl: Secs, now: Option<Now> = None) -> unit {
        heartbeat_worker(id, info, ttl, now)
    }
    /// Awaits True if worker `id` was registered.
    fn remove_worker(id: Text) -> Ok { remove_worker(id) }
    /// Awaits `(id, info, last_heartbeat)` of the workers alive at `now`, by id; the others
    /// are deleted.
    fn get_workers(now: Option<Now> = None) -> worker_rows { get_workers(now) }
}

// The conversions of the values the backend gives.

fn dependencies(deps: Dependencies) -> PyResult<DependencyRows> {
    Ok(flows::dependencies(deps))
}

fn dependency_counts(counts: DependencyCounts) -> PyResult<Dict<&'static str, usize>> {
    Ok(Dict(vec![
        ("processed", counts.processed),
        ("unprocessed", counts.unprocessed),
        ("failed", counts.failed),
        ("ignored", counts.ignored),
    ]))
}

fn record(job: Option<Job>) -> PyResult<Option<JobRecord>> {
    Ok(job.map(JobRecord::from))
}

fn state_name(state: Option<JobState>) -> PyResult<&'static str> {
    Ok(state.map_or("unknown", JobState::as_str))
}

pub(crate) fn state_counts(counts: Vec<(JobState, usize)>) -> PyResult<Dict<&'static str, usize>> {
    Ok(Dict(
        counts.into_iter().map(|(s, n)| (s.as_str(), n)).collect(),
    ))
}

fn priority_counts(counts: Vec<(u32, usize)>) -> PyResult<Dict<u32, usize>> {
    Ok(Dict(counts))
}

type SearchPage = (Vec<JobRecord>, Option<usize>);

fn search_page((jobs, next): (Vec<Job>, Option<usize>)) -> PyResult<SearchPage> {
    Ok((records(jobs)?, next))
}

fn page((jobs, total): (Vec<Job>, usize)) -> PyResult<(Vec<JobRecord>, usize)> {
    Ok((records(jobs)?, total))
}

/// `get_logs` as it always answered: the texts alone.
fn log_texts((lines, total): (Vec<LogLine>, usize)) -> PyResult<(Vec<String>, usize)> {
    Ok((lines.into_iter().map(|line| line.text).collect(), total))
}

/// A log line as Python's `LogEntry` is made from: its time (None for a line stored without
/// one) and its text.
type LogEntryRow = (Option<Millis>, String);

fn log_entries((lines, total): (Vec<LogLine>, usize)) -> PyResult<(Vec<LogEntryRow>, usize)> {
    let rows = lines.into_iter().map(|line| (line.time, line.text));
    Ok((rows.collect(), total))
}

/// `get_stats` as Python receives it.
type StatsRow = (
    Dict<&'static str, usize>,
    bool,
    Option<u32>,
    Option<(u32, f64)>,
    f64,
);

fn stats(stats: QueueStats) -> PyResult<StatsRow> {
    Ok((
        state_counts(stats.counts)?,
        stats.paused,
        stats.max_active,
        rate_limit_seconds(stats.rate_limit)?,
        millis_to_seconds(stats.rate_limit_ttl),
    ))
}

fn finished(result: FinishedResult) -> PyResult<(&'static str, Option<String>)> {
    Ok(match result {
        FinishedResult::Missing => ("missing", None),
        FinishedResult::NotFinished(state) => ("pending", Some(state.as_str().to_owned())),
        FinishedResult::Completed(value) => ("completed", value.map(|v| v.to_string())),
        FinishedResult::Failed(reason) => ("failed", Some(reason)),
    })
}

fn seconds(millis: Millis) -> PyResult<f64> {
    Ok(millis_to_seconds(millis))
}

fn ttl_seconds(ttl: Option<Option<Millis>>) -> PyResult<Option<f64>> {
    Ok(ttl.map(|left| left.map_or(f64::INFINITY, millis_to_seconds)))
}

pub(crate) fn rate_limit_seconds(limit: Option<(u32, Millis)>) -> PyResult<Option<(u32, f64)>> {
    Ok(limit.map(|(max, duration)| (max, millis_to_seconds(duration))))
}

fn scheduler(found: Option<JobScheduler>) -> PyResult<Option<SchedulerRecord>> {
    Ok(found.map(SchedulerRecord::from))
}

fn schedulers(all: Vec<JobScheduler>) -> PyResult<Vec<SchedulerRecord>> {
    Ok(all.into_iter().map(SchedulerRecord::from).collect())
}

/// An event as Python receives it: (id, timestamp, event, job id, fields).
type EventRow = (
    u64,
    u64,
    &'static str,
    Option<String>,
    Vec<(&'static str, String)>,
);

fn event_rows(events: Vec<StreamEvent>) -> PyResult<Vec<EventRow>> {
    Ok(events
        .into_iter()
        .map(|e| {
            let fields = e
                .fields()
                .map(|(k, v)| (*k, v.as_str().to_owned()))
                .collect();
            (
                e.id,
                e.timestamp,
                e.event,
                e.job_id.map(|id| id.to_string()),
                fields,
            )
        })
        .collect())
}

/// A metrics series as Python receives it: (count, data, data_points, newest_minute).
type MetricsRow = (u64, Vec<u64>, usize, Option<Millis>);

fn metrics_row(m: Metrics) -> PyResult<MetricsRow> {
    Ok((m.count, m.data, m.data_points, m.newest_minute))
}

fn worker_rows(workers: Vec<WorkerEntry>) -> PyResult<Vec<(String, String, Millis)>> {
    Ok(workers
        .into_iter()
        .map(|w| (w.id, w.info, w.last_heartbeat))
        .collect())
}
