//! The event stream on Redis: a script call's events are one stream entry (`emit` in
//! `lua/includes/common.lua`), read back one event at a time with consecutive ids, by range and
//! limit, and trimmed exactly even where an entry straddles the bound.

mod common;

use common::{completion, job, raw, Server, T};
use lanemq_core::jobs::FinishedResult;
use lanemq_redis::RedisBackend;

const EVENTS: &str = "lanemq:{test}:events";

/// Queue `test` keeping up to `max_events` events.
async fn queue(server: &Server, max_events: usize) -> RedisBackend {
    RedisBackend::connect(&server.url(), "lanemq", "test", max_events, false)
        .await
        .expect("connects")
}

async fn add_bulk(redis: &RedisBackend, n: usize) -> Vec<String> {
    let jobs = (0..n).map(|_| job("w", |_| {})).collect();
    let added = redis.add_bulk(jobs, T, 1 << 20).await.unwrap();
    added.into_iter().map(|(j, _)| j.id.to_string()).collect()
}

async fn entries(server: &Server) -> usize {
    redis::cmd("XLEN")
        .arg(EVENTS)
        .query_async(&mut raw(server).await)
        .await
        .unwrap()
}

/// Every event as (id, event, job).
async fn all(
    redis: &RedisBackend,
    start: u64,
    end: u64,
    limit: usize,
) -> Vec<(u64, String, String)> {
    redis
        .read_events(start, end, limit)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            let job = e.job_id.map(|j| j.to_string()).unwrap_or_default();
            (e.id, e.event.to_owned(), job)
        })
        .collect()
}

#[tokio::test]
async fn a_calls_events_are_one_entry_read_back_one_by_one() {
    let server = Server::start(&[]);
    let redis = queue(&server, 10_000).await;
    let ids = add_bulk(&redis, 3).await;
    assert_eq!(entries(&server).await, 1);
    let events = redis.read_events(0, u64::MAX, 0).await.unwrap();
    let shape: Vec<(u64, &str, String)> = events
        .iter()
        .map(|e| (e.id, e.event, e.job_id.as_deref().unwrap_or("").to_owned()))
        .collect();
    let mut expected = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        expected.push((2 * k as u64 + 1, "added", id.clone()));
        expected.push((2 * k as u64 + 2, "waiting", id.clone()));
    }
    assert_eq!(shape, expected);
    assert!(events.iter().all(|e| e.timestamp == T));
    assert_eq!(
        events[0].field.as_ref().map(|(k, v)| (*k, v.as_str())),
        Some(("name", "w"))
    );
    assert_eq!(redis.last_event_id().await.unwrap(), 6);
}

#[tokio::test]
async fn ranges_and_limits_cut_through_entries_and_pages() {
    let server = Server::start(&[]);
    let redis = queue(&server, 100_000).await;
    // A big batch is written as several entries (each of at most ~1,000 arguments); many
    // single adds make more entries than one page of XRANGE.
    add_bulk(&redis, 700).await;
    for _ in 0..600 {
        add_bulk(&redis, 1).await;
    }
    assert!(entries(&server).await > 600);
    let every = all(&redis, 0, u64::MAX, 0).await;
    assert_eq!(every.len(), 2 * 1300);
    let ids: Vec<u64> = every.iter().map(|e| e.0).collect();
    assert_eq!(ids, (1..=2600).collect::<Vec<u64>>());
    for (start, end, limit) in [
        (1, 2600, 0),
        (5, 1401, 0),
        (1399, 1402, 0),
        (700, 2600, 777),
        (2600, 9999, 3),
    ] {
        let expected: Vec<_> = every
            .iter()
            .filter(|e| e.0 >= start && e.0 <= end)
            .take(if limit == 0 { usize::MAX } else { limit })
            .cloned()
            .collect();
        assert_eq!(
            all(&redis, start, end, limit).await,
            expected,
            "{start}..={end} limit {limit}"
        );
    }
}

#[tokio::test]
async fn trimming_is_exact_where_an_entry_straddles_the_bound() {
    let server = Server::start(&[]);
    let redis = queue(&server, 10_000).await;
    let ids = add_bulk(&redis, 3).await; // events 1..=6, one entry
    assert_eq!(redis.trim_events(2).await.unwrap(), 4);
    let kept = all(&redis, 0, u64::MAX, 0).await;
    assert_eq!(
        kept,
        [
            (5, "added".into(), ids[2].clone()),
            (6, "waiting".into(), ids[2].clone())
        ]
    );
    assert_eq!(redis.trim_events(5).await.unwrap(), 0);
    // Ids go on from where they were; the new entry is read after the kept part of the old.
    add_bulk(&redis, 1).await;
    let after: Vec<u64> = all(&redis, 0, u64::MAX, 0)
        .await
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(after, [5, 6, 7, 8]);
    assert_eq!(redis.trim_events(1).await.unwrap(), 3);
    assert_eq!(entries(&server).await, 1);
    assert_eq!(redis.trim_events(0).await.unwrap(), 1);
    assert_eq!(entries(&server).await, 0);
    assert!(all(&redis, 0, u64::MAX, 0).await.is_empty());
}

