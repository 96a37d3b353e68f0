//! A job and its states.

use std::sync::{Arc, LazyLock};

use crate::error::{CoreError, CoreResult};

use super::options::JobOptions;

// Time is part of the model's vocabulary: the job modules name it `model::Millis`.
pub use super::clock::{wall_clock_ms, Millis};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    Waiting,
    Delayed,
    Active,
    WaitingChildren,
    Completed,
    Failed,
}

/// How many states a job can be in.
pub const JOB_STATES_COUNT: usize = 6;

impl JobState {
    pub const ALL: [JobState; 6] = [
        JobState::Waiting,
        JobState::Delayed,
        JobState::Active,
        JobState::WaitingChildren,
        JobState::Completed,
        JobState::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Waiting => "waiting",
            JobState::Delayed => "delayed",
            JobState::Active => "active",
            JobState::WaitingChildren => "waiting_children",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
        }
    }

    pub fn parse(name: &str) -> CoreResult<Self> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == name)
            .ok_or_else(|| {
                CoreError::InvalidConfig(format!(
                    "unknown job state: {name:?} (states: waiting, delayed, active, \
                     waiting_children, completed, failed)"
                ))
            })
    }

    pub fn is_finished(self) -> bool {
        matches!(self, JobState::Completed | JobState::Failed)
    }
}

/// The lease a claim puts on a job: only the holder of `token` may finish or renew it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    pub token: String,
    pub worker_id: Arc<str>,
    pub expires_at: Millis,
}

/// A line of a job's log and when it was written (ms since the epoch, on the clock of the call
/// that wrote it, as the job's other times). `None` for a line stored by a version that kept
/// no times: such data stays readable, so the time is optional rather than made up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub time: Option<Millis>,
    pub text: String,
}

/// A job as stored. `data`, `progress` and `return_value` are JSON text: the store never
/// parses user payloads, it only keeps and returns them. Text fields are shared (`Arc<str>`),
/// so the snapshots that claims and reads hand out copy no payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: Arc<str>,
    pub name: Arc<str>,
    pub data: Arc<str>,
    pub options: JobOptions,
    pub state: JobState,
    pub priority: u32,
    pub created_at: Millis,
    /// When a delayed job becomes due (0 when it was never delayed).
    pub delay_until: Millis,
    pub processed_on: Option<Millis>,
    pub finished_on: Option<Millis>,
    /// Attempts started and not given back (a stall, release or move to delayed gives the
    /// attempt back), so a retry decision compares it with `options.attempts`.
    pub attempts_made: u32,
    pub stalled_count: u32,
    pub progress: Arc<str>,
    pub return_value: Option<Arc<str>>,
    pub failed_reason: Option<String>,
    pub stacktrace: Vec<String>,
    pub logs: Vec<LogLine>,
    pub lock: Option<Lock>,
    /// The token of the attempt whose report (its completion, or its failure: failed for good
    /// or retried) last moved the job, until a claim starts another attempt: that report sent
    /// again (a retry after its reply was lost) is answered as done, and changes nothing
    /// (`lifecycle::finish`). Tokens are unique per claim, so no other attempt's report (a
    /// stale token) matches.
    pub reported_by: Option<String>,
    /// Insertion sequence: breaks ties and orders finished jobs.
    pub seq: u64,
    /// Position within its priority while waiting (FIFO: ascending sequence; LIFO and
    /// released jobs: negative, so they come first).
    pub order: i64,
}

/// The progress of a job nobody reported on, shared by all of them.
static NO_PROGRESS: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("0"));

impl Job {
    /// A job as an add creates it, once its backend gave it an id and its `(seq, order)`:
    /// waiting, delayed until `now + options.delay`, or, with `hold` (a flow's parent),
    /// waiting for its children (its delay then counts from its release).
    pub fn added(
        id: Arc<str>,
        name: Arc<str>,
        data: Arc<str>,
        options: JobOptions,
        (seq, order): (u64, i64),
        hold: bool,
        now: Millis,
    ) -> Job {
        let delayed = !hold && options.delay > 0;
        Job {
            id,
            name,
            data,
            state: if hold {
                JobState::WaitingChildren
            } else if delayed {
                JobState::Delayed
            } else {
                JobState::Waiting
            },
            priority: options.priority,
            created_at: now,
            delay_until: if delayed { now + options.delay } else { 0 },
            processed_on: None,
            finished_on: None,
            attempts_made: 0,
            stalled_count: 0,
            progress: Arc::clone(&NO_PROGRESS),
            return_value: None,
            failed_reason: None,
            stacktrace: Vec::new(),
            logs: Vec::new(),
            lock: None,
            reported_by: None,
            seq,
            order,
            options,
        }
    }

    /// Forgets what the run that is given back left on the job (its start time and progress):
    /// a released job waits as if it had never started, and the run that takes it next
    /// starts afresh instead of showing the interrupted run's state.
    pub fn forget_run(&mut self) {
        self.processed_on = None;
        self.progress = Arc::clone(&NO_PROGRESS);
    }

