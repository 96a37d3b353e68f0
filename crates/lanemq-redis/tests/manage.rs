//! Managing jobs and the queue on a real redis-server: promote, reschedule, retry, edits,
//! logs, removal, pause, drain, clean, obliterate, the rate limit and the active cap.

mod common;

use common::{backend, completion, job, raw, store_field, stored_field, Server, T};
use lanemq_core::jobs::{
    Completion, Failure, FinishedResult, Job, JobState, LogLine, NewJob, MAX_PRIORITY,
};
use lanemq_core::CoreError;
use lanemq_redis::RedisBackend;

const LEASE: u64 = 1000;

async fn add(redis: &RedisBackend, jobs: Vec<NewJob>, now: u64) -> Vec<Job> {
    redis
        .add_bulk(jobs, now, 1 << 20)
        .await
        .unwrap()
        .into_iter()
        .map(|(job, _)| job)
        .collect()
}

async fn get(redis: &RedisBackend, id: &str) -> Job {
    redis.get_job(id).await.unwrap().expect("the job exists")
}

/// Claims `n` jobs and completes them at `now`; returns their ids.
async fn complete(redis: &RedisBackend, n: usize, now: u64) -> Vec<String> {
    let claimed = redis.claim("w", LEASE, n, now).await.unwrap();
    let done = claimed.iter().map(|j| completion(j, "\"ok\"")).collect();
    let outcomes = redis.complete_many(done, now).await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    claimed.iter().map(|j| j.id.to_string()).collect()
}

async fn claim_names(redis: &RedisBackend, now: u64) -> Vec<String> {
    redis
        .claim("w", LEASE, 100, now)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.name.to_string())
        .collect()
}

/// The events stream as (event, job, extra field and value), oldest first.
async fn events(server: &Server) -> Vec<(String, Option<String>, Option<(String, String)>)> {
    backend(server)
        .await
        .read_events(0, u64::MAX, 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.event.to_owned(),
                e.job_id.map(|j| j.to_string()),
                e.field.map(|(k, v)| (k.to_owned(), v.as_str().to_owned())),
            )
        })
        .collect()
}

async fn last_event(server: &Server) -> (String, Option<String>, Option<(String, String)>) {
    events(server).await.pop().expect("an event")
}

fn ev(
    event: &str,
    job: Option<&str>,
    field: Option<(&str, &str)>,
) -> (String, Option<String>, Option<(String, String)>) {
    (
        event.to_owned(),
        job.map(str::to_owned),
        field.map(|(k, v)| (k.to_owned(), v.to_owned())),
    )
}

fn state_error(error: CoreError) -> (&'static str, &'static str) {
    match error {
        CoreError::JobState {
            state, expected, ..
        } => (state, expected),
        other => panic!("expected a JobState error, got {other:?}"),
    }
}

#[tokio::test]
async fn promote_makes_a_delayed_job_waiting() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![job("first", |_| {}), job("later", |o| o.delay = 60_000)],
        T,
    )
    .await;
    let (first, later) = (jobs[0].id.to_string(), jobs[1].id.to_string());
    redis.promote(later.clone(), T + 1).await.unwrap();
    let promoted = get(&redis, &later).await;
    assert_eq!(promoted.state, JobState::Waiting);
    assert_eq!(promoted.delay_until, T + 60_000, "the due time stays");
    assert_eq!(
        last_event(&server).await,
        ev("waiting", Some(&later), Some(("prev", "delayed")))
    );
    assert_eq!(redis.counts().await.unwrap(), [2, 0, 0, 0, 0, 0]);
    assert_eq!(claim_names(&redis, T + 2).await, ["first", "later"]);

    let error = redis.promote(first.clone(), T + 3).await.unwrap_err();
    assert_eq!(state_error(error), ("active", "delayed"));
    assert_eq!(
        redis.promote("nope".into(), T).await,
        Err(CoreError::JobNotFound("nope".into()))
    );
}

#[tokio::test]
async fn promote_puts_a_lifo_job_in_front() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![
            job("a", |_| {}),
            job("lifo", |o| {
                o.delay = 5000;
                o.lifo = true
            }),
        ],
        T,
    )
    .await;
    redis.promote(jobs[1].id.to_string(), T).await.unwrap();
    assert_eq!(claim_names(&redis, T).await, ["lifo", "a"]);
}

