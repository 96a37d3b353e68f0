//! Against real redis-server instances started on free loopback ports.

mod common;

use std::time::Duration;

use common::{raw, Server};
use lanemq_core::CoreError;
use lanemq_redis::{describe, mask_url, RedisBackend, ServerOptions};

#[tokio::test]
async fn connects_and_refuses_an_evicting_server() {
    let server = Server::start(&[]);
    RedisBackend::connect(&server.url(), "lanemq", "q", 100, false)
        .await
        .expect("connects to a noeviction server");
    let evicting = Server::start(&["--maxmemory-policy", "allkeys-lru"]);
    let error = RedisBackend::connect(&evicting.url(), "lanemq", "q", 100, false)
        .await
        .err()
        .expect("refused");
    assert!(matches!(error, CoreError::InvalidConfig(_)), "{error:?}");
    assert!(error.to_string().contains("allkeys-lru"), "{error}");
    RedisBackend::connect(&evicting.url(), "lanemq", "q", 100, true)
        .await
        .expect("accepted when allowed");
}

#[tokio::test]
async fn errors_name_the_address_not_the_password() {
    let url = "redis://user:s3cret@127.0.0.1:1/0";
    let error = RedisBackend::connect(url, "lanemq", "q", 100, false)
        .await
        .err()
        .expect("nothing listens on port 1");
    assert!(matches!(error, CoreError::Connection(_)), "{error:?}");
    let error = error.to_string();
    assert!(error.contains("127.0.0.1:1"), "{error}");
    assert!(!error.contains("s3cret"), "{error}");
    assert_eq!(describe(url), "redis://127.0.0.1:1");
    let bad = RedisBackend::connect("redis://user:s3cret@[bad", "lanemq", "q", 100, false)
        .await
        .err()
        .expect("unparsable");
    assert!(matches!(bad, CoreError::InvalidConfig(_)), "{bad:?}");
    let bad = bad.to_string();
    assert!(!bad.contains("s3cret"), "{bad}");
    assert!(bad.contains(&mask_url("redis://user:s3cret@[bad")), "{bad}");
}

#[tokio::test]
async fn opening_does_no_io_and_queues_of_one_url_share_a_server() {
    let options = ServerOptions::default();
    // Nothing listens on port 1: opening succeeds anyway, the first call fails.
    let url = "redis://127.0.0.1:1/0";
    let first = RedisBackend::open(url, &options, "lanemq", "a", 100, false).unwrap();
    let second = RedisBackend::open(url, &options, "lanemq", "b", 100, false).unwrap();
    assert_eq!(first.server().id(), second.server().id());
    let other = ServerOptions {
        connect_timeout: Duration::from_secs(1),
        ..ServerOptions::default()
    };
    let third = RedisBackend::open(url, &other, "lanemq", "c", 100, false).unwrap();
    assert_ne!(first.server().id(), third.server().id());
    assert!(matches!(first.ready().await, Err(CoreError::Connection(_))));
}

#[tokio::test]
async fn a_connection_the_server_dropped_is_replaced_before_the_next_call() {
    let server = Server::start(&[]);
    let redis = RedisBackend::connect(&server.url(), "lanemq", "q", 100, false)
        .await
        .unwrap();
    assert_eq!(redis.counts().await.unwrap().iter().sum::<usize>(), 0);
    let mut killer = raw(&server).await;
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut killer)
        .await
        .unwrap();
    assert!(killed >= 1);
    // The connection's task sees the close at once; give it that moment.
    tokio::time::sleep(Duration::from_millis(100)).await;
    redis
        .counts()
        .await
        .expect("the first call after the drop succeeds");
}
