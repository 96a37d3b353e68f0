//! Failing, renewing, delaying, releasing and stall recovery on a real redis-server, checked
//! against the semantics of `MemoryStore` (and, in `mirrors_the_memory_store`, against the store
//! itself).

mod common;

use common::{backend, completion, job, Server, T};
use lanemq_core::jobs::constants::STALLED_REASON;
use lanemq_core::jobs::lifecycle;
use lanemq_core::jobs::{
    Backoff, BackoffKind, FailOutcome, Failure, Job, JobOptions, JobState, MemoryStore, NewJob,
    Retention, StoreConfig, StreamEvent,
};
use lanemq_core::CoreError;
use lanemq_redis::RedisBackend;

async fn add(redis: &RedisBackend, jobs: Vec<NewJob>) -> Vec<String> {
    redis
        .add_bulk(jobs, T, 1 << 20)
        .await
        .unwrap()
        .into_iter()
        .map(|(j, _)| j.id.to_string())
        .collect()
}

async fn claim_one(redis: &RedisBackend, lease: u64, now: u64) -> Job {
    let mut claimed = redis.claim("w", lease, 1, now).await.unwrap();
    assert_eq!(claimed.len(), 1, "one job claimable at {now}");
    claimed.remove(0)
}

fn token(job: &Job) -> String {
    job.lock.clone().expect("a claimed job is locked").token
}

fn failure(job: &Job, error: &str) -> Failure {
    Failure {
        id: job.id.to_string(),
        token: token(job),
        error: error.into(),
        stacktrace: None,
        retry: true,
        delay: None,
    }
}

async fn fail_one(redis: &RedisBackend, f: Failure, now: u64) -> FailOutcome {
    redis
        .fail_many(vec![f], now)
        .await
        .unwrap()
        .remove(0)
        .expect("the failure is recorded")
}

async fn get(redis: &RedisBackend, id: &str) -> Job {
    redis.get_job(id).await.unwrap().expect("the job exists")
}

/// The event stream as (id, event, job, field).
type Event = (u64, String, Option<String>, Option<(String, String)>);

fn event_shape(e: StreamEvent) -> Event {
    (
        e.id,
        e.event.to_owned(),
        e.job_id.map(|j| j.to_string()),
        e.field.map(|(k, v)| (k.to_owned(), v.as_str().to_owned())),
    )
}

async fn events(server: &Server) -> Vec<Event> {
    let read = backend(server).await.read_events(0, u64::MAX, 0).await;
    read.unwrap().into_iter().map(event_shape).collect()
}

/// The events of one job as (event, field key, field value).
async fn job_events(server: &Server, id: &str) -> Vec<(String, String, String)> {
    events(server)
        .await
        .into_iter()
        .filter(|(_, _, job, _)| job.as_deref() == Some(id))
        .map(|(_, event, _, field)| {
            let (k, v) = field.unwrap_or_default();
            (event, k, v)
        })
        .collect()
}

fn ev(event: &str, key: &str, value: impl ToString) -> (String, String, String) {
    (event.into(), key.into(), value.to_string())
}

