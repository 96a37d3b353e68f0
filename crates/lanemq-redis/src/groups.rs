//! Groups on Redis (`JobGroups`): the management calls, one op of `lua/groups-2.lua` each.
//! The turns and limits at the claim, and the groups' state through every transition, are
//! the Lua helpers of `lua/includes/common.lua` and `jobs.lua` (lua/README.md, "Groups").

use lanemq_core::jobs::{
    validate_group, wall_clock_ms, BoxFuture, GroupLimits, GroupRow, JobGroups, JobState, Millis,
};
use lanemq_core::{CoreError, CoreResult};
use redis::Value;

use crate::backend::RedisBackend;
use crate::decode::{items, text, unexpected};
use crate::job_backend::{call, RedisJobBackend};
use crate::scripts;

/// Limits as the scripts keep them: "concurrency,rate max,rate duration,max_size", each empty
/// for none; "" for no limit at all (the field is deleted).
fn limits_text(limits: &GroupLimits) -> String {
    if *limits == GroupLimits::default() {
        return String::new();
    }
    let field = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    format!(
        "{},{},{},{}",
        field(limits.concurrency.map(u64::from)),
        field(limits.rate.map(|(max, _)| u64::from(max))),
        field(limits.rate.map(|(_, duration)| duration)),
        field(limits.max_size.map(u64::from)),
    )
}

fn limits_of(text: &str) -> CoreResult<GroupLimits> {
    if text.is_empty() {
        return Ok(GroupLimits::default());
    }
    let bad = || unexpected("group limits");
    let fields: Vec<Option<u64>> = text
        .split(',')
        .map(|f| {
            if f.is_empty() {
                Ok(None)
            } else {
                f.parse().map(Some).map_err(|_| bad())
            }
        })
        .collect::<CoreResult<_>>()?;
    let [concurrency, rate_max, rate_duration, max_size] = fields.as_slice() else {
        return Err(bad());
    };
    let small = |v: Option<u64>| v.map(|v| u32::try_from(v).map_err(|_| bad())).transpose();
    Ok(GroupLimits {
        concurrency: small(*concurrency)?,
        rate: small(*rate_max)?.zip(*rate_duration),
        max_size: small(*max_size)?,
    })
}

/// Refuses a rate whose max or duration is 0 (no window could ever hold a claim).
fn check_limits(limits: &GroupLimits) -> CoreResult<()> {
    if let Some((max, duration)) = limits.rate {
        if max == 0 || duration == 0 {
            return Err(CoreError::InvalidConfig(format!(
                "invalid group rate: ({max}, {duration} ms) (both must be positive)"
            )));
        }
    }
    Ok(())
}

/// The states asked for, each once, in the order asked (every state when none).
fn states_asked(states: Vec<JobState>) -> Vec<JobState> {
    if states.is_empty() {
        return JobState::ALL.to_vec();
    }
    let mut out: Vec<JobState> = Vec::new();
    for state in states {
        if !out.contains(&state) {
            out.push(state);
        }
    }
    out
}

fn state_code(state: JobState) -> usize {
    JobState::ALL.iter().position(|s| *s == state).unwrap_or(0)
}

fn number(value: &Value) -> CoreResult<usize> {
    text(value)
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| unexpected("a group count"))
}

impl RedisBackend {
    async fn groups_op(&self, now: Millis, args: &[&str]) -> CoreResult<Vec<Value>> {
        items(self.change(&scripts::GROUPS, now, args).await?)
    }

    async fn group_limits_read(&self, group: &str) -> CoreResult<GroupLimits> {
        let reply = self
            .groups_op(wall_clock_ms(), &["get_limits", group])
            .await?;
        limits_of(&reply.first().and_then(text).unwrap_or_default())
    }

    async fn group_counts(&self, group: &str) -> CoreResult<Vec<usize>> {
        let reply = self.groups_op(wall_clock_ms(), &["counts", group]).await?;
        reply.iter().map(number).collect()
    }

    async fn group_list(&self, start: usize, count: usize) -> CoreResult<(Vec<GroupRow>, usize)> {
        let (start, count) = (start.to_string(), count.to_string());
        let reply = self
            .groups_op(wall_clock_ms(), &["list", &start, &count])
            .await?;
        let mut values = reply.iter();
        let total = number(values.next().ok_or_else(|| unexpected("a group list"))?)?;
        let mut rows = Vec::new();
        while let Some(name) = values.next() {
            let name = text(name).ok_or_else(|| unexpected("a group name"))?;
            let paused = number(values.next().ok_or_else(|| unexpected("a group row"))?)? == 1;
            let mut counts = Vec::with_capacity(JobState::ALL.len());
            for state in JobState::ALL {
                let n = number(values.next().ok_or_else(|| unexpected("a group row"))?)?;
                counts.push((state, n));
            }
            rows.push(GroupRow {
                name,
                paused,
                counts,
            });
        }
        Ok((rows, total))
    }

