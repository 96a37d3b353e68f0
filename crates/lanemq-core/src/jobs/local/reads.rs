//! `JobReads` for the local backend: the shared reads (`lifecycle::manage`) on the file, run on
//! the caller's own connection (`direct`), never queued behind writes, each paging in SQL.

use std::time::Duration;

use tokio::sync::oneshot;

use crate::jobs::contract::{BoxFuture, JobReads, QueueStats};
use crate::jobs::lifecycle::manage;
use crate::jobs::model::{FinishedResult, Job, JobState, LogLine, Millis};
use crate::jobs::search::JobFilter;

use super::{rows, LocalBackend};

impl JobReads for LocalBackend {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        self.direct(move |conn, _| rows::load(conn, &id))
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        self.direct_store(move |s| manage::get_state(s, &id))
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        self.direct_store(move |s| manage::get_job_counts(s, &states))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        self.direct_store(|s| manage::count_pending(s))
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        self.direct_store(move |s| manage::get_counts_per_priority(s, &priorities))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        self.direct_store(move |s| Ok(manage::list_jobs(s, &states, start, end, ascending)?.0))
    }

    fn list_jobs_with_total(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<Job>, usize)> {
        self.direct_store(move |s| manage::list_jobs(s, &states, start, end, ascending))
    }

    fn search_jobs(
        &self,
        states: Vec<JobState>,
        filter: JobFilter,
        page: (usize, usize),
        ascending: bool,
        now: Millis,
    ) -> BoxFuture<(Vec<Job>, Option<usize>)> {
        self.direct_store(move |s| manage::search_jobs(s, &states, &filter, page, ascending, now))
    }

    /// One operation, so in one transaction of the writer: the values agree.
    fn get_stats(&self, now: Millis) -> BoxFuture<QueueStats> {
        self.direct_store(move |s| manage::get_stats(s, now))
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        self.direct_store(move |s| manage::finished_result(s, &id))
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        let backend = self.clone();
        Box::pin(async move {
            // Registered before the first look, so an outcome in this process cannot slip by.
            let (sender, mut receiver) = oneshot::channel();
            backend
                .shared
                .waiters
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id.clone())
                .or_default()
                .push(sender);
            let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_millis(t));
            // The wait begins at its first look, which reads the newest event's id with the
            // job: a job missing then was removed before the wait began (`remove_on_complete`
            // as its completion was recorded, say) and is `Missing`, as in memory and as BullMQ
            // rejects it ("missing key"). One that another process finishes and removes at once
            // later is found missing by a later look: an event after the start tells how it
            // ended. (This process's finishes tell the waiter, registered above.)
            let mut start = None;
            backend.shared.listen(); // (before the first look)
            loop {
                // Armed before the look: a commit of another process after it still wakes us.
                let notified = backend.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let look = id.clone();
                let (since, result) = backend
                    .direct_store(move |s| {
                        let since = match start {
                            Some(since) => since,
                            None => super::events::last_event_id(s.conn)?,
                        };
                        let result = match manage::finished_result(s, &look)? {
                            FinishedResult::Missing => {
                                super::events::outcome_after(s.conn, &look, since)?
                            }
                            other => other,
                        };
                        Ok((since, result))
                    })
                    .await?;
                start = Some(since);
                if !matches!(result, FinishedResult::NotFinished(_)) {
                    return Ok(result);
                }
                let mut until = tokio::time::Instant::now() + backend.poll_period();
                if let Some(deadline) = deadline {
                    if tokio::time::Instant::now() >= deadline {
                        return Ok(result);
                    }
                    until = until.min(deadline);
                }
                tokio::select! {
                    told = &mut receiver => {
                        if let Ok(told) = told {
                            return Ok(told);
                        }
                        // The writer is gone: the next look reports the queue closed.
                        tokio::time::sleep_until(until).await;
                    }
                    () = &mut notified => {}
                    () = tokio::time::sleep_until(until) => {}
                }
            }
        })
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<LogLine>, usize)> {
        self.direct_store(move |s| manage::get_logs(s, &id, start, end, ascending))
    }

    fn queue_names(&self) -> BoxFuture<Vec<String>> {
        let names = match &self.dir {
            Some(dir) => queue_files(dir),
            None => Ok(vec![self.queue.to_string()]),
        };
        crate::jobs::contract::ready(names)
    }
}

/// The queues whose files are in `dir`: the names of its `<queue>.sqlite3` files, sorted.
/// (A queue named by a file of its own, `.db` say, has no siblings: it lists itself.)
fn queue_files(dir: &std::path::Path) -> crate::error::CoreResult<Vec<String>> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        crate::error::CoreError::Storage(format!("cannot list {}: {e}", dir.display()))
    })?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            if path.extension()? != "sqlite3" || !path.is_file() {
                return None;
            }
            Some(path.file_stem()?.to_str()?.to_owned())
        })
        .collect();
    names.sort();
    Ok(names)
}