#[tokio::test]
async fn reschedule_delays_waiting_and_delayed_jobs() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![
            job("w", |_| {}),
            job("d", |o| o.delay = 1000),
            job("a", |_| {}),
        ],
        T,
    )
    .await;
    let (w, d, a) = (
        jobs[0].id.to_string(),
        jobs[1].id.to_string(),
        jobs[2].id.to_string(),
    );
    // reschedule (BullMQ's changeDelay) takes delayed jobs only; delay_job waiting ones too.
    let error = redis
        .reschedule(w.clone(), T + 5000, T, false)
        .await
        .unwrap_err();
    assert_eq!(state_error(error), ("waiting", "delayed"));
    redis
        .reschedule(w.clone(), T + 5000, T, true)
        .await
        .unwrap();
    assert_eq!(
        last_event(&server).await,
        ev(
            "delayed",
            Some(&w),
            Some(("delay", &(T + 5000).to_string()))
        )
    );
    redis
        .reschedule(d.clone(), T + 9000, T, false)
        .await
        .unwrap();
    let (wj, dj) = (get(&redis, &w).await, get(&redis, &d).await);
    assert_eq!(
        (wj.state, wj.delay_until, dj.state, dj.delay_until),
        (JobState::Delayed, T + 5000, JobState::Delayed, T + 9000)
    );
    assert_eq!(redis.counts().await.unwrap(), [1, 2, 0, 0, 0, 0]);

    assert_eq!(claim_names(&redis, T + 4999).await, ["a"]);
    assert_eq!(claim_names(&redis, T + 5000).await, ["w"]);
    assert!(claim_names(&redis, T + 8999).await.is_empty());
    assert_eq!(claim_names(&redis, T + 9000).await, ["d"]);

    let error = redis.reschedule(a, T + 1, T, true).await.unwrap_err();
    assert_eq!(state_error(error), ("active", "waiting or delayed"));
    assert_eq!(
        redis.reschedule("nope".into(), T, T, false).await,
        Err(CoreError::JobNotFound("nope".into()))
    );
}

#[tokio::test]
async fn retry_job_runs_a_completed_job_again() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(&redis, vec![job("done", |_| {}), job("other", |_| {})], T).await;
    let done = jobs[0].id.to_string();
    assert_eq!(
        complete(&redis, 1, T + 1).await,
        std::slice::from_ref(&done)
    );
    redis
        .add_log(done.clone(), "kept".into(), 0, T)
        .await
        .unwrap();

    // Attempts kept (BullMQ's job.retry() without resetAttemptsMade).
    redis.retry_job(done.clone(), false, T + 2).await.unwrap();
    let retried = get(&redis, &done).await;
    assert_eq!(retried.state, JobState::Waiting);
    assert_eq!(
        (
            retried.attempts_made,
            retried.stalled_count,
            retried.finished_on,
            retried.processed_on,
            retried.return_value.clone(),
            retried.failed_reason.clone(),
        ),
        (1, 0, None, None, None, None)
    );
    assert_eq!(
        last_event(&server).await,
        ev("waiting", Some(&done), Some(("prev", "completed")))
    );
    assert_eq!(redis.counts().await.unwrap(), [2, 0, 0, 0, 0, 0]);
    assert_eq!(
        redis.get_logs(done.clone(), 0, -1, true).await.unwrap().1,
        1,
        "logs stay"
    );
    // Back of its priority: behind the job that waited all along.
    assert_eq!(claim_names(&redis, T + 3).await, ["other", "done"]);

    let error = redis.retry_job(done, false, T + 4).await.unwrap_err();
    assert_eq!(state_error(error), ("active", "failed or completed"));
    assert_eq!(
        redis.retry_job("nope".into(), false, T).await,
        Err(CoreError::JobNotFound("nope".into()))
    );
}

#[tokio::test]
async fn retry_job_runs_a_failed_job_again() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("f", |_| {})], T).await[0]
        .id
        .to_string();
    let claimed = redis.claim("w", LEASE, 1, T).await.unwrap();
    let failure = Failure {
        id: id.clone(),
        token: claimed[0].lock.clone().unwrap().token,
        error: "boom".into(),
        stacktrace: Some("at f".into()),
        retry: true,
        delay: None,
    };
    let outcomes = redis.fail_many(vec![failure], T + 1).await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(get(&redis, &id).await.state, JobState::Failed);

    redis.retry_job(id.clone(), true, T + 2).await.unwrap();
    let retried = get(&redis, &id).await;
    assert_eq!(
        (
            retried.state,
            retried.attempts_made,
            retried.finished_on,
            retried.failed_reason.clone(),
            retried.stacktrace.clone(),
        ),
        (JobState::Waiting, 0, None, None, vec!["at f".to_owned()])
    );
    assert_eq!(
        last_event(&server).await,
        ev("waiting", Some(&id), Some(("prev", "failed")))
    );
    assert_eq!(redis.counts().await.unwrap(), [1, 0, 0, 0, 0, 0]);
}

