//! What a queue keeps for observation on Redis (metrics, the worker registry): its keys, the
//! scripts that take keys of their own reaching the server both ways (FCALL, and EVALSHA where
//! functions are off) and after the server lost the library, and `obliterate` deleting them.
//! The behaviour itself is the conformance suite's (`tests/conformance/test_observe.py`).

mod common;

use common::{backend, raw, Server, T};
use lanemq_core::jobs::metrics::{Metrics, MINUTE};
use lanemq_core::jobs::MetricsKind;
use lanemq_redis::RedisBackend;

/// Records two minutes and a worker, and reads them back.
async fn record_and_read(redis: &RedisBackend) {
    let counts = vec![(T - T % MINUTE, 2), (T - T % MINUTE + 2 * MINUTE, 1)];
    redis
        .record_metrics(MetricsKind::Completed, counts, 10)
        .await
        .unwrap();
    let metrics = redis
        .get_metrics(MetricsKind::Completed, 0, -1)
        .await
        .unwrap();
    let newest = T - T % MINUTE + 2 * MINUTE;
    assert_eq!(
        metrics,
        Metrics {
            count: 3,
            data: vec![1, 0, 2],
            data_points: 3,
            newest_minute: Some(newest),
        }
    );
    redis
        .heartbeat_worker("w".into(), "{}".into(), 1000, T)
        .await
        .unwrap();
    let workers = redis.get_workers(T).await.unwrap();
    assert_eq!(workers.len(), 1);
    assert_eq!(
        (workers[0].info.as_str(), workers[0].last_heartbeat),
        ("{}", T)
    );
    assert!(redis.get_workers(T + 1000).await.unwrap().is_empty());
}

/// The names of the keys on the server.
async fn keys(server: &Server) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut raw(server).await)
        .await
        .unwrap();
    keys.sort();
    keys
}

#[tokio::test]
async fn the_scripts_with_keys_of_their_own_run_by_fcall_and_by_evalsha() {
    let server = Server::start(&[]);
    record_and_read(&backend(&server).await).await;
    let server = Server::start(&[]);
    record_and_read(&backend(&server).await.without_functions()).await;
}

#[tokio::test]
async fn a_library_the_server_lost_is_loaded_again_for_them() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    redis.get_workers(T).await.unwrap();
    let _: String = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut raw(&server).await)
        .await
        .unwrap();
    record_and_read(&redis).await;
}

#[tokio::test]
async fn the_keys_are_the_queues_and_obliterate_deletes_them() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    record_and_read(&redis).await;
    redis
        .record_metrics(MetricsKind::Failed, vec![(T - T % MINUTE, 1)], 10)
        .await
        .unwrap();
    redis
        .heartbeat_worker("w".into(), "{}".into(), 1000, T)
        .await
        .unwrap();
    assert_eq!(
        keys(&server).await,
        [
            "lanemq:{test}:metrics:completed",
            "lanemq:{test}:metrics:completed:data",
            "lanemq:{test}:metrics:failed",
            "lanemq:{test}:metrics:failed:data",
            "lanemq:{test}:workers",
            "lanemq:{test}:workers:expiry",
        ]
    );
    redis.obliterate(true, T).await.unwrap();
    assert_eq!(keys(&server).await, Vec::<String>::new());
}