#[tokio::test]
async fn fixed_backoff_retries_once_then_fails_for_good() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(
        &redis,
        vec![job("flaky", |o| {
            o.attempts = 2;
            o.backoff = Some(Backoff {
                kind: BackoffKind::Fixed,
                delay: 2000,
                jitter: 0.0,
                name: None,
            });
        })],
    )
    .await
    .remove(0);
    let first = claim_one(&redis, 10_000, T).await;
    assert_eq!(first.attempts_made, 1);
    let mut f = failure(&first, "boom");
    f.stacktrace = Some("at line 1".into());
    assert_eq!(
        fail_one(&redis, f, T).await,
        FailOutcome::Retry {
            delay_until: Some(T + 2000)
        }
    );
    let delayed = get(&redis, &id).await;
    assert_eq!(delayed.state, JobState::Delayed);
    assert_eq!(delayed.delay_until, T + 2000);
    assert_eq!(delayed.failed_reason.as_deref(), Some("boom"));
    assert_eq!(delayed.stacktrace, ["at line 1"]);
    assert!(delayed.lock.is_none());
    assert_eq!(redis.counts().await.unwrap(), [0, 1, 0, 0, 0, 0]);
    assert!(!redis
        .holds_lock(id.clone(), token(&first), T + 1)
        .await
        .unwrap());

    assert!(redis
        .claim("w", 10_000, 1, T + 1999)
        .await
        .unwrap()
        .is_empty());
    let second = claim_one(&redis, 10_000, T + 2000).await;
    assert_eq!(second.attempts_made, 2);
    let mut f = failure(&second, "boom again");
    f.stacktrace = Some("at line 2".into());
    assert_eq!(fail_one(&redis, f, T + 2500).await, FailOutcome::Failed);
    let failed = get(&redis, &id).await;
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.finished_on, Some(T + 2500));
    assert_eq!(failed.failed_reason.as_deref(), Some("boom again"));
    assert_eq!(failed.stacktrace, ["at line 1", "at line 2"]);
    assert!(failed.lock.is_none());
    assert_eq!(redis.counts().await.unwrap(), [0, 0, 0, 0, 0, 1]);
    let events = job_events(&server, &id).await;
    assert_eq!(
        events[events.len() - 2..],
        [
            ev("failed", "failedReason", "boom again"),
            ev("retries-exhausted", "attemptsMade", 2)
        ]
    );
    assert!(events.contains(&ev("delayed", "delay", T + 2000)));
}

#[tokio::test]
async fn exponential_backoff_doubles_and_jitter_takes_off_up_to_its_fraction() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let exponential = |jitter: f64| {
        move |o: &mut JobOptions| {
            o.attempts = 10;
            o.backoff = Some(Backoff {
                kind: BackoffKind::Exponential,
                delay: 1000,
                jitter,
                name: None,
            });
        }
    };
    add(&redis, vec![job("exp", exponential(0.0))]).await;
    let mut now = T;
    for expected in [1000, 2000, 4000] {
        let claimed = claim_one(&redis, 100_000, now).await;
        let outcome = fail_one(&redis, failure(&claimed, "again"), now).await;
        assert_eq!(
            outcome,
            FailOutcome::Retry {
                delay_until: Some(now + expected)
            }
        );
        now += expected;
    }
    let claimed = claim_one(&redis, 100_000, now).await;
    assert_eq!(claimed.attempts_made, 4);
    redis
        .complete_many(vec![completion(&claimed, "1")], now)
        .await
        .unwrap();

    add(&redis, vec![job("jittered", exponential(0.5))]).await;
    let claimed = claim_one(&redis, 100_000, now).await;
    let FailOutcome::Retry {
        delay_until: Some(until),
    } = fail_one(&redis, failure(&claimed, "x"), now).await
    else {
        panic!("a retry after a delay")
    };
    assert!(
        (now + 500..=now + 1000).contains(&until),
        "jitter 0.5 of 1000: {}",
        until - now
    );
}

#[tokio::test]
async fn no_retry_fails_for_good_without_exhausting_the_attempts() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("fatal", |o| o.attempts = 3)])
        .await
        .remove(0);
    let claimed = claim_one(&redis, 1000, T).await;
    let mut f = failure(&claimed, "fatal error");
    f.retry = false;
    assert_eq!(fail_one(&redis, f, T + 5).await, FailOutcome::Failed);
    let failed = get(&redis, &id).await;
    assert_eq!(
        (failed.state, failed.finished_on, failed.attempts_made),
        (JobState::Failed, Some(T + 5), 1)
    );
    let events = job_events(&server, &id).await;
    assert_eq!(
        events.last().unwrap(),
        &ev("failed", "failedReason", "fatal error")
    );
    assert!(!events.iter().any(|(e, _, _)| e == "retries-exhausted"));
}