#[tokio::test]
async fn update_priority_reorders_waiting_jobs_and_updates_the_options() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![
            job("a", |o| o.priority = 3),
            job("b", |o| o.priority = 3),
            job("c", |o| o.priority = 3),
            job("d", |o| {
                o.priority = 3;
                o.job_id = Some("x\"priority\":7,\"lifo\":true".into())
            }),
            job("later", |o| o.delay = 1000),
        ],
        T,
    )
    .await;
    let id = |i: usize| jobs[i].id.to_string();
    // Same priority again: a new place, the back of it.
    redis.update_priority(id(0), 3, false).await.unwrap();
    // A better priority: ahead of everything.
    redis.update_priority(id(2), 1, false).await.unwrap();
    // LIFO: the front of its priority.
    redis.update_priority(id(3), 3, true).await.unwrap();
    // Not waiting: only the fields change.
    redis.update_priority(id(4), 9, true).await.unwrap();

    let c = get(&redis, &id(2)).await;
    assert_eq!(
        (c.priority, c.options.priority, c.options.lifo),
        (1, 1, false)
    );
    let d = get(&redis, &id(3)).await;
    assert_eq!(
        (d.priority, d.options.priority, d.options.lifo),
        (3, 3, true)
    );
    assert_eq!(
        d.options.job_id.as_deref(),
        Some("x\"priority\":7,\"lifo\":true")
    );
    let later = get(&redis, &id(4)).await;
    assert_eq!(
        (
            later.state,
            later.priority,
            later.options.priority,
            later.options.lifo
        ),
        (JobState::Delayed, 9, 9, true)
    );
    assert_eq!(claim_names(&redis, T).await, ["c", "d", "b", "a"]);

    assert!(matches!(
        redis.update_priority(id(0), MAX_PRIORITY + 1, false).await,
        Err(CoreError::InvalidConfig(m)) if m.contains("invalid priority")
    ));
    assert_eq!(
        redis.update_priority("nope".into(), 1, false).await,
        Err(CoreError::JobNotFound("nope".into()))
    );
}

#[tokio::test]
async fn update_priority_writes_options_stored_without_defaults_or_with_them() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![
            job("plain", |_| {}),
            job("old", |_| {}),
            job("braces", |_| {}),
        ],
        T,
    )
    .await;
    // Default options (`{}`: options.rs leaves defaults out) and priority 0 are not written
    // at all: they read back as the defaults.
    assert_eq!(stored_field(&server, "opts", &jobs[0].id).await, None);
    assert_eq!(stored_field(&server, "prio", &jobs[0].id).await, None);
    assert_eq!(get(&redis, &jobs[0].id).await.priority, 0);
    // As jobs added by earlier versions stored them: every default, then `{}`.
    let old = r#"{"priority":0,"lifo":false,"delay":0,"attempts":1,"remove_on_complete":"keep_all","remove_on_fail":"keep_all","max_stalled_count":1}"#;
    store_field(&server, "opts", &jobs[1].id, old).await;
    store_field(&server, "opts", &jobs[2].id, "{}").await;
    for job in &jobs {
        redis
            .update_priority(job.id.to_string(), 2, true)
            .await
            .unwrap();
        let options = get(&redis, &job.id).await.options;
        assert_eq!(
            (options.priority, options.lifo, options.attempts),
            (2, true, 1)
        );
    }
    assert_eq!(
        stored_field(&server, "opts", &jobs[0].id).await.as_deref(),
        Some(r#"{"lifo":true,"priority":2}"#)
    );
    assert_eq!(
        stored_field(&server, "opts", &jobs[1].id).await,
        Some(old.replace(
            r#""priority":0,"lifo":false"#,
            r#""priority":2,"lifo":true"#
        ))
    );
}

