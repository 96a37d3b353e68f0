//! The shared lanes' store (`RedisLaneStore`, `lua/lanes-1.lua`) on a real redis-server:
//! what the Python tests (tests/test_redis_lane_store.py, the shared contract tests) do not
//! reach: a release goes back to the front of its lane, `leave` drops the process's pending
//! callables, dead letters are capped, `clear_all` leaves no key of the store behind while
//! another store's keys stay, a long lane is read page by page, and an abandoned wait leaves
//! the wake (and `rewake` gives one back).

mod common;

use std::sync::atomic::AtomicBool;

use common::{raw, Server};
use lanemq_core::lanes::shared::LaneSpec;
use lanemq_redis::RedisLaneStore;

fn lane(id: &str, max_concurrency: i64) -> LaneSpec {
    LaneSpec {
        lane_id: id.to_owned(),
        priority: 0,
        min_concurrency: 0,
        max_concurrency,
        rate_permits: None,
        rate_per_ms: None,
        boost_deadline_ms: None,
        boost_steps: vec![],
    }
}

async fn store(server: &Server, name: &str) -> RedisLaneStore {
    let store = RedisLaneStore::open(&server.url(), name).expect("opens");
    store.connect().await.expect("connects");
    store
        .setup("{}", &[lane("email", 1)], None)
        .await
        .expect("setup");
    store
        .join("p", &["send".to_owned()], 60_000)
        .await
        .expect("join");
    store
}

async fn claimed_ids(store: &RedisLaneStore, pid: &str, max_n: u32) -> Vec<u64> {
    let (claimed, _) = store.claim(pid, max_n).await.unwrap();
    claimed.into_iter().map(|c| c.0).collect()
}

#[tokio::test]
async fn a_released_command_goes_back_to_the_front_of_its_lane() {
    let server = Server::start(&[]);
    let store = store(&server, "release").await;
    let first = store
        .enqueue("p", 0, Some("send"), None, Some("{}"))
        .await
        .unwrap();
    let second = store
        .enqueue("p", 0, Some("send"), None, Some("{}"))
        .await
        .unwrap();
    assert_eq!(claimed_ids(&store, "p", 4).await, vec![first]);
    assert!(store.release("p", first).await.unwrap());
    assert!(!store.release("p", first).await.unwrap());
    assert_eq!(claimed_ids(&store, "p", 4).await, vec![first]);
    assert!(store.complete("p", first, "1").await.unwrap());
    assert_eq!(claimed_ids(&store, "p", 4).await, vec![second]);
}

#[tokio::test]
async fn leave_drops_the_processs_pending_callables() {
    let server = Server::start(&[]);
    let store = store(&server, "leave").await;
    store.join("q", &["send".to_owned()], 60_000).await.unwrap();
    store.enqueue("q", 0, None, Some("q"), None).await.unwrap();
    let named = store
        .enqueue("q", 0, Some("send"), None, Some("{}"))
        .await
        .unwrap();
    assert_eq!(store.stats().await.unwrap(), vec![(2, 0, 0)]);
    store.leave("q").await.unwrap();
    assert_eq!(store.stats().await.unwrap(), vec![(1, 0, 0)]);
    assert_eq!(claimed_ids(&store, "p", 4).await, vec![named]);
}

#[tokio::test]
async fn dead_letters_keep_the_newest_up_to_the_limit() {
    let server = Server::start(&[]);
    let store = store(&server, "letters").await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let id = store
            .enqueue("p", 0, Some("send"), None, Some("{}"))
            .await
            .unwrap();
        assert_eq!(claimed_ids(&store, "p", 1).await, vec![id]);
        let error = format!("ValueError: {n}");
        assert!(store.fail("p", id, &error, None, "send", 2).await.unwrap());
        ids.push(id);
    }
    let letters = store.dead_letters().await.unwrap();
    let kept: Vec<(u64, &str, &str, u64)> = letters
        .iter()
        .map(|l| (l.0, l.2.as_str(), l.3.as_str(), l.4))
        .collect();
    assert_eq!(
        kept,
        vec![
            (ids[1], "email", "ValueError: 1", 1),
            (ids[2], "email", "ValueError: 2", 1)
        ]
    );
    let outcomes = store.outcomes("p").await.unwrap();
    assert_eq!(outcomes.len(), 3);
    assert!(outcomes.iter().all(|(_, ok, _)| !ok));
}

#[tokio::test]
async fn clear_all_deletes_the_stores_keys_only() {
    let server = Server::start(&[]);
    let cleared = store(&server, "a*[glob]").await;
    let kept = store(&server, "kept").await;
    for store in [&cleared, &kept] {
        store
            .enqueue("p", 0, Some("send"), None, Some("{}"))
            .await
            .unwrap();
        store.claim("p", 1).await.unwrap();
        store
            .enqueue("p", 0, Some("send"), None, Some("{}"))
            .await
            .unwrap();
    }
    cleared.clear_all().await.unwrap();
    let mut connection = raw(&server).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut connection)
        .await
        .unwrap();
    assert!(!keys.is_empty());
    assert!(
        keys.iter()
            .all(|key| key.starts_with("lanemq:lanes:{kept}:")),
        "{keys:?}"
    );
    // A cleared store has no lanes: setup stores new ones.
    assert_eq!(
        cleared.setup("new", &[lane("x", 1)], None).await.unwrap(),
        "new"
    );
}

#[tokio::test]
async fn a_claim_reads_a_long_lane_page_by_page_in_order() {
    let server = Server::start(&[]);
    let store = RedisLaneStore::open(&server.url(), "long").expect("opens");
    store
        .setup("{}", &[lane("bulk", 1_000)], None)
        .await
        .unwrap();
    store.join("p", &["send".to_owned()], 60_000).await.unwrap();
    let mut runnable = Vec::new();
    for n in 0..330 {
        // (every third one is a name nobody runs: passed over, left pending)
        let name = if n % 3 == 0 { "nobody" } else { "send" };
        let id = store
            .enqueue("p", 0, Some(name), None, Some("{}"))
            .await
            .unwrap();
        if name == "send" {
            runnable.push(id);
        }
    }
    assert_eq!(claimed_ids(&store, "p", 1_000).await, runnable);
    assert_eq!(store.stats().await.unwrap(), vec![(110, 220, 0)]);
}

#[tokio::test]
async fn an_abandoned_wait_leaves_the_wake_and_rewake_gives_one_back() {
    let server = Server::start(&[]);
    let store = store(&server, "wakes").await;
    let (waiting, abandoned) = (AtomicBool::new(false), AtomicBool::new(true));
    store.wait("p", 0, &waiting).await.unwrap(); // (the join's token, if any, taken)
    store
        .enqueue("p", 0, Some("send"), None, Some("{}"))
        .await
        .unwrap();
    // A wait whose caller is gone takes nothing; the next one finds the wake.
    assert!(!store.wait("p", 60_000, &abandoned).await.unwrap());
    assert!(store.wait("p", 60_000, &waiting).await.unwrap());
    assert!(!store.wait("p", 0, &waiting).await.unwrap());
    // A token taken for a caller that then stopped waiting goes back; one token at most.
    store.rewake("p").await.unwrap();
    store.rewake("p").await.unwrap();
    assert!(store.wait("p", 60_000, &waiting).await.unwrap());
    assert!(!store.wait("p", 0, &waiting).await.unwrap());
}