#[tokio::test]
async fn the_stream_keeps_about_max_events_events() {
    let server = Server::start(&[]);
    let redis = queue(&server, 300).await;
    for _ in 0..20 {
        add_bulk(&redis, 100).await; // 200 events a call
    }
    let kept = all(&redis, 0, u64::MAX, 0).await;
    // Trimming is approximate (whole nodes of the stream): at least the newest 300 stay, and
    // far fewer than the 4,000 written.
    assert!(
        kept.len() >= 300 && kept.len() < 2_000,
        "{} kept",
        kept.len()
    );
    assert_eq!(kept.last().map(|e| e.0), Some(4_000));
}

#[tokio::test]
async fn entries_of_one_event_each_from_before_still_read() {
    let server = Server::start(&[]);
    let redis = queue(&server, 10_000).await;
    let mut connection = raw(&server).await;
    // As emit wrote them before a call's events were gathered into one entry.
    for (id, fields) in [
        (
            "1-0",
            vec![
                "event",
                "completed",
                "ts",
                "5",
                "job",
                "7",
                "returnvalue",
                "1",
            ],
        ),
        ("2-0", vec!["event", "drained", "ts", "6"]),
    ] {
        let _: String = redis::cmd("XADD")
            .arg(EVENTS)
            .arg(id)
            .arg(fields)
            .query_async(&mut connection)
            .await
            .unwrap();
    }
    let events = redis.read_events(0, u64::MAX, 0).await.unwrap();
    let shape: Vec<_> = events
        .iter()
        .map(|e| {
            let field = e.field.as_ref().map(|(k, v)| (*k, v.as_str().to_owned()));
            (
                e.id,
                e.timestamp,
                e.event,
                e.job_id.as_deref().map(str::to_owned),
                field,
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (
                1,
                5,
                "completed",
                Some("7".to_owned()),
                Some(("returnvalue", "1".to_owned()))
            ),
            (2, 6, "drained", None, None),
        ]
    );
}

#[tokio::test]
async fn waiting_for_events_after_the_last_is_not_woken_by_its_entry() {
    let server = Server::start(&[]);
    let redis = queue(&server, 10_000).await;
    add_bulk(&redis, 3).await; // events 1..=6 in entry 6-6
    assert!(redis.wait_events(4, Some(1_000)).await.unwrap());
    let started = std::time::Instant::now();
    assert!(!redis.wait_events(6, Some(300)).await.unwrap());
    assert!(started.elapsed() >= std::time::Duration::from_millis(250));
}

#[tokio::test]
async fn a_wait_begun_after_its_job_was_removed_finds_it_missing() {
    let server = Server::start(&[]);
    let redis = queue(&server, 10_000).await;
    let gone = job("gone", |o| {
        o.remove_on_complete = lanemq_core::jobs::Retention::RemoveAll
    });
    let [(added, _)] = &redis.add_bulk(vec![gone], T, 1 << 20).await.unwrap()[..] else {
        panic!("one job added")
    };
    let [claimed] = &redis.claim("w", 30_000, 1, T).await.unwrap()[..] else {
        panic!("one job claimed")
    };
    redis
        .complete_many(vec![completion(claimed, "1")], T)
        .await
        .unwrap();
    let id = added.id.to_string();
    assert!(redis.get_job(&id).await.unwrap().is_none(), "removed");
    // Its `completed` event is in the stream, but it was recorded before the wait began: the
    // job was gone by then, as BullMQ's "missing key" (and the in-process backends) say.
    let events = all(&redis, 0, u64::MAX, 0).await;
    assert!(events.iter().any(|e| e.1 == "completed"), "{events:?}");
    assert_eq!(
        redis.wait_finished(&id, Some(10)).await.unwrap(),
        FinishedResult::Missing
    );
}

#[tokio::test]
async fn readers_show_the_newest_max_events_of_a_stream_trimmed_by_whole_nodes() {
    let server = Server::start(&[]);
    let redis = queue(&server, 20).await;
    for _ in 0..100 {
        add_bulk(&redis, 2).await; // 4 events a call, one entry
    }
    // The server keeps a node more than the newest 20 (approximate trimming), readers 20.
    assert!(
        entries(&server).await > 5,
        "{} entries",
        entries(&server).await
    );
    let ids: Vec<u64> = all(&redis, 0, u64::MAX, 0)
        .await
        .iter()
        .map(|e| e.0)
        .collect();
    assert_eq!(ids, (381..=400).collect::<Vec<u64>>());
    assert_eq!(all(&redis, 390, 392, 0).await.len(), 3);
    // An explicit trim counts only the events readers still saw.
    assert_eq!(redis.trim_events(5).await.unwrap(), 15);
    assert_eq!(all(&redis, 0, u64::MAX, 0).await.len(), 5);
}
