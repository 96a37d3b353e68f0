//! Against real redis-server instances started on free loopback ports.

mod common;

use common::Server;
use lanemq_redis::{connect, describe};

#[tokio::test]
async fn connects_and_refuses_an_evicting_server() {
    let server = Server::start(&[]);
    connect(&server.url(), false)
        .await
        .expect("connects to a noeviction server");
    let evicting = Server::start(&["--maxmemory-policy", "allkeys-lru"]);
    let error = connect(&evicting.url(), false)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("allkeys-lru"), "{error}");
    connect(&evicting.url(), true)
        .await
        .expect("accepted when allowed");
}

#[tokio::test]
async fn errors_name_the_address_not_the_password() {
    let url = "redis://user:s3cret@127.0.0.1:1/0";
    let error = connect(url, false)
        .await
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(error.contains("127.0.0.1:1"), "{error}");
    assert!(!error.contains("s3cret"), "{error}");
    assert_eq!(describe(url), "redis://127.0.0.1:1");
    let bad = connect("redis://user:s3cret@[bad", false)
        .await
        .err()
        .expect("unparsable")
        .to_string();
    assert!(!bad.contains("s3cret"), "{bad}");
}