#[tokio::test]
async fn a_null_result_is_not_stored_and_reads_back_as_null() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(&redis, vec![job("a", |_| {}), job("b", |_| {})], T).await;
    let claimed = redis.claim("w", LEASE, 2, T).await.unwrap();
    let done = claimed
        .iter()
        .zip(["null", "7"])
        .map(|(j, result)| completion(j, result))
        .collect();
    let outcomes = redis.complete_many(done, T).await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    for (job, result) in claimed.iter().zip(["null", "7"]) {
        let stored = stored_field(&server, "result", &job.id).await;
        assert_eq!(stored.as_deref(), (result != "null").then_some(result));
        let read = get(&redis, &job.id).await;
        assert_eq!(read.return_value.as_deref(), Some(result));
        assert_eq!(
            redis.finished_result(&job.id).await.unwrap(),
            FinishedResult::Completed(Some(result.into()))
        );
    }
}

#[tokio::test]
async fn a_token_made_before_tokens_carried_the_member_still_completes() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(&redis, vec![job("a", |_| {}), job("b", |_| {})], T).await;
    let claimed = redis.claim("w", LEASE, 2, T).await.unwrap();
    // A claim's token starts with the job's member prefix (claim_jobs); give the first job
    // a token as claims made them before (no "."), as after an upgrade mid-job.
    let old_token = "0123456789abcdef-1".to_owned();
    store_field(&server, "token", &claimed[0].id, &old_token).await;
    let new_token = claimed[1].lock.clone().unwrap().token;
    assert_eq!(new_token.as_bytes()[14], b'.', "{new_token}");
    let done = vec![
        Completion {
            id: claimed[0].id.to_string(),
            token: old_token,
            result: "1".into(),
        },
        Completion {
            id: claimed[1].id.to_string(),
            token: new_token,
            result: "2".into(),
        },
    ];
    let outcomes = redis.complete_many(done, T + 1).await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    // Both left active and are listed as completed, oldest first.
    let counts = redis.counts().await.unwrap();
    assert_eq!(
        counts[JobState::ALL
            .iter()
            .position(|s| *s == JobState::Active)
            .unwrap()],
        0
    );
    let completed = redis
        .list_jobs(vec![JobState::Completed], 0, -1, true)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id.to_string())
        .collect::<Vec<_>>();
    assert_eq!(
        completed,
        [claimed[0].id.to_string(), claimed[1].id.to_string()]
    );
}

#[tokio::test]
async fn a_claim_reads_back_first_attempts_and_a_job_claimed_before_as_stored() {
    // claim_jobs returns a first attempt's fields alone and a job claimed before's retry
    // fields after all the rows, by position (decode::claimed_jobs): each claimed job must
    // read as its stored hash does, whatever its place in the batch.
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(&redis, vec![job("a", |_| {}), job("b", |_| {})], T).await;
    let b = redis.claim("w", LEASE, 2, T).await.unwrap().remove(1);
    let id = b.id.to_string();
    // (A release clears the run's progress; the stack trace and reason stay.)
    redis
        .save_stacktrace(id.clone(), vec!["at b".into()], Some("boom".into()))
        .await
        .unwrap();
    redis
        .release(id.clone(), b.lock.unwrap().token, T + 1)
        .await
        .unwrap();
    // A LIFO job goes in front of the released b, and d behind it.
    add(
        &redis,
        vec![job("c", |o| o.lifo = true), job("d", |_| {})],
        T + 2,
    )
    .await;
    let claimed = redis.claim("w", LEASE, 3, T + 3).await.unwrap();
    let names: Vec<&str> = claimed.iter().map(|j| &*j.name).collect();
    assert_eq!(names, ["c", "b", "d"]);
    assert_eq!(claimed[1].failed_reason.as_deref(), Some("boom"));
    assert_eq!(claimed[1].stacktrace, ["at b"]);
    for job in &claimed {
        assert_eq!(job, &get(&redis, &job.id).await);
    }
}

