//! The hot calls over a wire (`WireCalls`): the same scripts and outcomes as the ordinary calls,
//! the replies that go on as ordinary calls (scripts lost, a request never sent), refusals
//! before anything is sent, and the handshake (password, database).

mod common;

use std::io::ErrorKind;

use common::{backend, completion, job, raw, Server, T};
use lanemq_core::jobs::{Completion, JobReads, JobState};
use lanemq_core::CoreError;
use lanemq_redis::{RedisBackend, RedisJobBackend, Settled, Wire, WireCall, WireCalls};

/// Writes `call`'s request and reads its reply, as an event loop would (without one).
fn exchange<T>(wire: &mut dyn Wire, call: WireCall<T>) -> Settled<T> {
    let mut at = 0;
    while at < call.request.len() {
        match wire.write(&call.request[at..]) {
            Ok(n) => at += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("write failed: {e}"),
        }
    }
    let (mut received, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        if let Some(len) = wire.frame(&received).expect("RESP") {
            assert_eq!(len, received.len(), "one reply, nothing after it");
            return (call.settle)(Some(&received));
        }
        match wire.read(&mut chunk) {
            Ok(0) => panic!("the server closed the wire"),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("read failed: {e}"),
        }
    }
}

fn done<T>(settled: Settled<T>) -> T {
    match settled {
        Settled::Done(outcome) => outcome.expect("the call succeeds"),
        Settled::Continue(_) => panic!("expected the reply to end the call"),
    }
}

async fn continued<T>(settled: Settled<T>) -> T {
    match settled {
        Settled::Continue(rest) => rest.await.expect("the ordinary call succeeds"),
        Settled::Done(_) => panic!("expected the call to go on the ordinary way"),
    }
}

/// The queue's wire calls (its ordinary calls have the same names).
fn wired(queue: &RedisJobBackend) -> &dyn WireCalls {
    queue
}

fn queue(redis: RedisBackend) -> RedisJobBackend {
    RedisJobBackend::new(redis, 1 << 20)
}

async fn count(queue: &RedisJobBackend, state: JobState) -> usize {
    queue.get_job_counts(vec![state]).await.unwrap()[0].1
}

async fn total(queue: &RedisJobBackend) -> usize {
    let counts = queue.get_job_counts(JobState::ALL.to_vec()).await.unwrap();
    counts.iter().map(|(_, n)| n).sum()
}

async fn redis_cmd(server: &Server, args: &[&str]) -> redis::Value {
    let mut cmd = redis::cmd(args[0]);
    cmd.arg(&args[1..]);
    cmd.query_async(&mut raw(server).await).await.unwrap()
}

#[tokio::test]
async fn the_hot_calls_on_a_wire_do_what_the_ordinary_calls_do() {
    let server = Server::start(&[]);
    let queue = queue(backend(&server).await);
    let mut wire = queue.open().await.expect("opens");

    let (added, created) = done(exchange(
        &mut *wire,
        wired(&queue).add(job("a", |_| {}), T).unwrap(),
    ));
    assert!(created);
    let bulk = vec![job("b", |_| {}), job("c", |o| o.priority = 3)];
    let more = done(exchange(
        &mut *wire,
        wired(&queue).add_bulk(bulk, T).unwrap(),
    ));
    assert_eq!(more.len(), 2);
    assert!(more.iter().all(|(_, created)| *created));

    let claim = wired(&queue).claim("w".into(), 30_000, 1, T + 1).unwrap();
    let claimed = done(exchange(&mut *wire, claim));
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        claimed[0].id, added.id,
        "the first added, priority 0, goes first"
    );
    let finish = vec![completion(&claimed[0], "7")];
    let call = wired(&queue)
        .complete_and_claim(finish, "w".into(), 30_000, 5, T + 2)
        .unwrap();
    let (outcomes, next) = done(exchange(&mut *wire, call));
    assert_eq!(outcomes, vec![Ok(())]);
    assert_eq!(next.len(), 2);
    let stored = queue.get_job(added.id.to_string()).await.unwrap().unwrap();
    assert_eq!(stored.state, JobState::Completed);

    let items = next
        .iter()
        .map(|job| completion(job, "null"))
        .chain([Completion {
            id: added.id.to_string(),
            token: "stale".into(),
            result: "null".into(),
        }])
        .collect();
    let call = wired(&queue).complete_many(items, T + 3).unwrap();
    let outcomes = done(exchange(&mut *wire, call));
    assert!(outcomes[..2].iter().all(Result::is_ok));
    assert!(
        outcomes[2].is_err(),
        "a stale token is refused on the wire too"
    );
    assert_eq!(count(&queue, JobState::Completed).await, 3);
}