#[tokio::test]
async fn an_explicit_delay_overrides_the_backoff() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(
        &redis,
        vec![
            job("override", |o| {
                o.attempts = 3;
                o.backoff = Some(Backoff {
                    kind: BackoffKind::Fixed,
                    delay: 5000,
                    jitter: 0.0,
                    name: None,
                });
            }),
            job("zero", |o| {
                o.attempts = 3;
                o.backoff = Some(Backoff {
                    kind: BackoffKind::Fixed,
                    delay: 5000,
                    jitter: 0.0,
                    name: None,
                });
            }),
            job("plain", |o| o.attempts = 3),
            job("last", |_| {}),
        ],
    )
    .await;
    let claimed = redis.claim("w", 1000, 3, T).await.unwrap();
    let mut override_delay = failure(&claimed[0], "a");
    override_delay.delay = Some(300);
    let mut zero = failure(&claimed[1], "b");
    zero.delay = Some(0);
    let plain = failure(&claimed[2], "c");
    let outcomes = redis
        .fail_many(vec![override_delay, zero, plain], T + 10)
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        [
            Ok(FailOutcome::Retry {
                delay_until: Some(T + 310)
            }),
            Ok(FailOutcome::Retry { delay_until: None }),
            Ok(FailOutcome::Retry { delay_until: None }),
        ]
    );
    assert_eq!(get(&redis, &ids[0]).await.delay_until, T + 310);
    assert_eq!(
        job_events(&server, &ids[1]).await.last().unwrap(),
        &ev("waiting", "prev", "active")
    );
    let order: Vec<String> = redis
        .claim("w", 1000, 10, T + 20)
        .await
        .unwrap()
        .iter()
        .map(|j| j.name.to_string())
        .collect();
    assert_eq!(
        order,
        ["last", "zero", "plain"],
        "retried jobs go to the back"
    );
}

#[tokio::test]
async fn stale_tokens_are_refused_with_the_memory_store_errors() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(&redis, vec![job("a", |_| {}), job("b", |_| {})]).await;
    let claimed = claim_one(&redis, 1000, T).await;
    let id = claimed.id.to_string();
    let mut stale = failure(&claimed, "x");
    stale.token = "stale".into();
    let expired = failure(&claimed, "x");
    let mut missing = failure(&claimed, "x");
    missing.id = "nope".into();
    let mut waiting = failure(&claimed, "x");
    waiting.id = ids[1].clone();
    let outcomes = redis
        .fail_many(vec![stale, missing, waiting], T + 1)
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        [
            Err(CoreError::LockMismatch(format!(
                "job {id:?} is locked by another token (its lease was lost)"
            ))),
            Err(CoreError::JobNotFound("nope".into())),
            Err(CoreError::JobState {
                id: ids[1].clone(),
                state: "waiting",
                expected: "active"
            }),
        ]
    );
    let expired_outcome = redis.fail_many(vec![expired], T + 1000).await.unwrap();
    assert_eq!(
        expired_outcome,
        [Err(CoreError::LockMismatch(format!(
            "job {id:?}: the lock expired at {} (now {})",
            T + 1000,
            T + 1000
        )))]
    );
    let tok = token(&claimed);
    assert!(matches!(
        redis.release(id.clone(), "stale".into(), T + 1).await,
        Err(CoreError::LockMismatch(_))
    ));
    assert!(matches!(
        redis
            .move_to_delayed(id.clone(), tok.clone(), T + 5000, T + 1000)
            .await,
        Err(CoreError::LockMismatch(m)) if m.contains("expired")
    ));
    assert!(matches!(
        redis.release("nope".into(), tok.clone(), T + 1).await,
        Err(CoreError::JobNotFound(_))
    ));
    assert!(matches!(
        redis
            .move_to_delayed(ids[1].clone(), tok.clone(), T, T)
            .await,
        Err(CoreError::JobState {
            state: "waiting",
            ..
        })
    ));
    let untouched = get(&redis, &id).await;
    assert_eq!(
        (
            untouched.state,
            untouched.failed_reason,
            untouched.attempts_made
        ),
        (JobState::Active, None, 1),
        "refusals change nothing"
    );
    assert!(redis
        .holds_lock(id.clone(), tok.clone(), T + 999)
        .await
        .unwrap());
    assert!(!redis.holds_lock(id.clone(), tok, T + 1000).await.unwrap());
    assert!(!redis.holds_lock(id, "stale".into(), T + 1).await.unwrap());
    assert!(!redis
        .holds_lock("nope".into(), "x".into(), T)
        .await
        .unwrap());
}

