//! The first transitions on a real redis-server: add, claim, complete (the conformance suite
//! takes over once the whole contract runs on Redis).

mod common;

use common::{backend, completion, job, raw, store_field, stored_field, Server, T};
use lanemq_core::jobs::{Completion, Dedup, JobState, Retention};

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

/// The add reply leaves new jobs' ids, seqs and orders for the client to derive, `ord` is
/// stored only where it differs from `seq` (LIFO), and default options not at all: what add
/// returns must be what was stored, and jobs of both kinds must leave `waiting` when removed,
/// reprioritised or rescheduled.
#[tokio::test]
async fn added_jobs_match_what_was_stored_and_leave_waiting_cleanly() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let first = redis
        .add_bulk(
            vec![job("taken", |o| o.job_id = Some("c1".into()))],
            T,
            1 << 20,
        )
        .await
        .unwrap();
    let batch = vec![
        job("auto-1", |_| {}),
        job("custom", |o| o.job_id = Some("c2".into())),
        job("exists", |o| o.job_id = Some("c1".into())),
        job("auto-2", |o| o.lifo = true),
        job("again", |o| o.job_id = Some("c2".into())),
        job("auto-3", |o| o.delay = 500),
        job("auto-4", |o| (o.lifo, o.delay) = (true, 500)),
        job("auto-5", |o| o.priority = 3),
        job("auto-6", |o| (o.lifo, o.priority) = (true, 3)),
    ];
    let added = redis.add_bulk(batch, T, 1 << 20).await.unwrap();
    let created: Vec<bool> = added.iter().map(|(_, created)| *created).collect();
    assert_eq!(
        created,
        [true, true, false, true, false, true, true, true, true]
    );
    assert_eq!(added[2].0.name.as_ref(), "taken");
    assert_eq!(added[4].0.name.as_ref(), "custom");
    let ids: Vec<&str> = added.iter().map(|(job, _)| job.id.as_ref()).collect();
    assert_eq!(ids, ["1", "c2", "c1", "2", "c2", "3", "4", "5", "6"]);
    let mut seqs = vec![first[0].0.seq];
    for (job, _) in &added {
        let stored = redis.get_job(&job.id).await.unwrap().unwrap();
        let shape = |j: &lanemq_core::jobs::Job| {
            (
                j.name.clone(),
                j.state,
                j.seq,
                j.order,
                j.priority,
                j.delay_until,
            )
        };
        assert_eq!(shape(job), shape(&stored), "job {}", job.id);
        if !seqs.contains(&job.seq) {
            seqs.push(job.seq);
        }
    }
    // One seq per new job, counting up; FIFO orders are the seq, LIFO ones its negation.
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    assert_eq!(added[0].0.order, added[0].0.seq as i64);
    assert_eq!(added[3].0.order, -(added[3].0.seq as i64));
    assert_eq!(
        added[6].0.order, added[6].0.seq as i64,
        "a delayed job keeps its seq"
    );
    assert_eq!(stored_field(&server, "ord", "1").await, None);
    assert_eq!(
        stored_field(&server, "opts", "1").await,
        None,
        "default options"
    );
    assert!(stored_field(&server, "opts", "2").await.is_some());
    // A job without stored options exists all the same, and has no parent to leave.
    assert_eq!(
        redis.remove_child_dependency("1".into(), T).await,
        Ok(false)
    );
    assert_eq!(
        redis.remove_child_dependency("nope".into(), T).await,
        Err(lanemq_core::CoreError::JobNotFound("nope".into()))
    );
    let lifo_order = stored_field(&server, "ord", "2").await;
    assert_eq!(lifo_order, Some(added[3].0.order.to_string()));
    for id in ["1", "2"] {
        redis.remove(id.into(), T).await.unwrap();
    }
    redis.update_priority("5".into(), 1, true).await.unwrap();
    redis.update_priority("6".into(), 1, false).await.unwrap();
    redis
        .reschedule("c1".into(), T + 100, T, true)
        .await
        .unwrap();
    let waiting: Vec<String> = redis
        .claim("w", 1000, 10, T)
        .await
        .unwrap()
        .into_iter()
        .map(|j| j.id.to_string())
        .collect();
    assert_eq!(waiting, ["c2", "5", "6"]);
    let mut raw = raw(&server).await;
    let left: usize = redis::cmd("ZCARD")
        .arg("lanemq:{test}:waiting")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(left, 0, "nothing stale left in waiting");
}

