//! Job schedulers on a real redis-server: the window in which a claim has started a cron
//! scheduler's pending occurrence but found no usable upcoming run time (lua/README.md), when
//! the claiming client dies before it produces the next occurrence itself: `recover_stalled`
//! produces it, as the memory store's claim would have.

mod common;

use common::{backend, Server, T};
use lanemq_core::jobs::{lifecycle, JobOptions, MemoryStore, StoreConfig, Template};
use lanemq_core::schedule::ScheduleSpec;
use lanemq_redis::RedisBackend;
use redis::Script;

const HOUR: u64 = 3_600_000;

fn template() -> Template {
    Template {
        name: "tick".into(),
        data: "null".into(),
        options: JobOptions::default(),
    }
}

/// The claim script alone, as a client that dies right after it ran would have called it.
async fn claim_script_only(redis: &RedisBackend, server: &Server, now: u64) -> usize {
    let script = Script::new(&format!(
        "{}\n{}\n{}\n{}\n{}",
        include_str!("../../../lua/includes/common.lua"),
        include_str!("../../../lua/includes/jobs.lua"),
        include_str!("../../../lua/includes/flows.lua"),
        include_str!("../../../lua/includes/schedulers.lua"),
        include_str!("../../../lua/claim-2.lua"),
    ));
    let mut invocation = script.prepare_invoke();
    for key in redis.keys().script_keys() {
        invocation.key(key);
    }
    for arg in [now.to_string(), "100".into(), "w".into(), "60000".into()] {
        invocation.arg(arg);
    }
    invocation.arg("10").arg("seed");
    let mut raw = common::raw(server).await;
    let claimed: Vec<redis::Value> = invocation.invoke_async(&mut raw).await.unwrap();
    // claim_jobs' reply: empty, or how many it claimed first (decode::claimed_jobs).
    match claimed.first() {
        Some(redis::Value::Int(n)) => *n as usize,
        _ => 0,
    }
}

#[tokio::test]
async fn a_stale_cron_scheduler_is_repaired_by_recover_stalled() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    let spec = ScheduleSpec::cron("* * * * * *", "UTC");
    let mut memory = MemoryStore::new(StoreConfig::default());

    let first = redis
        .upsert_scheduler("k".into(), spec.clone(), template(), T, 1 << 20)
        .await
        .unwrap();
    let expected = memory
        .upsert_scheduler("k", spec.clone(), template(), T)
        .unwrap();
    assert_eq!(first.id, expected.id);
    assert_eq!(&*first.id, "repeat:k:1700000001000");

    // The worker was away for an hour: the record's 64 upcoming times are all past.
    let now = T + HOUR + 500;
    assert_eq!(claim_script_only(&redis, &server, now).await, 1);
    assert_eq!(
        lifecycle::claim(&mut memory, "w", 60_000, 10, now)
            .unwrap()
            .len(),
        1
    );
    let stale = redis.get_scheduler("k".into()).await.unwrap().unwrap();
    assert_eq!((stale.iteration_count, stale.job_id), (1, None));

    // Any worker's stall check produces the occurrence the claim would have.
    assert_eq!(
        redis.recover_stalled(now + 100).await.unwrap(),
        (vec![], vec![])
    );
    let repaired = redis.get_scheduler("k".into()).await.unwrap().unwrap();
    let wanted = memory.get_scheduler("k").unwrap();
    assert_eq!(
        (
            repaired.iteration_count,
            repaired.next_run,
            &repaired.job_id
        ),
        (wanted.iteration_count, wanted.next_run, &wanted.job_id)
    );
    assert_eq!(repaired.next_run, T + HOUR + 1000);
    assert_eq!(repaired.job_id.as_deref(), Some("repeat:k:1700003601000"));

    // And the schedule goes on from there, with a fresh list.
    let claimed = redis.claim("w", 60_000, 10, T + HOUR + 1000).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let next = redis.get_scheduler("k".into()).await.unwrap().unwrap();
    assert_eq!(
        (next.iteration_count, next.job_id.as_deref()),
        (3, Some("repeat:k:1700003602000"))
    );
}
