//! The shared cancel step (`lifecycle::cancel`) and what it changes in the leases, run on the
//! memory store and backend (the SQLite store runs the same code; the conformance suite holds
//! both to every contract).

use std::time::Duration;

use crate::error::CoreError;
use crate::jobs::constants::STARTED_LIMIT_REASON;
use crate::jobs::contract::{CancelOutcome, JobCancels, JobLifecycle, NewJob};
use crate::jobs::lifecycle::{self, CancelTable};
use crate::jobs::model::{JobState, Millis};
use crate::jobs::options::{JobOptions, StoreConfig};
use crate::jobs::MemoryStore;

use super::MemoryBackend;

const T: Millis = 1_700_000_000_000;

fn add(s: &mut MemoryStore, options: JobOptions) -> String {
    let job = NewJob {
        name: "n".into(),
        data: "null".into(),
        options,
    };
    lifecycle::add(s, job, 1 << 20, T).unwrap().0.id.to_string()
}

fn claim_token(s: &mut MemoryStore, now: Millis) -> String {
    let claimed = lifecycle::claim(s, "w", 1000, 1, now).unwrap();
    claimed[0].lock.as_ref().unwrap().token.clone()
}

fn events(s: &MemoryStore, id: &str) -> Vec<&'static str> {
    s.read_events(0, u64::MAX, 0)
        .iter()
        .filter(|e| e.job_id.as_deref() == Some(id))
        .map(|e| e.event)
        .collect()
}

#[test]
fn a_waiting_job_fails_for_good_at_once_with_the_reason() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let id = add(&mut s, JobOptions::default());
    let outcome = lifecycle::cancel(&mut s, &id, "no longer wanted", T + 1).unwrap();
    assert_eq!(outcome, CancelOutcome::Failed);
    let job = s.get_job(&id).unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.failed_reason.as_deref(), Some("no longer wanted"));
    assert_eq!(job.stacktrace, ["JobCancelledError: no longer wanted"]);
    assert_eq!(job.attempts_made, 0);
    assert!(events(&s, &id).ends_with(&["cancelled", "failed"]));
    // Again: finished, nothing written.
    let before = events(&s, &id).len();
    assert_eq!(
        lifecycle::cancel(&mut s, &id, "again", T + 2).unwrap(),
        CancelOutcome::Finished
    );
    assert_eq!(events(&s, &id).len(), before);
    assert!(matches!(
        lifecycle::cancel(&mut s, "nope", "x", T),
        Err(CoreError::JobNotFound(_))
    ));
}

#[test]
fn an_active_job_keeps_its_lock_and_its_renewal_answers_with_the_request() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let id = add(&mut s, JobOptions::default());
    let token = claim_token(&mut s, T);
    let outcome = lifecycle::cancel(&mut s, &id, "stop", T + 1).unwrap();
    assert_eq!(outcome, CancelOutcome::Requested);
    assert_eq!(s.get_job(&id).unwrap().state, JobState::Active);
    let renewed = lifecycle::renew(&mut s, &id, &token, 5000, T + 2);
    assert!(
        matches!(&renewed, Err(CoreError::CancelRequested { reason, .. }) if reason == "stop"),
        "{renewed:?}"
    );
    let lock = s.get_job(&id).unwrap().lock.unwrap();
    assert_eq!(lock.expires_at, T + 2 + 5000); // renewed all the same
    lifecycle::complete(&mut s, &id, &token, "1", T + 3).unwrap();
    assert_eq!(s.cancel_request(&id).unwrap(), None); // dropped as the job left active
}