    /// The id of the dedup key the job was added under, if any.
    pub fn dedup_id(&self) -> Option<&str> {
        self.options.dedup.as_ref().map(|d| d.id.as_str())
    }

    /// Whether `token`'s attempt made the report that last moved this job (`reported_by`).
    pub fn reported_by(&self, token: &str) -> bool {
        self.reported_by.as_deref() == Some(token)
    }

    /// Ok if `token` holds this job's lock, live or run out, as long as nothing took the job
    /// from it (stalled recovery gives it back and drops the lock): what `release` asks. A
    /// worker gives back a job whose lease ran out before it could start it, and that is safe
    /// whenever its token still holds the job; a stall counted instead would be a stall the
    /// job never had.
    pub fn check_holder(&self, token: &str) -> CoreResult<()> {
        // (no lock expires at 0: a lease is at least a millisecond past its claim)
        self.check_lock(token, 0)
    }

    /// Ok if `token` holds this job's live lock; the error says why not (every backend reports
    /// the same errors).
    pub fn check_lock(&self, token: &str, now: Millis) -> CoreResult<()> {
        let id = &*self.id;
        if self.state != JobState::Active {
            return Err(CoreError::JobState {
                id: id.to_owned(),
                state: self.state.as_str(),
                expected: "active",
            });
        }
        match &self.lock {
            Some(lock) if lock.token == token && lock.expires_at > now => Ok(()),
            Some(lock) if lock.token == token => Err(CoreError::LockMismatch(format!(
                "job {id:?}: the lock expired at {} (now {now})",
                lock.expires_at
            ))),
            _ => Err(CoreError::LockMismatch(format!(
                "job {id:?} is locked by another token (its lease was lost)"
            ))),
        }
    }
}

/// The latest time a rate-limit wait may end: `now` plus this must stay exact in a double
/// (Lua numbers, JSON), so a wait ends before 2^53 ms.
pub const MAX_RATE_LIMIT_END: Millis = (1 << 53) - 1;

/// Refuses a windowed rate limit that could never let a job through (`InvalidConfig`).
pub fn check_rate_limit(max: u32, duration: Millis) -> CoreResult<()> {
    if max == 0 || duration == 0 {
        return Err(CoreError::InvalidConfig(format!(
            "invalid rate limit: {max} per {duration} ms (both must be > 0)"
        )));
    }
    Ok(())
}

/// Refuses a global concurrency of 0 (`None` lifts the limit).
pub fn check_max_active(max: Option<u32>) -> CoreResult<()> {
    if max == Some(0) {
        return Err(CoreError::InvalidConfig(
            "invalid max_active: 0 (must be >= 1)".into(),
        ));
    }
    Ok(())
}

/// When a manual rate-limit wait of `duration` ms set at `now` ends; refused (`InvalidConfig`,
/// nothing changed) when it is 0 or would end past `MAX_RATE_LIMIT_END`.
pub fn rate_limit_end(duration: Millis, now: Millis) -> CoreResult<Millis> {
    match now.checked_add(duration) {
        Some(end) if duration > 0 && end <= MAX_RATE_LIMIT_END => Ok(end),
        _ => Err(CoreError::InvalidConfig(format!(
            "invalid rate limit wait: {duration} ms (must be > 0 and end before 2^53 ms)"
        ))),
    }
}

/// Until when the rate limits hold claims back at `now`, if they do: the later of the manual
/// wait (`queue.rate_limit`, ending at `wait_until`; 0 for none) and, when the window of the
/// windowed limit `limit` (max jobs, duration) that started at `window_start` has used all of
/// its `used` claims, the end of that window. `None` when a claim may go on now.
pub fn rate_limited_until(
    now: Millis,
    wait_until: Millis,
    limit: Option<(u32, Millis)>,
    window_start: Millis,
    used: u64,
) -> Option<Millis> {
    let manual = (wait_until > now).then_some(wait_until);
    let window = limit
        .map(|(max, duration)| (max, window_start.saturating_add(duration)))
        .filter(|&(max, end)| now < end && used >= u64::from(max))
        .map(|(_, end)| end);
    manual.max(window)
}

/// When a claim could next return something, from what decides it: `None` when only new work
/// (or a resume) can help, `Some(now)` when a claim may succeed now.
pub fn next_ready_at(
    now: Millis,
    paused: bool,
    waiting: bool,
    rate_window_end: Option<Millis>,
    maxed: bool,
    next_delayed: Option<Millis>,
) -> Option<Millis> {
    if paused {
        return None;
    }
    if !waiting {
        return next_delayed;
    }
    if let Some(end) = rate_window_end {
        return Some(next_delayed.map_or(end, |d| d.min(end)));
    }
    if maxed {
        return next_delayed;
    }
    Some(now)
}

/// What `finished_result` reports about a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishedResult {
    Missing,
    NotFinished(JobState),
    Completed(Option<Arc<str>>),
    Failed(String),
}
