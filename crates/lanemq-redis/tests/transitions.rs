//! The first transitions on a real redis-server: add, claim, complete (the conformance suite
//! takes over once the whole contract runs on Redis).

mod common;

use common::{backend, completion, job, raw, Server, T};
use lanemq_core::jobs::{Completion, JobState, Retention};

#[tokio::test]
async fn claims_in_priority_then_fifo_order_with_zero_first_and_lifo_newest_first() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let added = redis
        .add_bulk(
            vec![
                job("p5", |o| o.priority = 5),
                job("none-a", |_| {}),
                job("p1", |o| o.priority = 1),
                job("none-b", |_| {}),
                job("lifo", |o| o.lifo = true),
            ],
            T,
            1 << 20,
        )
        .await
        .unwrap();
    assert!(added.iter().all(|(_, created)| *created));
    let order: Vec<String> = redis
        .claim("w", 1000, 10, T)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.name.to_string())
        .collect();
    assert_eq!(order, ["lifo", "none-a", "none-b", "p1", "p5"]);
}

#[tokio::test]
async fn complete_is_fenced_and_retention_applies() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let remove = job("gone", |o| o.remove_on_complete = Retention::RemoveAll);
    let keep = job("kept", |o| o.job_id = Some("welcome:ops".into()));
    redis
        .add_bulk(vec![remove, keep], T, 1 << 20)
        .await
        .unwrap();
    let claimed = redis.claim("w", 1000, 2, T).await.unwrap();
    assert_eq!(claimed.len(), 2);
    assert!(claimed
        .iter()
        .all(|j| j.state == JobState::Active && j.attempts_made == 1));
    let done: Vec<Completion> = claimed.iter().map(|j| completion(j, "42")).collect();
    let stale = Completion {
        id: "welcome:ops".into(),
        token: "stale".into(),
        result: "0".into(),
    };
    let outcomes = redis.complete_many(vec![stale], T + 1).await.unwrap();
    assert!(outcomes[0]
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("another token"));
    let outcomes = redis.complete_many(done, T + 1).await.unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert!(
        redis.get_job(&claimed[0].id).await.unwrap().is_none(),
        "removed on complete"
    );
    let kept = redis.get_job("welcome:ops").await.unwrap().expect("kept");
    assert_eq!(
        (kept.state, kept.return_value.as_deref()),
        (JobState::Completed, Some("42"))
    );
    assert_eq!(redis.counts().await.unwrap(), [0, 0, 0, 0, 1, 0]);
    let (again, created) = redis
        .add_bulk(
            vec![job("x", |o| o.job_id = Some("welcome:ops".into()))],
            T,
            1 << 20,
        )
        .await
        .unwrap()
        .remove(0);
    assert!(
        !created && again.state == JobState::Completed,
        "a custom id that exists returns the job"
    );
}

#[tokio::test]
async fn delayed_jobs_are_promoted_by_claim_on_time() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    redis
        .add_bulk(vec![job("later", |o| o.delay = 5000)], T, 1 << 20)
        .await
        .unwrap();
    assert!(redis
        .claim("w", 1000, 1, T + 4999)
        .await
        .unwrap()
        .is_empty());
    let claimed = redis.claim("w", 1000, 1, T + 5000).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].delay_until, T + 5000);
}

#[tokio::test]
async fn job_field_hashes_are_hash_tables_from_the_first_job() {
    // A listpack-encoded hash is searched entry by entry; the layout keeps every field hash a
    // hash table, even while it holds a handful of jobs (lua/README.md).
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    redis
        .add_bulk(vec![job("one", |_| {})], T, 1 << 20)
        .await
        .unwrap();
    let claimed = redis.claim("w", 1000, 1, T).await.unwrap();
    redis
        .complete_many(vec![completion(&claimed[0], "null")], T)
        .await
        .unwrap();
    let mut connection = raw(&server).await;
    for key in redis.keys().fields() {
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .unwrap();
        assert_eq!(encoding, "hashtable", "{key}");
    }
}

#[tokio::test]
async fn wake_ups_carry_when_work_is_due_and_a_paused_queue_sets_none() {
    // Idle workers block on the marker and claim at once when its score has passed
    // (lua/README.md); these are the writes that make that right.
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let mut connection = raw(&server).await;
    let marker = redis.keys().key("marker");
    let mut due = async || -> Option<f64> {
        redis::cmd("ZSCORE")
            .arg(&marker)
            .arg("w")
            .query_async(&mut connection)
            .await
            .unwrap()
    };
    let mut clear = raw(&server).await;
    let marker_key = redis.keys().key("marker");
    let mut reset = async || {
        let _: () = redis::cmd("DEL")
            .arg(&marker_key)
            .query_async(&mut clear)
            .await
            .unwrap();
    };

    redis
        .add_bulk(vec![job("later", |o| o.delay = 5000)], T, 1 << 20)
        .await
        .unwrap();
    assert_eq!(
        due().await,
        Some((T + 5000) as f64),
        "a delayed add: due then"
    );
    redis
        .add_bulk(vec![job("now", |_| {})], T, 1 << 20)
        .await
        .unwrap();
    assert_eq!(due().await, Some(0.0), "the earliest wake-up wins");

    reset().await;
    redis
        .add_bulk(vec![job("more", |_| {})], T, 1 << 20)
        .await
        .unwrap();
    reset().await;
    assert_eq!(redis.claim("w", 1000, 1, T).await.unwrap().len(), 1);
    assert_eq!(
        due().await,
        Some(0.0),
        "jobs left waiting wake the next idle worker"
    );
    reset().await;
    assert_eq!(redis.claim("w", 1000, 5, T).await.unwrap().len(), 1);
    assert_eq!(due().await, None, "the last job taken wakes nobody");

    redis.pause(T).await.unwrap();
    redis
        .add_bulk(vec![job("paused", |_| {})], T, 1 << 20)
        .await
        .unwrap();
    assert_eq!(due().await, None, "a paused queue wakes nobody");
    redis.resume(T).await.unwrap();
    assert_eq!(due().await, Some(0.0), "resuming does");
}