#[tokio::test]
async fn a_job_refused_before_the_call_sends_nothing() {
    let server = Server::start(&[]);
    let queue = queue(backend(&server).await);
    let bad = job("bad", |o| o.priority = u32::MAX);
    let refused = wired(&queue).add_bulk(vec![job("fine", |_| {}), bad], T);
    assert!(matches!(refused, Err(CoreError::InvalidConfig(m)) if m.contains("job #1")));
    assert_eq!(total(&queue).await, 0);
}

#[tokio::test]
async fn a_server_that_lost_the_library_gets_it_again_through_the_ordinary_call() {
    let server = Server::start(&[]);
    let queue = queue(backend(&server).await);
    let mut wire = queue.open().await.unwrap();
    redis_cmd(&server, &["FUNCTION", "FLUSH"]).await;

    let call = wired(&queue).add(job("a", |_| {}), T).unwrap();
    let (added, created) = continued(exchange(&mut *wire, call)).await;
    assert!(created);
    // The library is back, so the wire's next call ends at its reply.
    let (again, _) = done(exchange(
        &mut *wire,
        wired(&queue).add(job("b", |_| {}), T).unwrap(),
    ));
    assert_ne!(again.id, added.id);
    assert_eq!(count(&queue, JobState::Waiting).await, 2);
}

#[tokio::test]
async fn without_functions_a_lost_script_is_loaded_again_through_the_ordinary_call() {
    let server = Server::start(&[]);
    let queue = queue(backend(&server).await.without_functions());
    let mut wire = queue.open().await.unwrap();
    redis_cmd(&server, &["SCRIPT", "FLUSH"]).await;

    let call = wired(&queue).add(job("a", |_| {}), T).unwrap();
    continued(exchange(&mut *wire, call)).await;
    done(exchange(
        &mut *wire,
        wired(&queue).add(job("b", |_| {}), T).unwrap(),
    ));
    assert_eq!(count(&queue, JobState::Waiting).await, 2);
}

#[tokio::test]
async fn a_request_that_never_went_out_goes_on_as_the_ordinary_call() {
    let server = Server::start(&[]);
    let queue = queue(backend(&server).await);
    let call = wired(&queue).add(job("a", |_| {}), T).unwrap();
    let (added, created) = continued((call.settle)(None)).await;
    assert!(created);
    let stored = queue.get_job(added.id.to_string()).await.unwrap();
    assert!(stored.is_some(), "added once, by the ordinary call");
    assert_eq!(total(&queue).await, 1);
}

#[tokio::test]
async fn a_wire_authenticates_and_selects_the_database_of_the_url() {
    let server = Server::start(&[]);
    let port = server
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    redis_cmd(&server, &["CONFIG", "SET", "requirepass", "s3cret"]).await;
    let url = format!("redis://:s3cret@127.0.0.1:{port}/2");
    let redis = RedisBackend::connect(&url, "lanemq", "test", 100, false)
        .await
        .expect("connects with the password");
    let queue = queue(redis);
    let mut wire = queue.open().await.expect("the wire authenticates");
    let (added, _) = done(exchange(
        &mut *wire,
        wired(&queue).add(job("a", |_| {}), T).unwrap(),
    ));
    // The job is in database 2, where the ordinary connection reads it.
    assert!(queue.get_job(added.id.to_string()).await.unwrap().is_some());

    let wrong = format!("redis://:wrong@127.0.0.1:{port}/2");
    let refused = RedisBackend::connect(&wrong, "lanemq", "test", 100, false).await;
    assert!(refused.is_err());
}