    async fn group_ids(&self, group: &str, states: &[JobState]) -> CoreResult<Vec<String>> {
        let codes: String = states.iter().map(|s| state_code(*s).to_string()).collect();
        let reply = self
            .groups_op(wall_clock_ms(), &["ids", group, &codes])
            .await?;
        reply
            .iter()
            .map(|v| text(v).ok_or_else(|| unexpected("a job id")))
            .collect()
    }

    /// Removes the group's waiting and delayed jobs one by one, as `remove` would each; a job
    /// `remove` refuses (locked, a scheduler's pending occurrence, gone meanwhile) is skipped.
    async fn group_remove(&self, group: &str, now: Millis) -> CoreResult<usize> {
        let ids = self
            .group_ids(group, &[JobState::Waiting, JobState::Delayed])
            .await?;
        let mut removed = 0;
        for id in ids {
            match self.remove(id, now).await {
                Ok(()) => removed += 1,
                Err(
                    CoreError::Storage(m) | CoreError::Connection(m) | CoreError::Authentication(m),
                ) => return Err(CoreError::Storage(m)),
                Err(_) => {}
            }
        }
        Ok(removed)
    }
}

impl JobGroups for RedisJobBackend {
    fn set_group_defaults(&self, limits: GroupLimits) -> BoxFuture<()> {
        call!(self, |b| async move {
            check_limits(&limits)?;
            let text = limits_text(&limits);
            b.groups_op(wall_clock_ms(), &["defaults", &text])
                .await
                .map(drop)
        })
    }

    fn get_group_defaults(&self) -> BoxFuture<GroupLimits> {
        call!(self, |b| b.group_limits_read(""))
    }

    fn set_group_limits(&self, group: String, limits: GroupLimits) -> BoxFuture<()> {
        call!(self, |b| async move {
            validate_group(&group)?;
            check_limits(&limits)?;
            let text = limits_text(&limits);
            b.groups_op(wall_clock_ms(), &["limits", &group, &text])
                .await
                .map(drop)
        })
    }

    fn get_group_limits(&self, group: String) -> BoxFuture<GroupLimits> {
        call!(self, |b| async move {
            validate_group(&group)?;
            b.group_limits_read(&group).await
        })
    }

    fn pause_group(&self, group: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| async move {
            validate_group(&group)?;
            b.groups_op(now, &["pause", &group]).await.map(drop)
        })
    }

    fn resume_group(&self, group: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| async move {
            validate_group(&group)?;
            b.groups_op(now, &["resume", &group]).await.map(drop)
        })
    }

    fn is_group_paused(&self, group: String) -> BoxFuture<bool> {
        call!(self, |b| async move {
            validate_group(&group)?;
            let reply = b.groups_op(wall_clock_ms(), &["paused", &group]).await?;
            Ok(number(reply.first().ok_or_else(|| unexpected("a flag"))?)? == 1)
        })
    }

    fn get_group_counts(
        &self,
        group: String,
        states: Vec<JobState>,
    ) -> BoxFuture<Vec<(JobState, usize)>> {
        call!(self, |b| async move {
            validate_group(&group)?;
            let counts = b.group_counts(&group).await?;
            states_asked(states)
                .into_iter()
                .map(|s| {
                    let n = counts.get(state_code(s)).copied();
                    n.map(|n| (s, n)).ok_or_else(|| unexpected("group counts"))
                })
                .collect()
        })
    }

    fn list_groups(&self, start: usize, count: usize) -> BoxFuture<(Vec<GroupRow>, usize)> {
        call!(self, |b| b.group_list(start, count))
    }

    fn group_job_ids(&self, group: String, states: Vec<JobState>) -> BoxFuture<Vec<String>> {
        call!(self, |b| async move {
            validate_group(&group)?;
            b.group_ids(&group, &states_asked(states)).await
        })
    }

    fn remove_group(&self, group: String, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| async move {
            validate_group(&group)?;
            b.group_remove(&group, now).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_go_to_text_and_back() {
        for limits in [
            GroupLimits::default(),
            GroupLimits {
                concurrency: Some(2),
                rate: Some((5, 1000)),
                max_size: None,
            },
            GroupLimits {
                concurrency: None,
                rate: None,
                max_size: Some(7),
            },
        ] {
            assert_eq!(limits_of(&limits_text(&limits)).unwrap(), limits);
        }
        assert_eq!(limits_text(&GroupLimits::default()), "");
    }
}