#[tokio::test]
async fn renew_extends_the_lease_that_stall_recovery_reads() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("long", |_| {})]).await.remove(0);
    let claimed = claim_one(&redis, 1000, T).await;
    let renewed = redis
        .renew_many(vec![(id.clone(), token(&claimed))], 1000, T + 500)
        .await
        .unwrap();
    assert_eq!(renewed, [Ok(())]);
    assert_eq!(get(&redis, &id).await.lock.unwrap().expires_at, T + 1500);
    assert_eq!(
        redis.recover_stalled(T + 1000).await.unwrap(),
        (vec![], vec![]),
        "the old expiry no longer counts"
    );
    assert_eq!(get(&redis, &id).await.state, JobState::Active);
    assert!(redis
        .holds_lock(id.clone(), token(&claimed), T + 1499)
        .await
        .unwrap());
    assert_eq!(
        redis.recover_stalled(T + 1500).await.unwrap(),
        (vec![id.clone()], vec![])
    );
    let recovered = get(&redis, &id).await;
    assert_eq!(
        (
            recovered.state,
            recovered.stalled_count,
            recovered.attempts_made
        ),
        (JobState::Waiting, 1, 0)
    );
    assert!(recovered.lock.is_none());
}

#[tokio::test]
async fn renew_many_reports_lost_ids_per_item() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    add(&redis, vec![job("a", |_| {}), job("b", |_| {})]).await;
    let claimed = redis.claim("w", 1000, 2, T).await.unwrap();
    let outcomes = redis
        .renew_many(
            vec![
                (claimed[0].id.to_string(), token(&claimed[0])),
                ("gone".into(), "x".into()),
                (claimed[1].id.to_string(), "lost".into()),
            ],
            5000,
            T + 10,
        )
        .await
        .unwrap();
    assert_eq!(outcomes[0], Ok(()));
    assert_eq!(outcomes[1], Err(CoreError::JobNotFound("gone".into())));
    assert!(matches!(&outcomes[2], Err(CoreError::LockMismatch(m)) if m.contains("another token")));
    assert_eq!(
        redis.recover_stalled(T + 1000).await.unwrap(),
        (vec![claimed[1].id.to_string()], vec![]),
        "only the lost one stalls"
    );
    let late = redis
        .renew_many(
            vec![(claimed[1].id.to_string(), token(&claimed[1]))],
            5000,
            T + 1001,
        )
        .await
        .unwrap();
    assert!(matches!(
        &late[0],
        Err(CoreError::JobState {
            state: "waiting",
            ..
        })
    ));
}

#[tokio::test]
async fn move_to_delayed_gives_the_attempt_back() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(&redis, vec![job("later", |_| {}), job("past", |_| {})]).await;
    let claimed = redis.claim("w", 1000, 2, T).await.unwrap();
    redis
        .move_to_delayed(ids[0].clone(), token(&claimed[0]), T + 3000, T + 10)
        .await
        .unwrap();
    redis
        .move_to_delayed(ids[1].clone(), token(&claimed[1]), T - 50, T + 10)
        .await
        .unwrap();
    let later = get(&redis, &ids[0]).await;
    assert_eq!(
        (later.state, later.attempts_made, later.delay_until),
        (JobState::Delayed, 0, T + 3000)
    );
    assert!(later.lock.is_none());
    assert_eq!(
        get(&redis, &ids[1]).await.delay_until,
        T + 10,
        "not before now"
    );
    assert_eq!(
        job_events(&server, &ids[1]).await.last().unwrap(),
        &ev("delayed", "delay", T - 50)
    );
    assert_eq!(redis.counts().await.unwrap(), [0, 2, 0, 0, 0, 0]);
    assert_eq!(claim_one(&redis, 1000, T + 10).await.name.as_ref(), "past");
    assert!(redis
        .claim("w", 1000, 1, T + 2999)
        .await
        .unwrap()
        .is_empty());
    let again = claim_one(&redis, 1000, T + 3000).await;
    assert_eq!((again.name.as_ref(), again.attempts_made), ("later", 1));
}

