//! `RedisJobBackend`: `RedisBackend` as a `JobBackend` (the bindings hold it as a trait object).
//! Each method clones the shared backend into a `'static` future.

use std::sync::Arc;

use lanemq_core::jobs::{
    check_payload, AddedNode, BoxFuture, Completion, Dependencies, DependencyCounts, FailOutcome,
    Failure, FinishedResult, FlowNode, Job, JobAdmin, JobDedup, JobEvents, JobFlows, JobLifecycle,
    JobReads, JobScheduler, JobSchedulers, JobState, Millis, NewJob, StreamEvent, Template,
};
use lanemq_core::schedule::ScheduleSpec;
use lanemq_core::CoreResult;

use crate::backend::RedisBackend;

#[derive(Clone)]
pub struct RedisJobBackend {
    backend: Arc<RedisBackend>,
    max_payload_bytes: usize,
}

impl RedisJobBackend {
    pub fn new(backend: RedisBackend, max_payload_bytes: usize) -> Self {
        Self {
            backend: Arc::new(backend),
            max_payload_bytes,
        }
    }

    pub(crate) fn backend(&self) -> &Arc<RedisBackend> {
        &self.backend
    }

    /// The server whose connections this queue shares.
    pub fn server(&self) -> &Arc<crate::Server> {
        self.backend.server()
    }

    /// Whether this queue connected and checked the server (`RedisBackend::ready`).
    pub fn is_ready(&self) -> bool {
        self.backend.is_ready()
    }

    /// Connects and checks the server for this queue (`RedisBackend::ready`).
    pub async fn backend_ready(&self) -> CoreResult<()> {
        self.backend.ready().await
    }

    pub(crate) fn max_payload_bytes(&self) -> usize {
        self.max_payload_bytes
    }
}

/// `backend.$method(args...)` as a boxed future over a clone of the shared backend.
macro_rules! call {
    ($self:ident, |$b:ident| $body:expr) => {{
        let $b = Arc::clone(&$self.backend);
        Box::pin(async move { $body.await })
    }};
}

impl JobLifecycle for RedisJobBackend {
    fn add(&self, job: NewJob, now: Millis) -> BoxFuture<(Job, bool)> {
        let limit = self.max_payload_bytes;
        call!(self, |b| async move {
            Ok(b.add_bulk(vec![job], now, limit).await?.remove(0))
        })
    }

    fn add_bulk(&self, jobs: Vec<NewJob>, now: Millis) -> BoxFuture<Vec<(Job, bool)>> {
        let limit = self.max_payload_bytes;
        call!(self, |b| b.add_bulk(jobs, now, limit))
    }

    fn claim(
        &self,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<Vec<Job>> {
        call!(self, |b| async move {
            b.claim(&worker_id, lease, max_jobs, now).await
        })
    }

    fn wait_for_job(&self, timeout: Option<Millis>) -> BoxFuture<bool> {
        call!(self, |b| b.wait_for_job(timeout))
    }

    fn complete_many(&self, items: Vec<Completion>, now: Millis) -> BoxFuture<Vec<CoreResult<()>>> {
        call!(self, |b| b.complete_many(items, now))
    }

    fn complete_and_claim(
        &self,
        items: Vec<Completion>,
        worker_id: String,
        lease: Millis,
        max_jobs: usize,
        now: Millis,
    ) -> BoxFuture<(Vec<CoreResult<()>>, Vec<Job>)> {
        call!(self, |b| async move {
            b.complete_and_claim(items, &worker_id, lease, max_jobs, now)
                .await
        })
    }

    fn fail_many(
        &self,
        items: Vec<Failure>,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<FailOutcome>>> {
        call!(self, |b| b.fail_many(items, now))
    }

    fn renew_many(
        &self,
        items: Vec<(String, String)>,
        lease: Millis,
        now: Millis,
    ) -> BoxFuture<Vec<CoreResult<()>>> {
        call!(self, |b| b.renew_many(items, lease, now))
    }

    fn move_to_delayed(
        &self,
        id: String,
        token: String,
        until: Millis,
        now: Millis,
    ) -> BoxFuture<()> {
        call!(self, |b| b.move_to_delayed(id, token, until, now))
    }

    fn release(&self, id: String, token: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.release(id, token, now))
    }

    fn recover_stalled(&self, now: Millis) -> BoxFuture<(Vec<String>, Vec<String>)> {
        call!(self, |b| b.recover_stalled(now))
    }

    fn holds_lock(&self, id: String, token: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.holds_lock(id, token, now))
    }
}

