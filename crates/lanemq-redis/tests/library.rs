//! How scripts reach the server: as the functions of one library (Redis 7+), loaded again when
//! the server lost it, and by EVALSHA where functions are off.

mod common;

use common::{backend, completion, job, raw, Server, T};
use lanemq_core::jobs::JobState;
use lanemq_redis::RedisBackend;

/// Adds a job, claims it and completes it; the job ends completed with its result.
async fn round_trip(redis: &RedisBackend, name: &str) {
    let added = redis
        .add_bulk(vec![job(name, |_| {})], T, 1 << 20)
        .await
        .unwrap();
    let id = added[0].0.id.to_string();
    let claimed = redis.claim("w", 1000, 1, T).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id.to_string(), id);
    let outcomes = redis
        .complete_many(vec![completion(&claimed[0], "7")], T + 1)
        .await
        .unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let done = redis.get_job(&id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Completed);
}

/// The calls the server has run of `command` (lower case, as INFO commandstats names it).
async fn calls(server: &Server, command: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut raw(server).await)
        .await
        .unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn scripts_run_as_the_functions_of_one_library() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    round_trip(&redis, "a").await;
    // Another client of the same version finds the library there and uses it.
    let other = backend(&server).await;
    round_trip(&other, "b").await;
    let libraries: Vec<redis::Value> = redis::cmd("FUNCTION")
        .arg("LIST")
        .arg("LIBRARYNAME")
        .arg("lanemq_*")
        .query_async(&mut raw(&server).await)
        .await
        .unwrap();
    assert_eq!(libraries.len(), 1, "{libraries:?}");
    assert!(calls(&server, "fcall").await >= 6);
    assert_eq!(calls(&server, "evalsha").await, 0);
}

#[tokio::test]
async fn a_library_the_server_lost_is_loaded_again() {
    let server = Server::start(&[]);
    let redis = backend(&server).await;
    round_trip(&redis, "before").await;
    let _: String = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut raw(&server).await)
        .await
        .unwrap();
    round_trip(&redis, "after").await;
}

#[tokio::test]
async fn without_functions_scripts_run_by_evalsha() {
    let server = Server::start(&[]);
    let redis = backend(&server).await.without_functions();
    round_trip(&redis, "a").await;
    round_trip(&redis, "b").await;
    assert!(calls(&server, "evalsha").await >= 6);
    assert_eq!(calls(&server, "fcall").await, 0);
}