#[test]
fn a_request_applies_to_the_claim_it_was_made_under_only() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let id = add(&mut s, JobOptions::default());
    let first = claim_token(&mut s, T);
    lifecycle::cancel(&mut s, &id, "old", T + 1).unwrap();
    // Left in the table (a removal or a parking does not drop it): a new claim ignores it.
    let stale = s.cancel_request(&id).unwrap().unwrap();
    lifecycle::move_to_delayed(&mut s, &id, &first, T + 5, T + 2).unwrap();
    s.store_cancel(&id, stale, T + 2).unwrap();
    let second = claim_token(&mut s, T + 10);
    lifecycle::renew(&mut s, &id, &second, 1000, T + 11).unwrap();
    let (recovered, failed) = lifecycle::recover_stalled(&mut s, T + 5000).unwrap();
    assert_eq!((recovered, failed), (vec![id], vec![]));
}

#[test]
fn stall_recovery_and_release_fail_a_requested_job_with_the_reason() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let options = JobOptions {
        attempts: 3,
        ..JobOptions::default()
    };
    let stalled = add(&mut s, options.clone());
    claim_token(&mut s, T);
    lifecycle::cancel(&mut s, &stalled, "gone", T + 1).unwrap();
    let (_, failed) = lifecycle::recover_stalled_with_reasons(&mut s, T + 2000).unwrap();
    assert_eq!(failed, [(stalled.clone(), "gone".to_owned())]);
    assert!(!events(&s, &stalled).contains(&"stalled"));

    let released = add(&mut s, options);
    let token = claim_token(&mut s, T + 3000);
    lifecycle::cancel(&mut s, &released, "bye", T + 3001).unwrap();
    let reason = lifecycle::release_with_reason(&mut s, &released, &token, T + 3002).unwrap();
    assert_eq!(reason.as_deref(), Some("bye"));
    let job = s.get_job(&released).unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.stacktrace.last().unwrap(), "JobCancelledError: bye");
}

#[test]
fn max_started_attempts_counts_the_stalls_and_the_reported_attempts() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let options = JobOptions {
        attempts: 10,
        max_stalled_count: 10,
        max_started_attempts: Some(3),
        ..JobOptions::default()
    };
    let id = add(&mut s, options);
    claim_token(&mut s, T);
    let (recovered, _) = lifecycle::recover_stalled(&mut s, T + 2000).unwrap();
    assert_eq!(recovered, std::slice::from_ref(&id));
    let token = claim_token(&mut s, T + 3000);
    let failure = crate::jobs::contract::Failure {
        id: id.clone(),
        token,
        error: "boom".into(),
        stacktrace: None,
        retry: true,
        delay: None,
    };
    lifecycle::fail(&mut s, &failure, T + 3001).unwrap();
    claim_token(&mut s, T + 3002); // the third start
    let (_, failed) = lifecycle::recover_stalled_with_reasons(&mut s, T + 9000).unwrap();
    assert_eq!(failed, [(id.clone(), STARTED_LIMIT_REASON.to_owned())]);
}

#[tokio::test]
async fn wait_cancels_wakes_on_a_push_and_returns_what_is_past_after() {
    let backend = MemoryBackend::new(StoreConfig::default());
    let job = NewJob {
        name: "n".into(),
        data: "null".into(),
        options: JobOptions::default(),
    };
    let (added, _) = backend.add(job, T).await.unwrap();
    backend.claim("w".into(), 60_000, 1, T).await.unwrap();
    assert_eq!(backend.last_cancel_seq().await.unwrap(), 0);
    assert!(backend.wait_cancels(0, None).await.unwrap().is_empty());
    let waiting = tokio::spawn(backend.wait_cancels(0, Some(10_000)));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!waiting.is_finished());
    let outcome = backend.cancel(added.id.to_string(), "now".into(), T + 1);
    assert_eq!(outcome.await.unwrap(), CancelOutcome::Requested);
    let heard = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("woken by the push")
        .unwrap()
        .unwrap();
    assert_eq!(heard.len(), 1);
    assert_eq!(
        (heard[0].seq, &*heard[0].job_id, &*heard[0].reason),
        (1, &*added.id, "now")
    );
    assert_eq!(backend.last_cancel_seq().await.unwrap(), 1);
    assert!(backend.wait_cancels(1, Some(10)).await.unwrap().is_empty());
}