impl JobReads for RedisJobBackend {
    fn get_job(&self, id: String) -> BoxFuture<Option<Job>> {
        call!(self, |b| async move { b.get_job(&id).await })
    }

    fn get_state(&self, id: String) -> BoxFuture<Option<JobState>> {
        call!(self, |b| async move { b.get_state(&id).await })
    }

    fn get_job_counts(&self, states: Vec<JobState>) -> BoxFuture<Vec<(JobState, usize)>> {
        call!(self, |b| b.get_job_counts(states))
    }

    fn count_pending(&self) -> BoxFuture<usize> {
        call!(self, |b| b.count_pending())
    }

    fn get_counts_per_priority(&self, priorities: Vec<u32>) -> BoxFuture<Vec<(u32, usize)>> {
        call!(self, |b| b.get_counts_per_priority(priorities))
    }

    fn list_jobs(
        &self,
        states: Vec<JobState>,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<Job>> {
        call!(self, |b| b.list_jobs(states, start, end, ascending))
    }

    fn finished_result(&self, id: String) -> BoxFuture<FinishedResult> {
        call!(self, |b| async move { b.finished_result(&id).await })
    }

    fn wait_finished(&self, id: String, timeout: Option<Millis>) -> BoxFuture<FinishedResult> {
        call!(self, |b| async move { b.wait_finished(&id, timeout).await })
    }

    fn get_logs(
        &self,
        id: String,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<(Vec<String>, usize)> {
        call!(self, |b| b.get_logs(id, start, end, ascending))
    }
}

impl JobAdmin for RedisJobBackend {
    fn promote(&self, id: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.promote(id, now))
    }

    fn reschedule(&self, id: String, until: Millis, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.reschedule(id, until, now))
    }

    fn retry_job(&self, id: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.retry_job(id, now))
    }

    fn update_priority(&self, id: String, priority: u32, lifo: bool) -> BoxFuture<()> {
        call!(self, |b| b.update_priority(id, priority, lifo))
    }

    fn update_data(&self, id: String, data: String) -> BoxFuture<()> {
        let limit = self.max_payload_bytes;
        call!(self, |b| async move {
            check_payload(&data, limit)?;
            b.update_data(id, data).await
        })
    }

    fn update_progress(&self, id: String, progress: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.update_progress(id, progress, now))
    }

    fn add_log(&self, id: String, line: String, keep: usize) -> BoxFuture<usize> {
        call!(self, |b| b.add_log(id, line, keep))
    }

    fn clear_logs(&self, id: String, keep: usize) -> BoxFuture<()> {
        call!(self, |b| b.clear_logs(id, keep))
    }

    fn save_stacktrace(
        &self,
        id: String,
        lines: Vec<String>,
        reason: Option<String>,
    ) -> BoxFuture<()> {
        call!(self, |b| b.save_stacktrace(id, lines, reason))
    }

    fn remove(&self, id: String, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.remove(id, now))
    }

    fn pause(&self, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.pause(now))
    }

    fn resume(&self, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.resume(now))
    }

    fn is_paused(&self) -> BoxFuture<bool> {
        call!(self, |b| b.is_paused())
    }

    fn drain(&self, delayed: bool, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.drain(delayed, now))
    }

    fn clean(
        &self,
        grace: Millis,
        limit: usize,
        state: JobState,
        now: Millis,
    ) -> BoxFuture<Vec<String>> {
        call!(self, |b| b.clean(grace, limit, state, now))
    }

    fn obliterate(&self, force: bool, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.obliterate(force, now))
    }

    fn set_rate_limit(&self, max: u32, duration: Millis) -> BoxFuture<()> {
        call!(self, |b| b.set_rate_limit(max, duration))
    }

    fn get_rate_limit(&self) -> BoxFuture<Option<(u32, Millis)>> {
        call!(self, |b| b.get_rate_limit())
    }

    fn clear_rate_limit(&self) -> BoxFuture<()> {
        call!(self, |b| b.clear_rate_limit())
    }

    fn rate_limit(&self, duration: Millis, now: Millis) -> BoxFuture<()> {
        call!(self, |b| b.rate_limit(duration, now))
    }

    fn get_rate_limit_ttl(&self, now: Millis) -> BoxFuture<Millis> {
        call!(self, |b| b.get_rate_limit_ttl(now))
    }

    fn remove_rate_limit_key(&self) -> BoxFuture<()> {
        call!(self, |b| b.remove_rate_limit_key())
    }

    fn remove_orphaned_jobs(&self) -> BoxFuture<usize> {
        call!(self, |b| b.remove_orphaned_jobs())
    }

    fn set_max_active(&self, max: Option<u32>) -> BoxFuture<()> {
        call!(self, |b| b.set_max_active(max))
    }

    fn get_max_active(&self) -> BoxFuture<Option<u32>> {
        call!(self, |b| b.get_max_active())
    }

    fn is_maxed(&self) -> BoxFuture<bool> {
        call!(self, |b| b.is_maxed())
    }

    fn close(&self) -> BoxFuture<()> {
        self.backend.close();
        Box::pin(std::future::ready(Ok(())))
    }
}

