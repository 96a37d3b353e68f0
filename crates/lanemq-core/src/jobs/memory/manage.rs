//! Reading and managing a queue's jobs: counts, listings, edits, logs, removal, pause,
//! cleaning, rate limit and global concurrency.

use std::sync::Arc;

use crate::error::{CoreError, CoreResult};

use super::store::{JobId, MemoryStore};
use crate::jobs::events::{check_custom_event, StreamEvent, Text, CUSTOM_EVENT};
use crate::jobs::lifecycle;
use crate::jobs::model::{FinishedResult, Job, JobState, Millis};
use crate::jobs::options::{check_log_line, check_payload};
use crate::jobs::paging::index_range;

impl MemoryStore {
    pub fn get_job(&self, id: &str) -> Option<Job> {
        self.jobs.get(id).cloned()
    }

    pub fn get_state(&self, id: &str) -> Option<JobState> {
        self.jobs.get(id).map(|j| j.state)
    }

    pub fn count(&self, state: JobState) -> usize {
        match state {
            JobState::Waiting => self.waiting.len(),
            JobState::Delayed => self.delayed.len(),
            JobState::Active => self.active.len(),
            JobState::WaitingChildren => self.waiting_children.len(),
            JobState::Completed => self.completed.len(),
            JobState::Failed => self.failed.len(),
        }
    }