#[tokio::test]
async fn update_data_progress_and_stacktrace() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("j", |_| {})], T).await[0]
        .id
        .to_string();

    redis
        .update_data(id.clone(), "{\"to\":\"ops\"}".into())
        .await
        .unwrap();
    redis
        .update_progress(id.clone(), "{\"pct\":50}".into(), T + 1)
        .await
        .unwrap();
    assert_eq!(
        last_event(&server).await,
        ev("progress", Some(&id), Some(("data", "{\"pct\":50}")))
    );
    redis
        .save_stacktrace(id.clone(), vec!["at a".into(), "at b".into()], None)
        .await
        .unwrap();
    let j = get(&redis, &id).await;
    assert_eq!(
        (
            &*j.data,
            &*j.progress,
            j.stacktrace.clone(),
            j.failed_reason.clone()
        ),
        (
            "{\"to\":\"ops\"}",
            "{\"pct\":50}",
            vec!["at a".to_owned(), "at b".to_owned()],
            None
        )
    );
    redis
        .save_stacktrace(id.clone(), vec![], Some("boom".into()))
        .await
        .unwrap();
    let j = get(&redis, &id).await;
    assert_eq!(
        (j.stacktrace.len(), j.failed_reason.as_deref()),
        (0, Some("boom"))
    );

    let missing = Err(CoreError::JobNotFound("nope".into()));
    assert_eq!(redis.update_data("nope".into(), "1".into()).await, missing);
    assert_eq!(
        redis.update_progress("nope".into(), "1".into(), T).await,
        missing
    );
    assert_eq!(
        redis.save_stacktrace("nope".into(), vec![], None).await,
        missing
    );
}

#[tokio::test]
async fn logs_keep_the_newest_lines_and_page_like_the_memory_store() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("j", |_| {})], T).await[0]
        .id
        .to_string();
    let logs =
        |start: i64, end: i64, ascending: bool| redis.get_logs(id.clone(), start, end, ascending);

    assert_eq!(logs(0, -1, true).await.unwrap(), (vec![], 0));
    for i in 1..=5 {
        assert_eq!(
            redis
                .add_log(id.clone(), format!("line {i}"), 0, T + i as u64)
                .await
                .unwrap(),
            i
        );
    }
    // keep-N: the newest N stay.
    assert_eq!(
        redis
            .add_log(id.clone(), "line 6".into(), 3, T + 6)
            .await
            .unwrap(),
        3
    );
    // Each line carries the time of its call ("line N" was written at T + N).
    let line = |text: &str| LogLine {
        time: text
            .strip_prefix("line ")
            .map(|n| T + n.parse::<u64>().unwrap()),
        text: text.into(),
    };
    let s = |v: &[&str]| v.iter().map(|s| line(s)).collect::<Vec<_>>();
    assert_eq!(
        logs(0, -1, true).await.unwrap(),
        (s(&["line 4", "line 5", "line 6"]), 3)
    );
    assert_eq!(logs(0, 0, false).await.unwrap(), (s(&["line 6"]), 3));
    assert_eq!(
        logs(-2, -1, true).await.unwrap(),
        (s(&["line 5", "line 6"]), 3)
    );
    assert_eq!(
        logs(1, 100, false).await.unwrap(),
        (s(&["line 5", "line 4"]), 3)
    );
    assert_eq!(logs(-100, 0, true).await.unwrap(), (s(&["line 4"]), 3));
    assert_eq!(logs(2, 1, true).await.unwrap(), (vec![], 3));
    assert_eq!(logs(5, 9, true).await.unwrap(), (vec![], 3));

    // Lines JSON must escape survive as they were written.
    let odd = "quote \" slash / back \\ tab \t ünï 😀 {}[]";
    redis.add_log(id.clone(), odd.into(), 0, T).await.unwrap();
    let odd_line = LogLine {
        time: Some(T),
        text: odd.into(),
    };
    assert_eq!(
        logs(-1, -1, true).await.unwrap(),
        (vec![odd_line.clone()], 4)
    );

    redis.clear_logs(id.clone(), 2).await.unwrap();
    assert_eq!(
        logs(0, -1, true).await.unwrap(),
        (vec![line("line 6"), odd_line], 2)
    );
    redis.clear_logs(id.clone(), 5).await.unwrap();
    assert_eq!(logs(0, -1, true).await.unwrap().1, 2);
    redis.clear_logs(id.clone(), 0).await.unwrap();
    assert_eq!(logs(0, -1, true).await.unwrap(), (vec![], 0));
    assert_eq!(
        redis
            .add_log(id.clone(), "again".into(), 1, T)
            .await
            .unwrap(),
        1
    );

    let missing = CoreError::JobNotFound("nope".into());
    assert_eq!(
        redis.add_log("nope".into(), "x".into(), 0, T).await,
        Err(missing.clone())
    );
    assert_eq!(
        redis.get_logs("nope".into(), 0, -1, true).await,
        Err(missing.clone())
    );
    assert_eq!(redis.clear_logs("nope".into(), 0).await, Err(missing));
}