#[tokio::test]
async fn release_goes_to_the_front_of_its_priority() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(
        &redis,
        vec![job("a", |o| o.priority = 1), job("b", |o| o.priority = 1)],
    )
    .await;
    let a = claim_one(&redis, 1000, T).await;
    assert_eq!(a.name.as_ref(), "a");
    redis
        .release(ids[0].clone(), token(&a), T + 1)
        .await
        .unwrap();
    let released = get(&redis, &ids[0]).await;
    assert_eq!(
        (released.state, released.attempts_made),
        (JobState::Waiting, 0)
    );
    assert!(released.lock.is_none());
    assert_eq!(
        job_events(&server, &ids[0]).await.last().unwrap(),
        &ev("waiting", "prev", "active")
    );
    add(
        &redis,
        vec![job("c", |o| o.priority = 1), job("urgent", |_| {})],
    )
    .await;
    let order: Vec<(String, u32)> = redis
        .claim("w", 1000, 10, T + 2)
        .await
        .unwrap()
        .iter()
        .map(|j| (j.name.to_string(), j.attempts_made))
        .collect();
    assert_eq!(
        order,
        [
            ("urgent".into(), 1),
            ("a".into(), 1),
            ("b".into(), 1),
            ("c".into(), 1)
        ]
    );
}

#[tokio::test]
async fn a_job_that_stalls_more_than_max_stalled_count_fails() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(
        &redis,
        vec![
            job("stally", |o| o.max_stalled_count = 1),
            job("next", |_| {}),
        ],
    )
    .await;
    let id = ids[0].clone();
    claim_one(&redis, 1000, T).await;
    assert_eq!(
        redis.recover_stalled(T + 999).await.unwrap(),
        (vec![], vec![])
    );
    assert_eq!(
        redis.recover_stalled(T + 1000).await.unwrap(),
        (vec![id.clone()], vec![])
    );
    let waiting = get(&redis, &id).await;
    assert_eq!(
        (waiting.state, waiting.stalled_count, waiting.attempts_made),
        (JobState::Waiting, 1, 0)
    );
    assert!(waiting.lock.is_none());
    let again = claim_one(&redis, 1000, T + 1000).await;
    assert_eq!(again.name.as_ref(), "stally", "recovered to the front");
    assert_eq!(
        redis.recover_stalled(T + 2000).await.unwrap(),
        (vec![], vec![id.clone()])
    );
    let failed = get(&redis, &id).await;
    assert_eq!(
        (failed.state, failed.stalled_count, failed.attempts_made),
        (JobState::Failed, 2, 0)
    );
    assert_eq!(failed.failed_reason.as_deref(), Some(STALLED_REASON));
    assert_eq!(failed.finished_on, Some(T + 2000));
    assert!(failed.lock.is_none());
    assert_eq!(
        job_events(&server, &id).await[2..],
        [
            ev("active", "prev", "waiting"),
            ev("stalled", "stalledCount", 1),
            ev("waiting", "prev", "stalled"),
            ev("active", "prev", "waiting"),
            ev("stalled", "stalledCount", 2),
            ev("failed", "failedReason", STALLED_REASON),
        ]
    );
    assert_eq!(redis.counts().await.unwrap(), [1, 0, 0, 0, 0, 1]);
}

