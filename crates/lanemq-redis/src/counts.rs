//! Counting a queue's jobs (per state, per priority, pending) and reading its gate (pause,
//! cap on active jobs, rate limit): plain reads, one pipeline each, which `get_stats`, the
//! waits (`next_ready_at`) and the rate-limit reads of `admin.rs` share.

use lanemq_core::jobs::{Gate, JobState, Millis, QueueStats, JOB_STATES_COUNT};
use lanemq_core::CoreResult;

use crate::backend::RedisBackend;
use crate::keys::{Keys, STATE_SETS, WAITING_LIST};

/// The counts of `count_states` (the waiting list's, then the six state sets'), then the
/// settings `get_stats` reads.
type StatsReply = (
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    Vec<Option<u64>>,
);

/// What decides when a claim may succeed: settings, the waiting list's and set's counts, the
/// active count, the first delayed job.
type ReadyState = (
    Vec<Option<u64>>,
    usize,
    usize,
    usize,
    Option<f64>,
    usize,
    Vec<(String, f64)>,
    Vec<(String, f64)>,
);

/// Grouped waiting jobs are scored this much above their priority in `waiting`
/// (`GROUP_OFFSET` in `lua/includes/common.lua`).
const GROUP_OFFSET: u64 = 1 << 32;

impl RedisBackend {
    /// Counts per state (the jobs in each state's set), in `JobState::ALL` order.
    pub async fn counts(&self) -> CoreResult<[usize; JOB_STATES_COUNT]> {
        let mut pipe = redis::pipe();
        count_states(&mut pipe, &self.keys);
        let mut connection = self.connection().await?;
        let counts: Vec<usize> = pipe
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        Ok(state_counts(&counts))
    }

    pub async fn get_job_counts(
        &self,
        states: Vec<JobState>,
    ) -> CoreResult<Vec<(JobState, usize)>> {
        let counts = self.counts().await?;
        let states: Vec<JobState> = if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states
        };
        let mut out: Vec<(JobState, usize)> = Vec::new();
        for state in states {
            if !out.iter().any(|(s, _)| *s == state) {
                let index = JobState::ALL.iter().position(|s| *s == state).unwrap_or(0);
                out.push((state, counts[index]));
            }
        }
        Ok(out)
    }

    pub async fn count_pending(&self) -> CoreResult<usize> {
        let counts = self.counts().await?;
        Ok(counts[0] + counts[1] + counts[3])
    }

    pub async fn get_counts_per_priority(
        &self,
        priorities: Vec<u32>,
    ) -> CoreResult<Vec<(u32, usize)>> {
        // Priority 0 is the list, plus what a queue of the layout before it holds in the set.
        let mut pipe = redis::pipe();
        for p in &priorities {
            pipe.cmd("ZCOUNT")
                .arg(self.keys.key("waiting"))
                .arg(p)
                .arg(p);
            // Grouped jobs are scored GROUP_OFFSET + their priority (lua/README.md, "Groups").
            let grouped = GROUP_OFFSET + u64::from(*p);
            pipe.cmd("ZCOUNT")
                .arg(self.keys.key("waiting"))
                .arg(grouped)
                .arg(grouped);
            if *p == 0 {
                pipe.cmd("LLEN").arg(self.keys.key(WAITING_LIST));
            }
        }
        let replies: Vec<usize> = self.query(&pipe).await?;
        let mut replies = replies.into_iter();
        let mut out = Vec::with_capacity(priorities.len());
        for p in priorities {
            let mut count = replies.next().unwrap_or(0) + replies.next().unwrap_or(0);
            if p == 0 {
                count += replies.next().unwrap_or(0);
            }
            out.push((p, count));
        }
        Ok(out)
    }

    /// The queue at a glance at `now`: the counts and the settings in one MULTI, so one round
    /// trip and one moment.
    pub async fn get_stats(&self, now: Millis) -> CoreResult<QueueStats> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        count_states(&mut pipe, &self.keys);
        self.read_gate(&mut pipe);
        let (l, a, b, c, d, e, f, settings): StatsReply = self.query(&pipe).await?;
        let counts = state_counts(&[l, a, b, c, d, e, f]);
        let gate = gate_of(&settings);
        Ok(QueueStats {
            counts: JobState::ALL.into_iter().zip(counts).collect(),
            paused: gate.paused,
            max_active: gate.max_active,
            rate_limit: gate.rate_limit,
            rate_limit_ttl: gate.limited_until(now).map_or(0, |end| end - now),
        })
    }

    /// When a claim could next succeed (see `model::next_ready_at`), read in one round trip.
    pub(crate) async fn next_ready_at(&self, now: Millis) -> CoreResult<Option<Millis>> {
        let mut pipe = redis::pipe();
        self.read_gate(&mut pipe);
        pipe.cmd("LLEN").arg(self.keys.key(WAITING_LIST));
        // Waiting jobs a claim may take: ungrouped ones (scored below GROUP_OFFSET), and any
        // group in the turns; a group held by its rate window is due when the window ends.
        pipe.cmd("ZCOUNT")
            .arg(self.keys.key("waiting"))
            .arg("-inf")
            .arg(format!("({GROUP_OFFSET}"));
        pipe.cmd("ZCARD").arg(self.keys.key("groups:turns"));
        // The ungrouped jobs' turn ("") may outlive them (a claim drops it when it comes to
        // it): it counts through `scored` and `listed`, not as a turn.
        pipe.cmd("ZSCORE")
            .arg(self.keys.key("groups:turns"))
            .arg("");
        count_jobs(&mut pipe, self.keys.key("active"));
        pipe.cmd("ZRANGE")
            .arg(self.keys.key("delayed"))
            .arg(0)
            .arg(0)
            .arg("WITHSCORES");
        pipe.cmd("ZRANGE")
            .arg(self.keys.key("groups:rated"))
            .arg(0)
            .arg(0)
            .arg("WITHSCORES");
        let (settings, listed, scored, turns, ungrouped_turn, active, first, rated): ReadyState =
            self.query(&pipe).await?;
        let group_turns = turns - usize::from(ungrouped_turn.is_some());
        let waiting = listed + scored + group_turns;
        let gate = gate_of(&settings);
        let maxed = gate
            .max_active
            .is_some_and(|max| active as u64 >= max.into());
        let next_delayed = first
            .iter()
            .chain(rated.iter())
            .map(|(_, due)| *due as Millis)
            .min();
        Ok(lanemq_core::jobs::next_ready_at(
            now,
            gate.paused,
            waiting > 0,
            gate.limited_until(now),
            maxed,
            next_delayed,
        ))
    }

    /// Adds to `pipe` the read of the queue's gate (its settings and rate window), which
    /// `gate_of` turns into a `Gate`.
    pub(crate) fn read_gate(&self, pipe: &mut redis::Pipeline) {
        let cmd = pipe.cmd("HMGET").arg(self.keys.key("meta"));
        for field in GATE_FIELDS {
            cmd.arg(field);
        }
    }
}

