//! The lanes' dispatcher: commands, their lanes' queues, retries, dead letters, metrics and
//! alerts. `pop` starts a command from the lane that the dispatch decision (`dispatch`) picks:
//! the lowest effective priority number that has pending work and, by its capacity
//! (`capacity`), a free slot (its own and, with a global cap, one not reserved by another
//! lane's `min_concurrency`) and a rate-limit token. FIFO within a lane. Retries wait in a timer
//! heap without holding a slot.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::{CoreError, CoreResult};

use super::capacity::{Capacity, LocalCapacity};
use super::config::{AlertThresholds, LaneConfig};
use super::dispatch::{self, Candidate};
use super::metrics::LaneMetrics;
use super::signals::{AlertLevel, AlertWatch, Signal};
use super::slab::Slab;
use super::Micros;

#[derive(Debug, Clone, Default)]
pub struct DispatcherConfig {
    pub lanes: Vec<LaneConfig>,
    /// A cap over all lanes; `None` means each lane is limited only by its own maximum.
    pub max_concurrency: Option<u32>,
    pub dead_letter_capacity: usize,
    pub alerts: AlertThresholds,
}

impl DispatcherConfig {
    fn validate(&self) -> CoreResult<()> {
        if self.lanes.is_empty() {
            return Err(CoreError::InvalidConfig(
                "lanes: at least one lane is needed".into(),
            ));
        }
        for (i, lane) in self.lanes.iter().enumerate() {
            lane.validate()?;
            if self.lanes[..i]
                .iter()
                .any(|other| other.lane_id == lane.lane_id)
            {
                return Err(CoreError::InvalidConfig(format!(
                    "duplicate lane_id: {:?}",
                    lane.lane_id
                )));
            }
        }
        if let Some(cap) = self.max_concurrency {
            let reserved: u64 = self
                .lanes
                .iter()
                .map(|l| u64::from(l.min_concurrency))
                .sum();
            if cap < 1 || u64::from(cap) < reserved {
                return Err(CoreError::InvalidConfig(format!(
                    "max_concurrency ({cap}) must be at least 1 and at least the sum of the \
                     lanes' min_concurrency ({reserved})"
                )));
            }
        }
        self.alerts.validate()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Active,
    Retrying,
}

#[derive(Debug, Clone)]
struct Command {
    lane: usize,
    state: State,
    attempt: u32,
    /// When it last became eligible to start: submission, or the end of a retry backoff.
    ready_at: Micros,
    started_at: Micros,
}

/// A command's record and the caller's payload for it (the bindings keep the Python handle
/// here, so finding the next command to run needs no lookup on the Python side).
#[derive(Debug)]
struct Entry<T> {
    command: Command,
    payload: T,
}

#[derive(Debug)]
struct Lane {
    config: LaneConfig,
    pending: VecDeque<u64>,
    retrying: u32,
    metrics: LaneMetrics,
    pressured: bool,
    depth_alert: AlertWatch,
    latency_alert: AlertWatch,
}

/// Why an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    Error,
    Timeout,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandFailOutcome {
    /// The command waits `delay` and then runs again as attempt `next_attempt`.
    Retry { next_attempt: u32, delay: Micros },
    /// No retry left (or not retryable): the command is in the dead-letter queue.
    DeadLettered { attempts: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub command_id: u64,
    pub command_type: String,
    pub lane_id: String,
    pub error: String,
    pub attempts: u32,
    /// Wall-clock time of the final failure, milliseconds since the Unix epoch.
    pub failed_at_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneStats {
    pub lane_id: String,
    pub priority: u32,
    pub pending: usize,
    pub active: u32,
    pub retrying: u32,
    pub min_concurrency: u32,
    pub max_concurrency: u32,
}

/// A started command: its id, lane index and attempt number (1 for the first run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    pub id: u64,
    pub lane: usize,
    pub attempt: u32,
}

#[derive(Debug)]
pub struct Dispatcher<T = ()> {
    lanes: Vec<Lane>,
    commands: Slab<Entry<T>>,
    retries: BinaryHeap<Reverse<(Micros, u64)>>,
    capacity: LocalCapacity,
    accepting: bool,
    dead_letters: VecDeque<DeadLetter>,
    dead_letter_capacity: usize,
    alerts: AlertThresholds,
    signals: Vec<Signal>,
}

impl<T> Dispatcher<T> {
    pub fn new(config: DispatcherConfig, now: Micros) -> CoreResult<Self> {
        config.validate()?;
        let capacity = LocalCapacity::new(&config.lanes, config.max_concurrency, now);
        let lanes = config
            .lanes
            .into_iter()
            .map(|config| Lane {
                config,
                pending: VecDeque::new(),
                retrying: 0,
                metrics: LaneMetrics::default(),
                pressured: false,
                depth_alert: AlertWatch::default(),
                latency_alert: AlertWatch::default(),
            })
            .collect();
        Ok(Self {
            lanes,
            commands: Slab::new(1),
            retries: BinaryHeap::new(),
            capacity,
            accepting: true,
            dead_letters: VecDeque::new(),
            dead_letter_capacity: config.dead_letter_capacity,
            alerts: config.alerts,
            signals: Vec::new(),
        })
    }

    pub fn lane_index(&self, lane_id: &str) -> CoreResult<usize> {
        self.lanes
            .iter()
            .position(|l| l.config.lane_id == lane_id)
            .ok_or_else(|| CoreError::UnknownLane(lane_id.to_owned()))
    }

    pub fn lane_config(&self, lane: usize) -> &LaneConfig {
        &self.lanes[lane].config
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// How many commands can run at once: the global cap, or the sum of the lanes' maxima.
    pub fn capacity(&self) -> u32 {
        self.capacity.total()
    }

    /// Queues a command at the back of its lane and returns its id.
    pub fn push(&mut self, lane: usize, now: Micros, payload: T) -> CoreResult<u64> {
        if !self.accepting {
            return Err(CoreError::Shutdown);
        }
        let lane_count = self.lanes.len();
        let Some(state) = self.lanes.get_mut(lane) else {
            return Err(CoreError::UnknownLane(format!("#{lane} of {lane_count}")));
        };
        let command = Command {
            lane,
            state: State::Pending,
            attempt: 0,
            ready_at: now,
            started_at: 0,
        };
        let id = self.commands.push(Entry { command, payload });
        state.pending.push_back(id);
        state.metrics.submitted += 1;
        self.after_depth_change(lane);
        Ok(id)
    }

    /// Starts the next command, if any may start now.
    pub fn pop(&mut self, now: Micros) -> Option<Started> {
        self.promote_due_retries(now);
        let lane = self.pick_lane(now)?;
        self.capacity.take(lane, now);
        let state = &mut self.lanes[lane];
        let id = state
            .pending
            .pop_front()
            .expect("picked lane has pending work");
        let command = self
            .commands
            .get_mut(id)
            .map(|e| &mut e.command)
            .expect("pending command is registered");
        command.state = State::Active;
        command.attempt += 1;
        command.started_at = now;
        state.metrics.started += 1;
        state
            .metrics
            .queue_wait
            .record(now.saturating_sub(command.ready_at));
        let started = Started {
            id,
            lane,
            attempt: command.attempt,
        };
        self.after_depth_change(lane);
        Some(started)
    }

    fn pick_lane(&mut self, now: Micros) -> Option<usize> {
        let commands = &self.commands;
        let candidates = self.lanes.iter().enumerate().filter_map(|(lane, state)| {
            let &oldest = state.pending.front()?;
            let ready_at = commands.get(oldest).map_or(now, |e| e.command.ready_at);
            Some(Candidate {
                lane,
                config: &state.config,
                waited: now.saturating_sub(ready_at),
            })
        });
        dispatch::next_lane(candidates, &mut self.capacity, now)
    }

    fn promote_due_retries(&mut self, now: Micros) {
        while let Some(&Reverse((due, id))) = self.retries.peek() {
            if due > now {
                break;
            }
            self.retries.pop();
            // A command cancelled while it waited is no longer registered: skip it.
            let Some(command) = self.commands.get_mut(id).map(|e| &mut e.command) else {
                continue;
            };
            if command.state != State::Retrying {
                continue;
            }
            command.state = State::Pending;
            let lane = command.lane;
            self.lanes[lane].retrying -= 1;
            self.lanes[lane].pending.push_back(id);
            self.after_depth_change(lane);
        }
    }

    /// Frees the slot of an active command, leaving its record for the caller to settle.
    fn release_slot(&mut self, id: u64) -> CoreResult<Command> {
        let command = self.command(id).ok_or(CoreError::UnknownCommand(id))?;
        if command.state != State::Active {
            return Err(CoreError::CommandState {
                id,
                state: state_name(command.state),
                expected: "active",
            });
        }
        let command = command.clone();
        self.capacity.give_back(command.lane);
        Ok(command)
    }

    /// Marks an active command done and returns how long it ran.
    pub fn complete(&mut self, id: u64, now: Micros) -> CoreResult<Micros> {
        let command = self.release_slot(id)?;
        self.commands.remove(id);
        let ran = now.saturating_sub(command.started_at);
        let lane = &mut self.lanes[command.lane];
        lane.metrics.completed += 1;
        lane.metrics.latency.record(ran);
        self.after_latency(command.lane, ran);
        Ok(ran)
    }

    /// Records a failed attempt: schedules a retry while the lane's policy allows one (and the
    /// failure is retryable), otherwise dead-letters the command.
    #[allow(clippy::too_many_arguments)]
    pub fn fail(
        &mut self,
        id: u64,
        now: Micros,
        kind: FailKind,
        retryable: bool,
        error: &str,
        command_type: &str,
        wall_ms: u64,
    ) -> CoreResult<CommandFailOutcome> {
        let command = self.release_slot(id)?;
        let ran = now.saturating_sub(command.started_at);
        let lane_index = command.lane;
        let lane = &mut self.lanes[lane_index];
        lane.metrics.latency.record(ran);
        if kind == FailKind::Timeout {
            lane.metrics.timed_out += 1;
        }
        let retry = &lane.config.retry;
        if retryable && command.attempt <= retry.max_retries {
            let delay = retry.delay_for(command.attempt);
            lane.metrics.retried += 1;
            lane.retrying += 1;
            let record = self
                .commands
                .get_mut(id)
                .map(|e| &mut e.command)
                .expect("released command is registered");
            record.state = State::Retrying;
            record.ready_at = now + delay;
            self.retries.push(Reverse((now + delay, id)));
            let next_attempt = command.attempt + 1;
            self.after_latency(lane_index, ran);
            return Ok(CommandFailOutcome::Retry {
                next_attempt,
                delay,
            });
        }
        self.commands.remove(id);
        lane.metrics.failed += 1;
        lane.metrics.dead_lettered += 1;
        let letter = DeadLetter {
            command_id: id,
            command_type: command_type.to_owned(),
            lane_id: lane.config.lane_id.clone(),
            error: error.to_owned(),
            attempts: command.attempt,
            failed_at_ms: wall_ms,
        };
        self.add_dead_letter(letter);
        self.after_latency(lane_index, ran);
        Ok(CommandFailOutcome::DeadLettered {
            attempts: command.attempt,
        })
    }

    /// Withdraws a command in any state. An active one frees its slot: call this only once its
    /// code has stopped running.
    pub fn cancel(&mut self, id: u64) -> CoreResult<()> {
        let command = self
            .commands
            .remove(id)
            .ok_or(CoreError::UnknownCommand(id))?
            .command;
        let lane = &mut self.lanes[command.lane];
        lane.metrics.cancelled += 1;
        match command.state {
            State::Pending => {
                if let Some(at) = lane.pending.iter().position(|&p| p == id) {
                    lane.pending.remove(at);
                }
                self.after_depth_change(command.lane);
            }
            State::Active => self.capacity.give_back(command.lane),
            // Its heap entry is skipped when it comes due.
            State::Retrying => lane.retrying -= 1,
        }
        Ok(())
    }

    /// How long until something time-gated (a retry backoff, a rate-limit token) may start,
    /// if nothing can start now. `None` when no such wait exists.
    pub fn next_wake(&mut self, now: Micros) -> Option<Micros> {
        let mut wake = self
            .retries
            .peek()
            .map(|Reverse((due, _))| due.saturating_sub(now));
        for (index, lane) in self.lanes.iter().enumerate() {
            if lane.pending.is_empty() {
                continue;
            }
            if let Some(wait) = self.capacity.token_wait(index, now) {
                wake = Some(wake.map_or(wait, |w| w.min(wait)));
            }
        }
        wake
    }

    fn command(&self, id: u64) -> Option<&Command> {
        self.commands.get(id).map(|e| &e.command)
    }

    /// The payload pushed with a command that has not finished.
    pub fn payload(&self, id: u64) -> Option<&T> {
        self.commands.get(id).map(|e| &e.payload)
    }

    /// Every payload, for a caller that must visit or clear them (a garbage collector).
    pub fn payloads(&self) -> impl Iterator<Item = &T> {
        self.commands.iter().map(|(_, e)| &e.payload)
    }

    pub fn payloads_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.commands.iter_mut().map(|e| &mut e.payload)
    }

    /// Payloads of the commands that wait to start (pending or waiting to retry), oldest first.
    pub fn waiting_payloads(&self) -> impl Iterator<Item = (u64, &T)> {
        self.commands
            .iter()
            .filter(|(_, e)| e.command.state != State::Active)
            .map(|(id, e)| (id, &e.payload))
    }

    /// Commands not yet finished: pending, active or waiting to retry.
    pub fn in_flight(&self) -> usize {
        self.commands.len()
    }

    pub fn attempt(&self, id: u64) -> Option<u32> {
        self.command(id).map(|c| c.attempt)
    }

    pub fn shutdown(&mut self) {
        self.accepting = false;
    }

    pub fn is_accepting(&self) -> bool {
        self.accepting
    }

    pub fn stats(&self) -> Vec<LaneStats> {
        self.lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| LaneStats {
                lane_id: lane.config.lane_id.clone(),
                priority: lane.config.priority,
                pending: lane.pending.len(),
                active: self.capacity.active(index),
                retrying: lane.retrying,
                min_concurrency: lane.config.min_concurrency,
                max_concurrency: lane.config.max_concurrency,
            })
            .collect()
    }

    pub fn metrics(&self) -> Vec<(&str, &LaneMetrics)> {
        self.lanes
            .iter()
            .map(|l| (l.config.lane_id.as_str(), &l.metrics))
            .collect()
    }

    /// Counts every lane's metrics from zero again: counters and the latency and queue-wait
    /// samples (the seed's metrics reset). Stats (pending, active) are state, not metrics.
    pub fn reset_metrics(&mut self) {
        for lane in &mut self.lanes {
            lane.metrics = LaneMetrics::default();
        }
    }

    pub fn dead_letters(&self) -> impl Iterator<Item = &DeadLetter> {
        self.dead_letters.iter()
    }

    /// Adds a letter, dropping the oldest past the capacity. Also used to restore stored letters.
    pub fn add_dead_letter(&mut self, letter: DeadLetter) {
        if self.dead_letter_capacity == 0 {
            return;
        }
        while self.dead_letters.len() >= self.dead_letter_capacity {
            self.dead_letters.pop_front();
        }
        self.dead_letters.push_back(letter);
    }

    /// Signals (pressure, idle, alerts) raised since the last call, oldest first.
    pub fn take_signals(&mut self) -> Vec<Signal> {
        std::mem::take(&mut self.signals)
    }

    fn after_depth_change(&mut self, lane_index: usize) {
        let lane = &mut self.lanes[lane_index];
        let pending = lane.pending.len();
        if let Some(threshold) = lane.config.pressure_threshold {
            if !lane.pressured && pending >= threshold as usize {
                lane.pressured = true;
                self.signals.push(Signal::Pressure {
                    lane: lane_index,
                    pending,
                });
            } else if lane.pressured && pending == 0 {
                lane.pressured = false;
                self.signals.push(Signal::Idle { lane: lane_index });
            }
        }
        let level = AlertLevel::classify(
            pending as u64,
            self.alerts.queue_depth_warning.map(u64::from),
            self.alerts.queue_depth_critical.map(u64::from),
        );
        if let Some(raised) = lane.depth_alert.update(level) {
            self.signals.push(Signal::DepthAlert {
                lane: lane_index,
                level: raised,
                pending,
            });
        }
    }

    fn after_latency(&mut self, lane_index: usize, ran: Micros) {
        let level = AlertLevel::classify(
            ran,
            self.alerts.latency_warning,
            self.alerts.latency_critical,
        );
        if let Some(raised) = self.lanes[lane_index].latency_alert.update(level) {
            self.signals.push(Signal::LatencyAlert {
                lane: lane_index,
                level: raised,
                latency: ran,
            });
        }
    }
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Pending => "pending",
        State::Active => "active",
        State::Retrying => "waiting to retry",
    }
}