#[tokio::test]
async fn remove_on_fail_removes_on_terminal_failure_only() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let ids = add(
        &redis,
        vec![
            job("gone", |o| {
                o.attempts = 2;
                o.remove_on_fail = Retention::RemoveAll;
            }),
            job("stalls", |o| {
                o.max_stalled_count = 0;
                o.remove_on_fail = Retention::RemoveAll;
            }),
            job("kept", |o| {
                o.remove_on_fail = Retention::Keep {
                    count: Some(1),
                    age: None,
                    limit: None,
                };
            }),
            job("kept2", |o| {
                o.remove_on_fail = Retention::Keep {
                    count: Some(1),
                    age: None,
                    limit: None,
                };
            }),
        ],
    )
    .await;
    let first = claim_one(&redis, 1000, T).await;
    assert!(matches!(
        fail_one(&redis, failure(&first, "x"), T).await,
        FailOutcome::Retry { delay_until: None }
    ));
    assert!(
        redis.get_job(&ids[0]).await.unwrap().is_some(),
        "kept while retried"
    );
    let stalls = claim_one(&redis, 1000, T).await;
    assert_eq!(stalls.name.as_ref(), "stalls");
    let claimed = redis.claim("w", 1000, 3, T).await.unwrap();
    assert_eq!(claimed.len(), 3);
    let outcomes = redis
        .fail_many(claimed.iter().map(|j| failure(j, "final")).collect(), T + 1)
        .await
        .unwrap();
    assert!(outcomes.iter().all(|o| o == &Ok(FailOutcome::Failed)));
    assert!(redis.get_job(&ids[0]).await.unwrap().is_none(), "removed");
    assert!(
        redis.get_job(&ids[2]).await.unwrap().is_none(),
        "the oldest beyond count 1"
    );
    assert_eq!(get(&redis, &ids[3]).await.state, JobState::Failed);
    assert_eq!(
        redis.recover_stalled(T + 1000).await.unwrap(),
        (vec![], vec![ids[1].clone()])
    );
    assert!(redis.get_job(&ids[1]).await.unwrap().is_none());
    assert_eq!(redis.counts().await.unwrap(), [0, 0, 0, 0, 0, 1]);
    let removed_events = job_events(&server, &ids[0]).await;
    assert_eq!(
        removed_events[removed_events.len() - 2..],
        [
            ev("failed", "failedReason", "final"),
            ev("retries-exhausted", "attemptsMade", 2)
        ]
    );
}

#[tokio::test]
async fn stacktraces_keep_the_newest_ten() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let id = add(&redis, vec![job("many", |o| o.attempts = 20)])
        .await
        .remove(0);
    for n in 0..12 {
        let claimed = claim_one(&redis, 1000, T).await;
        let mut f = failure(&claimed, "e");
        f.stacktrace = Some(format!("trace \"{n}\" / é\n"));
        fail_one(&redis, f, T).await;
    }
    let job = get(&redis, &id).await;
    let expected: Vec<String> = (2..12).map(|n| format!("trace \"{n}\" / é\n")).collect();
    assert_eq!(job.stacktrace, expected);
}