/// Counts the jobs of a state's sorted set: every score below +inf, which leaves out the
/// sentinel that keeps `active` a skiplist (see `ensure_layout` in `lua/includes/common.lua`).
pub(crate) fn count_jobs(pipe: &mut redis::Pipeline, set_key: String) {
    pipe.cmd("ZCOUNT").arg(set_key).arg("-inf").arg("(+inf");
}

/// Counts the jobs of every state, in `JobState::ALL` order, with `JOB_STATES_COUNT + 1`
/// commands: the list of waiting jobs of priority 0 first (`state_counts` adds it to the
/// waiting set's count).
pub(crate) fn count_states(pipe: &mut redis::Pipeline, keys: &Keys) {
    pipe.cmd("LLEN").arg(keys.key(WAITING_LIST));
    for set in STATE_SETS {
        count_jobs(pipe, keys.key(set));
    }
}

/// The counts per state from the replies of `count_states`.
pub(crate) fn state_counts(replies: &[usize]) -> [usize; JOB_STATES_COUNT] {
    let mut out = [0; JOB_STATES_COUNT];
    out.copy_from_slice(&replies[1..=JOB_STATES_COUNT]);
    out[0] += replies[0];
    out
}

/// The META fields of a queue's gate, in the order `gate_of` reads them.
const GATE_FIELDS: [&str; 7] = [
    "paused",
    "max_active",
    "rate_max",
    "rate_duration",
    "rate_until",
    "rate_start",
    "rate_count",
];

/// The gate of the values of `GATE_FIELDS` (absent fields: no setting).
pub(crate) fn gate_of(values: &[Option<u64>]) -> Gate {
    let get = |i: usize| values.get(i).copied().flatten();
    let rate_limit = get(2)
        .zip(get(3))
        .map(|(max, duration)| (max as u32, duration));
    Gate {
        paused: get(0) == Some(1),
        max_active: get(1).map(|max| max as u32),
        rate_limit,
        window: (get(5).unwrap_or(0), get(6).unwrap_or(0)),
        until: get(4).unwrap_or(0),
    }
}