#[tokio::test]
async fn remove_is_refused_under_a_live_lock() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(&redis, vec![job("a", |_| {}), job("w", |_| {})], T).await;
    let (a, w) = (jobs[0].id.to_string(), jobs[1].id.to_string());
    redis.claim("w", LEASE, 1, T).await.unwrap();
    redis
        .add_log(a.clone(), "a log".into(), 0, T)
        .await
        .unwrap();

    let refused = redis.remove(a.clone(), T + LEASE - 1).await.unwrap_err();
    assert_eq!(
        refused,
        CoreError::Refused(format!(
            "job {a:?} is locked by a worker and cannot be removed"
        ))
    );
    assert_eq!(get(&redis, &a).await.state, JobState::Active);

    // Once the lease ran out, it can go.
    redis.remove(a.clone(), T + LEASE).await.unwrap();
    assert!(redis.get_job(&a).await.unwrap().is_none());
    assert_eq!(
        last_event(&server).await,
        ev("removed", Some(&a), Some(("prev", "active")))
    );
    redis.remove(w.clone(), T + LEASE).await.unwrap();
    assert_eq!(
        last_event(&server).await,
        ev("removed", Some(&w), Some(("prev", "waiting")))
    );
    assert_eq!(redis.counts().await.unwrap(), [0; 6]);
    let logs: usize = redis::cmd("HLEN")
        .arg("lanemq:{test}:logs")
        .query_async(&mut raw(&server).await)
        .await
        .unwrap();
    assert_eq!(logs, 0, "the logs go with the job");
    assert_eq!(
        redis.remove(a.clone(), T).await,
        Err(CoreError::JobNotFound(a))
    );
}

#[tokio::test]
async fn pause_blocks_claims_and_reports_changes_only() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(&redis, vec![job("a", |_| {})], T).await;
    assert!(!redis.is_paused().await.unwrap());

    redis.pause(T).await.unwrap();
    redis.pause(T + 1).await.unwrap();
    assert!(redis.is_paused().await.unwrap());
    assert!(claim_names(&redis, T + 2).await.is_empty());

    redis.resume(T + 3).await.unwrap();
    redis.resume(T + 4).await.unwrap();
    assert!(!redis.is_paused().await.unwrap());
    let names: Vec<String> = events(&server).await.into_iter().map(|e| e.0).collect();
    assert_eq!(names, ["added", "waiting", "paused", "resumed"]);
    assert_eq!(claim_names(&redis, T + 5).await, ["a"]);
}

#[tokio::test]
async fn drain_removes_waiting_and_optionally_delayed_jobs() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    assert_eq!(redis.drain(true, T).await.unwrap(), 0);
    let jobs = add(
        &redis,
        vec![
            job("active", |_| {}),
            job("w1", |_| {}),
            job("w2", |o| o.priority = 2),
            job("d", |o| o.delay = 1000),
        ],
        T,
    )
    .await;
    redis.claim("w", LEASE, 1, T).await.unwrap();
    let before = events(&server).await.len();

    assert_eq!(redis.drain(false, T + 1).await.unwrap(), 2);
    assert_eq!(redis.counts().await.unwrap(), [0, 1, 1, 0, 0, 0]);
    assert!(redis.get_job(&jobs[1].id).await.unwrap().is_none());
    assert_eq!(
        last_event(&server).await,
        ev("cleaned", None, Some(("count", "2")))
    );

    assert_eq!(redis.drain(true, T + 2).await.unwrap(), 1);
    assert_eq!(redis.counts().await.unwrap(), [0, 0, 1, 0, 0, 0]);
    assert_eq!(redis.drain(true, T + 3).await.unwrap(), 0);
    assert_eq!(
        events(&server).await.len(),
        before + 2,
        "no event when nothing went"
    );
}