/// Jobs with dedup options are decided one by one between the plain ones, and the add reply
/// still leaves every new job's id, seq and order to the client: what add returns must be
/// what was stored, whether a dedup key created the job, returned its owner or replaced it.
#[tokio::test]
async fn a_batch_mixing_dedup_and_plain_jobs_returns_what_was_stored() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let dedup = |id: &str, replace: bool| {
        let mut key = Dedup::simple(id);
        key.replace = replace;
        Some(key)
    };
    redis
        .add_bulk(
            vec![job("r1", |o| {
                (o.delay, o.dedup) = (1000, dedup("k3", true))
            })],
            T,
            1 << 20,
        )
        .await
        .unwrap();
    let batch = vec![
        job("c", |o| o.job_id = Some("x".into())),
        job("b", |o| o.dedup = dedup("k", false)),
        job("a", |_| {}),
        job("d", |o| o.dedup = dedup("k", false)),
        job("e", |o| {
            (o.job_id, o.dedup) = (Some("y".into()), dedup("k2", false))
        }),
        job("r2", |o| (o.lifo, o.dedup) = (true, dedup("k3", true))),
        job("f", |o| o.lifo = true),
    ];
    let added = redis.add_bulk(batch, T, 1 << 20).await.unwrap();
    let created: Vec<bool> = added.iter().map(|(_, created)| *created).collect();
    assert_eq!(created, [true, true, true, false, true, true, true]);
    let names: Vec<&str> = added.iter().map(|(job, _)| job.name.as_ref()).collect();
    assert_eq!(names, ["c", "b", "a", "b", "e", "r2", "f"]);
    let ids: Vec<&str> = added.iter().map(|(job, _)| job.id.as_ref()).collect();
    assert_eq!(ids, ["x", "2", "3", "2", "y", "4", "5"]);
    assert!(
        redis.get_job("1").await.unwrap().is_none(),
        "r1 was replaced"
    );
    for (job, _) in &added {
        let stored = redis.get_job(&job.id).await.unwrap().unwrap();
        let shape = |j: &lanemq_core::jobs::Job| (j.name.clone(), j.state, j.seq, j.order);
        assert_eq!(shape(job), shape(&stored), "job {}", job.id);
    }
}

/// Stores the queue's jobs as layouts "2" and "3" did: every field in a hash per field
/// (`j:<field>`, job id -> value, with the "" entry that kept it a hash table), and for
/// layout "2" the waiting jobs of priority 0 in the sorted set `waiting`, scored 0.
async fn store_as_layout(raw: &mut redis::aio::MultiplexedConnection, layout: &str) {
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("lanemq:{test}:job:*")
        .query_async(raw)
        .await
        .unwrap();
    for key in keys {
        let id = key.trim_start_matches("lanemq:{test}:job:");
        let fields: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(raw)
            .await
            .unwrap();
        let mut pipe = redis::pipe();
        for (field, value) in fields {
            let hash = format!("lanemq:{{test}}:j:{field}");
            pipe.cmd("HSET").arg(&hash).arg(id).arg(value).ignore();
            pipe.cmd("HSET")
                .arg(&hash)
                .arg("")
                .arg("-".repeat(256))
                .ignore();
        }
        pipe.cmd("DEL").arg(&key).ignore();
        let _: () = pipe.query_async(raw).await.unwrap();
    }
    if layout == "2" {
        let listed: Vec<String> = redis::cmd("LRANGE")
            .arg("lanemq:{test}:waiting:0")
            .arg(0)
            .arg(-1)
            .query_async(raw)
            .await
            .unwrap();
        let mut pipe = redis::pipe();
        pipe.cmd("DEL").arg("lanemq:{test}:waiting:0").ignore();
        for member in listed {
            pipe.cmd("ZADD")
                .arg("lanemq:{test}:waiting")
                .arg(0)
                .arg(member)
                .ignore();
        }
        let _: () = pipe.query_async(raw).await.unwrap();
    }
    let _: () = redis::cmd("HSET")
        .arg("lanemq:{test}:meta")
        .arg("layout")
        .arg(layout)
        .query_async(raw)
        .await
        .unwrap();
}