impl JobEvents for RedisJobBackend {
    fn read_events(&self, start: u64, end: u64, limit: usize) -> BoxFuture<Vec<StreamEvent>> {
        call!(self, |b| b.read_events(start, end, limit))
    }

    fn trim_events(&self, max_len: usize) -> BoxFuture<usize> {
        call!(self, |b| b.trim_events(max_len))
    }

    fn last_event_id(&self) -> BoxFuture<u64> {
        call!(self, |b| b.last_event_id())
    }

    fn wait_events(&self, after: u64, timeout: Option<Millis>) -> BoxFuture<bool> {
        call!(self, |b| b.wait_events(after, timeout))
    }
}

impl JobDedup for RedisJobBackend {
    fn get_deduplication_job_id(&self, dedup_id: String, now: Millis) -> BoxFuture<Option<String>> {
        call!(self, |b| b.get_deduplication_job_id(dedup_id, now))
    }

    fn remove_deduplication_key(&self, dedup_id: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_deduplication_key(dedup_id, now))
    }
}

impl JobFlows for RedisJobBackend {
    fn add_flow(&self, flow: FlowNode, now: Millis) -> BoxFuture<AddedNode> {
        let limit = self.max_payload_bytes;
        call!(self, |b| b.add_flow(flow, now, limit))
    }

    fn add_children(
        &self,
        parent_id: String,
        token: String,
        children: Vec<FlowNode>,
        now: Millis,
    ) -> BoxFuture<Vec<AddedNode>> {
        let limit = self.max_payload_bytes;
        call!(self, |b| b
            .add_children(parent_id, token, children, now, limit))
    }

    fn get_dependencies(
        &self,
        parent_id: String,
        cursors: [usize; 4],
        count: Option<usize>,
    ) -> BoxFuture<Dependencies> {
        call!(self, |b| b.get_dependencies(parent_id, cursors, count))
    }

    fn get_dependencies_count(&self, parent_id: String) -> BoxFuture<DependencyCounts> {
        call!(self, |b| b.get_dependencies_count(parent_id))
    }

    fn remove_child_dependency(&self, child_id: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_child_dependency(child_id, now))
    }

    fn remove_unprocessed_children(&self, parent_id: String, now: Millis) -> BoxFuture<usize> {
        call!(self, |b| b.remove_unprocessed_children(parent_id, now))
    }
}

impl JobSchedulers for RedisJobBackend {
    fn upsert_scheduler(
        &self,
        key: String,
        spec: ScheduleSpec,
        template: Template,
        now: Millis,
    ) -> BoxFuture<Job> {
        let limit = self.max_payload_bytes;
        call!(self, |b| b
            .upsert_scheduler(key, spec, template, now, limit))
    }

    fn get_scheduler(&self, key: String) -> BoxFuture<Option<JobScheduler>> {
        call!(self, |b| b.get_scheduler(key))
    }

    fn list_schedulers(
        &self,
        start: i64,
        end: i64,
        ascending: bool,
    ) -> BoxFuture<Vec<JobScheduler>> {
        call!(self, |b| b.list_schedulers(start, end, ascending))
    }

    fn count_schedulers(&self) -> BoxFuture<usize> {
        call!(self, |b| b.count_schedulers())
    }

    fn remove_scheduler(&self, key: String, now: Millis) -> BoxFuture<bool> {
        call!(self, |b| b.remove_scheduler(key, now))
    }
}