#[tokio::test]
async fn clean_removes_old_jobs_oldest_first_within_the_limit() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(
        &redis,
        vec![job("c1", |_| {}), job("c2", |_| {}), job("c3", |_| {})],
        T,
    )
    .await;
    let c1 = complete(&redis, 1, T + 10).await;
    let c2 = complete(&redis, 1, T + 20).await;
    let c3 = complete(&redis, 1, T + 30).await;

    // Finished at or before now - grace = T + 20: c1 and c2, oldest first, at most 1.
    assert_eq!(
        redis
            .clean(80, 1, JobState::Completed, T + 100)
            .await
            .unwrap(),
        c1
    );
    assert_eq!(
        last_event(&server).await,
        ev("cleaned", None, Some(("count", "1")))
    );
    assert_eq!(
        redis
            .clean(80, 0, JobState::Completed, T + 100)
            .await
            .unwrap(),
        c2
    );
    assert!(redis
        .clean(80, 0, JobState::Completed, T + 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        redis
            .clean(0, 0, JobState::Completed, T + 100)
            .await
            .unwrap(),
        c3
    );
    assert_eq!(redis.counts().await.unwrap(), [0; 6]);

    // Unfinished states go by creation time, in the state's order.
    let old = add(
        &redis,
        vec![
            job("old-p5", |o| o.priority = 5),
            job("old-p1", |o| o.priority = 1),
        ],
        T + 200,
    )
    .await;
    let new = add(&redis, vec![job("new", |_| {})], T + 300).await;
    assert_eq!(
        redis
            .clean(50, 0, JobState::Waiting, T + 300)
            .await
            .unwrap(),
        [old[1].id.to_string(), old[0].id.to_string()]
    );
    assert_eq!(redis.counts().await.unwrap(), [1, 0, 0, 0, 0, 0]);

    // Active jobs under a live lock stay; expired ones go.
    let claimed = redis.claim("w", LEASE, 1, T + 400).await.unwrap();
    assert_eq!(claimed[0].id, new[0].id);
    assert!(redis
        .clean(0, 0, JobState::Active, T + 400 + LEASE - 1)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        redis
            .clean(0, 0, JobState::Active, T + 400 + LEASE)
            .await
            .unwrap(),
        [new[0].id.to_string()]
    );
    assert_eq!(redis.counts().await.unwrap(), [0; 6]);
}

async fn queue_keys(server: &Server) -> Vec<String> {
    let mut connection = raw(server).await;
    let mut cursor = 0u64;
    let mut keys = Vec::new();
    loop {
        let (next, page): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("lanemq:{test}:*")
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut connection)
            .await
            .unwrap();
        keys.extend(page);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

#[tokio::test]
async fn obliterate_with_an_active_job_is_refused_and_stays_paused() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(&redis, vec![job("a", |_| {})], T).await;
    redis.claim("w", LEASE, 1, T).await.unwrap();
    let waiting = add(&redis, vec![job("w", |_| {})], T).await;

    assert_eq!(
        redis.obliterate(false, T + 1).await,
        Err(CoreError::Refused(
            "cannot obliterate a queue with 1 active jobs (use force=True)".into()
        ))
    );
    assert!(redis.is_paused().await.unwrap());
    assert_eq!(last_event(&server).await.0, "paused");
    assert_eq!(get(&redis, &jobs[0].id).await.state, JobState::Active);
    assert_eq!(get(&redis, &waiting[0].id).await.state, JobState::Waiting);
    assert!(claim_names(&redis, T + 2).await.is_empty());
}

#[tokio::test]
async fn obliterate_force_leaves_no_key_of_the_queue() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let other = RedisBackend::connect(&server.url(), "lanemq", "other", 100, false)
        .await
        .unwrap();
    add(&other, vec![job("elsewhere", |_| {})], T).await;

    let jobs = add(
        &redis,
        vec![
            job("done", |_| {}),
            job("active", |_| {}),
            job("delayed", |o| o.delay = 60_000),
            job("waiting", |_| {}),
        ],
        T,
    )
    .await;
    complete(&redis, 1, T).await;
    redis.claim("w", LEASE, 1, T).await.unwrap();
    redis
        .add_log(jobs[1].id.to_string(), "log".into(), 0, T)
        .await
        .unwrap();
    redis.set_rate_limit(5, 1000).await.unwrap();
    redis.set_max_active(Some(3)).await.unwrap();
    redis.pause(T).await.unwrap();
    assert!(queue_keys(&server).await.len() > 10);

    redis.obliterate(true, T + 1).await.unwrap();
    assert_eq!(queue_keys(&server).await, Vec::<String>::new());
    assert!(!redis.is_paused().await.unwrap());
    assert_eq!(redis.get_rate_limit().await.unwrap(), None);
    assert_eq!(redis.get_max_active().await.unwrap(), None);
    assert_eq!(redis.counts().await.unwrap(), [0; 6]);
    for j in &jobs {
        assert!(redis.get_job(&j.id).await.unwrap().is_none());
    }
    assert_eq!(
        other.counts().await.unwrap(),
        [1, 0, 0, 0, 0, 0],
        "other queues stay"
    );

    // The queue works afterwards.
    let fresh = add(&redis, vec![job("fresh", |_| {})], T + 2).await;
    let claimed = redis.claim("w", LEASE, 5, T + 3).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, fresh[0].id);
}