/// The same operations on `MemoryStore` and on Redis give the same results, job fields and
/// events (tokens, sequence numbers and orders aside).
#[tokio::test]
async fn mirrors_the_memory_store() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let mut memory = MemoryStore::new(StoreConfig {
        max_events: 100,
        ..StoreConfig::default()
    });
    let backoff = Some(Backoff {
        kind: BackoffKind::Exponential,
        delay: 100,
        jitter: 0.0,
        name: None,
    });
    let jobs = vec![
        job("a", |o| {
            o.attempts = 3;
            o.backoff = backoff.clone();
        }),
        job("b", |o| {
            o.attempts = 2;
            o.priority = 2;
        }),
        job("c", |o| o.max_stalled_count = 0),
        job("d", |o| o.lifo = true),
        job("e", |o| o.remove_on_fail = Retention::RemoveAll),
    ];
    let ids = add(&redis, jobs.clone()).await;
    memory
        .add_bulk(
            jobs.into_iter()
                .map(|j| (j.name, j.data, j.options))
                .collect(),
            T,
        )
        .unwrap();

    // Claim everything; both hand out the same jobs in the same order.
    let from_redis = redis.claim("w", 1000, 10, T).await.unwrap();
    let from_memory = lifecycle::claim(&mut memory, "w", 1000, 10, T).unwrap();
    let names = |jobs: &[Job]| jobs.iter().map(|j| j.id.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&from_redis), names(&from_memory));
    let tokens =
        |jobs: &[Job], id: &str| token(jobs.iter().find(|j| &*j.id == id).expect("claimed"));

    let steps: Vec<(&str, u64)> = vec![
        ("1", T + 10), // a: retried after 100
        ("2", T + 20), // b: retried at once (no backoff)
        ("5", T + 30), // e: fails for good, removed
    ];
    for (id, now) in steps {
        let f = |jobs: &[Job]| Failure {
            id: id.into(),
            token: tokens(jobs, id),
            error: format!("err {id}"),
            stacktrace: Some(format!("trace {id}")),
            retry: true,
            delay: None,
        };
        let r = redis.fail_many(vec![f(&from_redis)], now).await.unwrap();
        let f = f(&from_memory);
        let m = lifecycle::fail(&mut memory, &f, now);
        assert_eq!(r, [m], "fail {id}");
    }
    // d goes back to the front; a stale release is refused the same way.
    redis
        .release("4".into(), tokens(&from_redis, "4"), T + 40)
        .await
        .unwrap();
    lifecycle::release(&mut memory, "4", &tokens(&from_memory, "4"), T + 40).unwrap();
    assert_eq!(
        redis.release("4".into(), "x".into(), T + 41).await,
        lifecycle::release(&mut memory, "4", "x", T + 41)
    );
    assert_eq!(
        redis.release("3".into(), "x".into(), T + 41).await,
        lifecycle::release(&mut memory, "3", "x", T + 41)
    );
    // c stalls (max 0) and fails; the rest is claimed again and moved around.
    assert_eq!(
        redis.recover_stalled(T + 1000).await.unwrap(),
        lifecycle::recover_stalled(&mut memory, T + 1000).unwrap()
    );
    let again_redis = redis.claim("w", 1000, 10, T + 1000).await.unwrap();
    let again_memory = lifecycle::claim(&mut memory, "w", 1000, 10, T + 1000).unwrap();
    assert_eq!(names(&again_redis), names(&again_memory));
    redis
        .move_to_delayed("4".into(), tokens(&again_redis, "4"), T + 5000, T + 1001)
        .await
        .unwrap();
    lifecycle::move_to_delayed(
        &mut memory,
        "4",
        &tokens(&again_memory, "4"),
        T + 5000,
        T + 1001,
    )
    .unwrap();
    assert_eq!(
        redis
            .renew_many(
                vec![
                    ("2".into(), tokens(&again_redis, "2")),
                    ("4".into(), "x".into())
                ],
                3000,
                T + 1500
            )
            .await
            .unwrap(),
        ["2", "4"]
            .iter()
            .map(|id| {
                let token = if *id == "2" {
                    tokens(&again_memory, "2")
                } else {
                    "x".into()
                };
                lifecycle::renew(&mut memory, id, &token, 3000, T + 1500)
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(
        redis.recover_stalled(T + 2000).await.unwrap(),
        lifecycle::recover_stalled(&mut memory, T + 2000).unwrap()
    );

    for id in &ids {
        let (r, m) = (redis.get_job(id).await.unwrap(), memory.get_job(id));
        let normalize = |j: Option<Job>| {
            j.map(|j| {
                (
                    j.state,
                    j.priority,
                    j.delay_until,
                    j.processed_on,
                    j.finished_on,
                    j.attempts_made,
                    j.stalled_count,
                    j.failed_reason,
                    j.stacktrace,
                    j.lock.map(|l| (l.worker_id, l.expires_at)),
                    j.order.signum(),
                )
            })
        };
        assert_eq!(normalize(r), normalize(m), "job {id}");
    }
    assert_eq!(redis.counts().await.unwrap().to_vec(), {
        JobState::ALL
            .iter()
            .map(|s| memory.count(*s))
            .collect::<Vec<_>>()
    });
    let from_memory: Vec<Event> = memory
        .read_events(0, u64::MAX, 0)
        .into_iter()
        .map(event_shape)
        .collect();
    assert_eq!(events(&server).await, from_memory);
}