    /// Counts for the given states in first-seen order (duplicates dropped); all six if none.
    pub fn get_job_counts(&self, states: &[JobState]) -> Vec<(JobState, usize)> {
        let states: Vec<JobState> = if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states.to_vec()
        };
        let mut seen = Vec::new();
        for state in states {
            if !seen.iter().any(|(s, _)| *s == state) {
                seen.push((state, self.count(state)));
            }
        }
        seen
    }

    /// Jobs that will still run: waiting + delayed + waiting for children.
    pub fn count_pending(&self) -> usize {
        self.waiting.len() + self.delayed.len() + self.waiting_children.len()
    }

    /// Waiting jobs per priority, for the priorities asked.
    pub fn get_counts_per_priority(&self, priorities: &[u32]) -> Vec<(u32, usize)> {
        priorities
            .iter()
            .map(|&p| (p, self.waiting.range((p, i64::MIN)..=(p, i64::MAX)).count()))
            .collect()
    }

    pub(super) fn ids_in(
        &self,
        state: JobState,
    ) -> Box<dyn DoubleEndedIterator<Item = &JobId> + '_> {
        match state {
            JobState::Waiting => Box::new(self.waiting.values()),
            JobState::Delayed => Box::new(self.delayed.iter().map(|(_, _, id)| id)),
            JobState::Active => Box::new(self.active.iter().map(|(_, _, id)| id)),
            JobState::WaitingChildren => Box::new(self.waiting_children.iter().map(|(_, id)| id)),
            JobState::Completed => Box::new(self.completed.iter().map(|(_, _, id)| id)),
            JobState::Failed => Box::new(self.failed.iter().map(|(_, _, id)| id)),
        }
    }

    /// Jobs in the given states (all if none), each state in its natural order (claim order for
    /// waiting, due time for delayed, finish time for finished), from index `start` to `end`
    /// inclusive over the concatenation (`end < 0` counts from the end: -1 is the last).
    /// `ascending = false` reverses each state's order.
    pub fn list_jobs(
        &self,
        states: &[JobState],
        start: i64,
        end: i64,
        ascending: bool,
    ) -> Vec<Job> {
        self.list_jobs_with_total(states, start, end, ascending).0
    }

    /// `list_jobs`, and how many jobs the page was cut from.
    pub fn list_jobs_with_total(
        &self,
        states: &[JobState],
        start: i64,
        end: i64,
        ascending: bool,
    ) -> (Vec<Job>, usize) {
        let states: Vec<JobState> = if states.is_empty() {
            JobState::ALL.to_vec()
        } else {
            states.to_vec()
        };
        let total: usize = states.iter().map(|s| self.count(*s)).sum();
        let range = index_range(total, start, end);
        let ids = states.iter().flat_map(|&state| {
            let ids = self.ids_in(state);
            if ascending {
                ids
            } else {
                Box::new(ids.rev())
            }
        });
        let page = ids
            .skip(range.start)
            .take(range.len())
            .map(|id| self.jobs[id].clone())
            .collect();
        (page, total)
    }

    pub fn finished_result(&self, id: &str) -> FinishedResult {
        match self.jobs.get(id) {
            None => FinishedResult::Missing,
            Some(job) => match job.state {
                JobState::Completed => FinishedResult::Completed(job.return_value.clone()),
                JobState::Failed => {
                    FinishedResult::Failed(job.failed_reason.clone().unwrap_or_default())
                }
                state => FinishedResult::NotFinished(state),
            },
        }
    }

    /// Makes a delayed job waiting now.
    pub fn promote(&mut self, id: &str, now: Millis) -> CoreResult<()> {
        lifecycle::promote(self, id, now)
    }

    /// Delays a waiting or delayed job until `delay_until`.
    pub fn reschedule(&mut self, id: &str, delay_until: Millis, now: Millis) -> CoreResult<()> {
        lifecycle::reschedule(self, id, delay_until, now)
    }

    /// Runs a finished job again: back to waiting with its attempts and failure cleared. A job
    /// with dedup options takes its key back, unless another unfinished job holds it: then the
    /// retry is refused.
    pub fn retry_job(&mut self, id: &str, reset_attempts: bool, now: Millis) -> CoreResult<()> {
        lifecycle::retry_job(self, id, reset_attempts, now)
    }

    pub fn update_priority(&mut self, id: &str, priority: u32, lifo: bool) -> CoreResult<()> {
        lifecycle::update_priority(self, id, priority, lifo)
    }

    pub fn update_data(&mut self, id: &str, data: &str) -> CoreResult<()> {
        check_payload(data, self.config.max_payload_bytes)?;
        let key = self.key(id)?;
        self.jobs.get_mut(&key).expect("job exists").data = Arc::from(data);
        Ok(())
    }

    pub fn update_progress(&mut self, id: &str, progress: &str, now: Millis) -> CoreResult<()> {
        let key = self.key(id)?;
        let progress: Arc<str> = Arc::from(progress);
        self.jobs.get_mut(&key).expect("job exists").progress = Arc::clone(&progress);
        self.events.push(
            now,
            "progress",
            Some(&key),
            Some(("data", Text::Shared(progress))),
        );
        Ok(())
    }

    /// Appends a log line; with `keep > 0` only the newest `keep` lines stay. Returns the
    /// number of lines kept.
    pub fn add_log(&mut self, id: &str, line: &str, keep: usize) -> CoreResult<usize> {
        check_log_line(id, line, self.config.max_payload_bytes)?;
        let key = self.key(id)?;
        let logs = &mut self.jobs.get_mut(&key).expect("job exists").logs;
        logs.push(line.to_owned());
        if keep > 0 && logs.len() > keep {
            let excess = logs.len() - keep;
            logs.drain(..excess);
        }
        Ok(logs.len())
    }

    /// Log lines `start..=end` (negative counts from the end) and the total number of lines.
    pub fn get_logs(
        &self,
        id: &str,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> CoreResult<(Vec<String>, usize)> {
        let job = self
            .jobs
            .get(id)
            .ok_or_else(|| CoreError::JobNotFound(id.to_owned()))?;
        let mut lines: Vec<&String> = job.logs.iter().collect();
        if !ascending {
            lines.reverse();
        }
        let page = lines[index_range(lines.len(), start, end)]
            .iter()
            .map(|s| (*s).clone())
            .collect();
        Ok((page, lines.len()))
    }

    /// Keeps only the newest `keep` log lines (0 clears them).
    pub fn clear_logs(&mut self, id: &str, keep: usize) -> CoreResult<()> {
        let key = self.key(id)?;
        let logs = &mut self.jobs.get_mut(&key).expect("job exists").logs;
        let excess = logs.len().saturating_sub(keep);
        logs.drain(..excess);
        Ok(())
    }

    pub fn save_stacktrace(
        &mut self,
        id: &str,
        stacktrace: Vec<String>,
        reason: Option<&str>,
    ) -> CoreResult<()> {
        let key = self.key(id)?;
        let job = self.jobs.get_mut(&key).expect("job exists");
        job.stacktrace = stacktrace;
        if let Some(reason) = reason {
            job.failed_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    /// Removes a job, unless a live lock holds it.
    pub fn remove(&mut self, id: &str, now: Millis) -> CoreResult<()> {
        lifecycle::remove(self, id, now)
    }

    pub fn pause(&mut self, now: Millis) {
        if !self.paused {
            self.paused = true;
            self.events.push(now, "paused", None, None);
        }
    }

    pub fn resume(&mut self, now: Millis) {
        if self.paused {
            self.paused = false;
            self.events.push(now, "resumed", None, None);
        }
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Removes every waiting job (and delayed ones with `delayed`, except the pending
    /// occurrences of job schedulers, as BullMQ does); returns how many.
    pub fn drain(&mut self, delayed: bool, now: Millis) -> usize {
        lifecycle::drain(self, delayed, now).expect("the memory store does not fail")
    }

    /// Removes up to `limit` (0 = all) jobs in `state` older than `grace` ms
    /// (`lifecycle::clean`).
    pub fn clean(
        &mut self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> Vec<String> {
        lifecycle::clean(self, grace, limit, state, now).expect("the memory store does not fail")
    }

    /// Deletes everything in the queue, job schedulers, metrics and workers included. Pauses first; refused (and
    /// left paused) while jobs are active, unless `force`. Afterwards the queue is empty and
    /// not paused.
    pub fn obliterate(&mut self, force: bool, now: Millis) -> CoreResult<()> {
        self.pause(now);
        if !force && !self.active.is_empty() {
            return Err(CoreError::Refused(format!(
                "cannot obliterate a queue with {} active jobs (use force=True)",
                self.active.len()
            )));
        }
        self.flow_on_obliterate(now);
        self.jobs.clear();
        self.waiting.clear();
        self.delayed.clear();
        self.active.clear();
        self.waiting_children.clear();
        self.completed.clear();
        self.failed.clear();
        // Nothing of the queue is left, counters included (BullMQ deletes every key): the next
        // automatic id is "1" and the next event id 1, on every backend.
        self.events.restart();
        self.next_auto_id = 1;
        self.dedup.clear();
        self.schedulers.clear();
        self.observed = Default::default();
        self.rate_limit = None;
        self.rate_window = (0, 0);
        self.rate_until = 0;
        self.max_active = None;
        self.paused = false;
        Ok(())
    }

    pub fn set_rate_limit(&mut self, max: u32, duration: Millis) -> CoreResult<()> {
        crate::jobs::model::check_rate_limit(max, duration)?;
        self.rate_limit = Some((max, duration));
        Ok(())
    }

    pub fn get_rate_limit(&self) -> Option<(u32, Millis)> {
        self.rate_limit
    }

    pub fn clear_rate_limit(&mut self) {
        self.rate_limit = None;
    }

    /// Holds every claim back for `duration` ms from `now` (BullMQ's `rateLimit`); a later
    /// call replaces the wait. The windowed limit still applies: the later end wins.
    pub fn rate_limit(&mut self, duration: Millis, now: Millis) -> CoreResult<()> {
        self.rate_until = crate::jobs::model::rate_limit_end(duration, now)?;
        Ok(())
    }

    /// How long the rate limits still hold claims back at `now`, in ms (0: they do not).
    pub fn get_rate_limit_ttl(&self, now: Millis) -> Millis {
        self.rate_limited_until(now).map_or(0, |end| end - now)
    }

    /// Ends the manual wait and the current window (the next claim opens a new one).
    pub fn remove_rate_limit_key(&mut self) {
        self.rate_until = 0;
        self.rate_window = (0, 0);
    }

    pub fn set_max_active(&mut self, max: Option<u32>) -> CoreResult<()> {
        crate::jobs::model::check_max_active(max)?;
        self.max_active = max;
        Ok(())
    }

    pub fn get_max_active(&self) -> Option<u32> {
        self.max_active
    }

    pub fn read_events(&self, start: u64, end: u64, limit: usize) -> Vec<StreamEvent> {
        self.events.read(start, end, limit)
    }

    pub fn trim_events(&mut self, max_len: usize) -> usize {
        self.events.trim(max_len)
    }

    pub fn last_event_id(&self) -> u64 {
        self.events.last_id()
    }

    /// Appends a custom event (`JobEvents::publish_event`); returns its id.
    pub fn publish_event(
        &mut self,
        name: String,
        job_id: Option<String>,
        data: String,
        now: Millis,
    ) -> CoreResult<u64> {
        check_custom_event(&name, &data, self.config.max_payload_bytes)?;
        let job = job_id.map(Arc::<str>::from);
        self.events.push_fields(
            now,
            CUSTOM_EVENT,
            job.as_ref(),
            Some(("name", Text::Owned(name))),
            Some(("data", Text::Owned(data))),
        );
        Ok(self.events.last_id())
    }
}