/// Jobs as earlier versions stored them (a hash per field, layouts "2" and "3"; `{}` for
/// default options and an `ord` one past the seq for every waiting job) move into job hashes
/// when a queue is opened (`ensure_layout`), and are read, removed and claimed as before.
#[tokio::test]
async fn jobs_stored_by_earlier_layouts_move_into_job_hashes() {
    for layout in ["2", "3"] {
        let server = Server::start(&[]);
        let redis = backend(&server).await;
        let added = redis
            .add_bulk(
                vec![
                    job("old-a", |_| {}),
                    job("old-b", |_| {}),
                    job("old-c", |o| o.priority = 3),
                ],
                T,
                1 << 20,
            )
            .await
            .unwrap();
        let mut raw = raw(&server).await;
        for (job, _) in &added[..2] {
            let order = job.seq as i64 + 1;
            let offset = 1i64 << 52;
            let new_member = format!("{:014x}{}", job.seq as i64 + offset, job.id);
            let old_member = format!("{:014x}{}", order + offset, job.id);
            let _: () = redis::pipe()
                .cmd("LREM")
                .arg("lanemq:{test}:waiting:0")
                .arg(1)
                .arg(new_member)
                .cmd("RPUSH")
                .arg("lanemq:{test}:waiting:0")
                .arg(old_member)
                .query_async(&mut raw)
                .await
                .unwrap();
            store_field(&server, "ord", &job.id, &order.to_string()).await;
            store_field(&server, "opts", &job.id, "{}").await;
        }
        store_as_layout(&mut raw, layout).await;
        // A queue opened now finds the old layout and moves it over.
        let redis = backend(&server).await;
        let (stored, old_hashes): (String, usize) = redis::pipe()
            .cmd("HGET")
            .arg("lanemq:{test}:meta")
            .arg("layout")
            .cmd("EXISTS")
            .arg("lanemq:{test}:j:state")
            .arg("lanemq:{test}:j:name")
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!((stored.as_str(), old_hashes), ("4", 0), "layout {layout}");
        let c = redis.get_job(&added[2].0.id).await.unwrap();
        assert_eq!(
            c.map(|j| (j.name.to_string(), j.priority)),
            Some(("old-c".into(), 3))
        );
        redis.remove(added[0].0.id.to_string(), T).await.unwrap();
        let claimed = redis.claim("w", 1000, 10, T).await.unwrap();
        let names: Vec<&str> = claimed.iter().map(|j| j.name.as_ref()).collect();
        assert_eq!(names, ["old-b", "old-c"], "layout {layout}");
        assert_eq!(claimed[0].order, claimed[0].seq as i64 + 1);
        let outcomes = redis
            .complete_many(vec![completion(&claimed[0], "1")], T)
            .await
            .unwrap();
        assert!(outcomes[0].is_ok(), "{outcomes:?}");
        let (scored, listed): (usize, usize) = redis::pipe()
            .cmd("ZCARD")
            .arg("lanemq:{test}:waiting")
            .cmd("LLEN")
            .arg("lanemq:{test}:waiting:0")
            .query_async(&mut raw)
            .await
            .unwrap();
        assert_eq!((scored, listed), (0, 0), "layout {layout}");
    }
}

/// A queue of a layout newer than this version knows is refused, and left as it is.
#[tokio::test]
async fn a_queue_of_a_newer_layout_is_refused() {
    let server = Server::start(&[]);
    let mut raw = raw(&server).await;
    let _: () = redis::cmd("HSET")
        .arg("lanemq:{test}:meta")
        .arg("layout")
        .arg("99")
        .query_async(&mut raw)
        .await
        .unwrap();
    let redis = lanemq_redis::RedisBackend::open(
        &server.url(),
        &Default::default(),
        "lanemq",
        "test",
        1000,
        false,
    )
    .unwrap();
    let error = redis.ready().await.unwrap_err().to_string();
    assert!(
        error.contains("\"99\"") && error.contains("newer"),
        "{error}"
    );
}

/// A first claim reads no stall count, progress, reason or trace (claim_jobs): a job given
/// progress or a stack trace before its first claim must still carry them when claimed.
#[tokio::test]
async fn a_first_claim_carries_progress_and_trace_set_while_waiting() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let added = redis
        .add_bulk(
            vec![job("edited", |_| {}), job("plain", |_| {})],
            T,
            1 << 20,
        )
        .await
        .unwrap();
    let id = added[0].0.id.to_string();
    redis
        .update_progress(id.clone(), "42".into(), T)
        .await
        .unwrap();
    redis
        .save_stacktrace(id.clone(), vec!["at line 1".into()], Some("noted".into()))
        .await
        .unwrap();
    let claimed = redis.claim("w", 1000, 2, T).await.unwrap();
    assert_eq!(claimed[0].id.as_ref(), id);
    assert_eq!(claimed[0].progress.as_ref(), "42");
    assert_eq!(claimed[0].stacktrace, ["at line 1"]);
    assert_eq!(claimed[0].failed_reason.as_deref(), Some("noted"));
    assert_eq!(claimed[0].attempts_made, 1);
    assert_eq!(claimed[1].progress.as_ref(), "0");
    assert!(claimed[1].stacktrace.is_empty() && claimed[1].failed_reason.is_none());
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
async fn a_job_is_one_small_hash_and_active_a_skiplist() {
    // A job's fields are one hash (a listpack while small: one allocation, lua/README.md);
    // `active` is kept a skiplist by its sentinel from the queue's first write.
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let added = redis
        .add_bulk(vec![job("one", |_| {})], T, 1 << 20)
        .await
        .unwrap();
    let claimed = redis.claim("w", 1000, 1, T).await.unwrap();
    redis
        .complete_many(vec![completion(&claimed[0], "null")], T)
        .await
        .unwrap();
    let mut connection = raw(&server).await;
    let (job_encoding, active_encoding): (String, String) = redis::pipe()
        .cmd("OBJECT")
        .arg("ENCODING")
        .arg(redis.keys().job(&added[0].0.id))
        .cmd("OBJECT")
        .arg("ENCODING")
        .arg(redis.keys().key("active"))
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(
        (job_encoding.as_str(), active_encoding.as_str()),
        ("listpack", "skiplist")
    );
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