#[tokio::test]
async fn obliterate_without_active_jobs() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let jobs = add(
        &redis,
        vec![job("w", |_| {}), job("d", |o| o.delay = 10)],
        T,
    )
    .await;
    redis.obliterate(false, T + 1).await.unwrap();
    assert!(redis.get_job(&jobs[0].id).await.unwrap().is_none());
    assert!(!redis.is_paused().await.unwrap());
    assert_eq!(queue_keys(&server).await, Vec::<String>::new());
}

#[tokio::test]
async fn rate_limit_settings() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    assert_eq!(redis.get_rate_limit().await.unwrap(), None);
    for (max, duration) in [(0, 1000), (1, 0)] {
        assert!(matches!(
            redis.set_rate_limit(max, duration).await,
            Err(CoreError::InvalidConfig(m)) if m.contains("invalid rate limit")
        ));
    }
    redis.set_rate_limit(2, 1000).await.unwrap();
    assert_eq!(redis.get_rate_limit().await.unwrap(), Some((2, 1000)));
    add(
        &redis,
        (0..5).map(|i| job(&format!("j{i}"), |_| {})).collect(),
        T,
    )
    .await;
    assert_eq!(claim_names(&redis, T).await.len(), 2);
    assert!(claim_names(&redis, T + 999).await.is_empty());
    redis.clear_rate_limit().await.unwrap();
    assert_eq!(redis.get_rate_limit().await.unwrap(), None);
    assert_eq!(claim_names(&redis, T + 999).await.len(), 3);
}

#[tokio::test]
async fn max_active_settings_and_is_maxed() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    assert_eq!(redis.get_max_active().await.unwrap(), None);
    assert!(!redis.is_maxed().await.unwrap());
    assert!(matches!(
        redis.set_max_active(Some(0)).await,
        Err(CoreError::InvalidConfig(m)) if m.contains("max_active")
    ));
    redis.set_max_active(Some(2)).await.unwrap();
    assert_eq!(redis.get_max_active().await.unwrap(), Some(2));
    add(
        &redis,
        (0..4).map(|i| job(&format!("j{i}"), |_| {})).collect(),
        T,
    )
    .await;
    assert!(!redis.is_maxed().await.unwrap());
    assert_eq!(claim_names(&redis, T).await.len(), 2);
    assert!(redis.is_maxed().await.unwrap());
    assert!(claim_names(&redis, T).await.is_empty());
    redis.set_max_active(None).await.unwrap();
    assert_eq!(redis.get_max_active().await.unwrap(), None);
    assert!(!redis.is_maxed().await.unwrap());
    assert_eq!(claim_names(&redis, T).await.len(), 2);
}

/// The bindings box these futures as `Send` (the `JobBackend` trait's `BoxFuture`).
#[allow(dead_code, clippy::let_underscore_future)]
fn futures_are_send(redis: &RedisBackend) {
    fn send<T: Send>(_: T) {}
    let id = String::new;
    send(redis.promote(id(), 0));
    send(redis.reschedule(id(), 0, 0, false));
    send(redis.retry_job(id(), false, 0));
    send(redis.update_priority(id(), 0, false));
    send(redis.update_data(id(), id()));
    send(redis.update_progress(id(), id(), 0));
    send(redis.add_log(id(), id(), 0, T));
    send(redis.get_logs(id(), 0, -1, true));
    send(redis.clear_logs(id(), 0));
    send(redis.save_stacktrace(id(), vec![], None));
    send(redis.remove(id(), 0));
    send(redis.pause(0));
    send(redis.resume(0));
    send(redis.is_paused());
    send(redis.drain(true, 0));
    send(redis.clean(0, 0, JobState::Failed, 0));
    send(redis.obliterate(true, 0));
    send(redis.set_rate_limit(1, 1));
    send(redis.get_rate_limit());
    send(redis.clear_rate_limit());
    send(redis.set_max_active(None));
    send(redis.get_max_active());
    send(redis.is_maxed());
}
