//! MemoryStore behaviour with explicit time. The full contract is exercised through Python by
//! tests/conformance; these pin the core's own invariants (ordering, fencing, recovery).

use super::lifecycle::{self, manage};
use super::*;
use crate::error::CoreError;
use crate::schedule::ScheduleSpec;

const T: Millis = 1_700_000_000_000;

fn store() -> MemoryStore {
    MemoryStore::new(StoreConfig::default())
}

fn opts(f: impl FnOnce(&mut JobOptions)) -> JobOptions {
    let mut options = JobOptions::default();
    f(&mut options);
    options
}

/// A failure to retry while attempts remain.
fn failure(id: &str, token: &str, error: &str) -> Failure {
    Failure {
        id: id.to_owned(),
        token: token.to_owned(),
        error: error.to_owned(),
        stacktrace: None,
        retry: true,
        delay: None,
    }
}

fn add(s: &mut MemoryStore, options: JobOptions) -> String {
    s.add("job", "null", options, T).unwrap().0.id.to_string()
}

#[test]
fn claim_order_is_priority_then_fifo_with_zero_first_and_lifo_newest_first() {
    let mut s = store();
    let p5 = add(&mut s, opts(|o| o.priority = 5));
    let none_a = add(&mut s, JobOptions::default());
    let p1 = add(&mut s, opts(|o| o.priority = 1));
    let none_b = add(&mut s, JobOptions::default());
    let lifo = add(&mut s, opts(|o| o.lifo = true));
    let order: Vec<String> = lifecycle::claim(&mut s, "w", 1000, 10, T)
        .unwrap()
        .into_iter()
        .map(|j| j.id.to_string())
        .collect();
    assert_eq!(order, vec![lifo, none_a, none_b, p1, p5]);
}

#[test]
fn stale_token_is_fenced_after_recovery() {
    let mut s = store();
    let id = add(&mut s, JobOptions::default());
    let a = lifecycle::claim(&mut s, "a", 1000, 1, T).unwrap().remove(0);
    let token_a = a.lock.unwrap().token;
    assert!(matches!(
        lifecycle::complete(&mut s, &id, &token_a, "1", T + 1000),
        Err(CoreError::LockMismatch(_))
    ));
    let (recovered, failed) = lifecycle::recover_stalled(&mut s, T + 1000).unwrap();
    assert_eq!((recovered, failed), (vec![id.clone()], vec![]));
    let b = lifecycle::claim(&mut s, "b", 1000, 1, T + 1001)
        .unwrap()
        .remove(0);
    assert_eq!(b.stalled_count, 1);
    assert_eq!(b.attempts_made, 1, "a stall gives the attempt back");
    assert!(matches!(
        lifecycle::complete(&mut s, &id, &token_a, "1", T + 1002),
        Err(CoreError::LockMismatch(_))
    ));
    lifecycle::complete(&mut s, &id, &b.lock.unwrap().token, "2", T + 1002).unwrap();
    assert_eq!(
        manage::get_state(&mut s, &id).unwrap(),
        Some(JobState::Completed)
    );
}

#[test]
fn stalling_past_the_limit_fails_the_job() {
    let mut s = store();
    let id = add(&mut s, JobOptions::default());
    lifecycle::claim(&mut s, "a", 10, 1, T).unwrap();
    lifecycle::recover_stalled(&mut s, T + 10).unwrap();
    lifecycle::claim(&mut s, "a", 10, 1, T + 10).unwrap();
    let (_, failed) = lifecycle::recover_stalled(&mut s, T + 20).unwrap();
    assert_eq!(failed, vec![id.clone()]);
    let job = s.get_job(&id).unwrap();
    assert_eq!((job.state, job.stalled_count), (JobState::Failed, 2));
}

#[test]
fn retry_waits_out_the_backoff_then_fails_for_good() {
    let mut s = store();
    let backoff = Backoff {
        kind: BackoffKind::Fixed,
        delay: 2000,
        jitter: 0.0,
        name: None,
    };
    let id = add(
        &mut s,
        opts(|o| {
            o.attempts = 2;
            o.backoff = Some(backoff);
        }),
    );
    let token = lifecycle::claim(&mut s, "w", 5000, 1, T)
        .unwrap()
        .remove(0)
        .lock
        .unwrap()
        .token;
    let outcome = lifecycle::fail(&mut s, &failure(&id, &token, "boom"), T).unwrap();
    assert_eq!(
        outcome,
        FailOutcome::Retry {
            delay_until: Some(T + 2000)
        }
    );
    assert!(lifecycle::claim(&mut s, "w", 5000, 1, T + 1999)
        .unwrap()
        .is_empty());
    let again = lifecycle::claim(&mut s, "w", 5000, 1, T + 2000)
        .unwrap()
        .remove(0);
    assert_eq!(again.attempts_made, 2);
    let token = again.lock.unwrap().token;
    assert_eq!(
        lifecycle::fail(&mut s, &failure(&id, &token, "boom 2"), T + 2001).unwrap(),
        FailOutcome::Failed
    );
    assert_eq!(
        manage::finished_result(&mut s, &id).unwrap(),
        FinishedResult::Failed("boom 2".into())
    );
    let names: Vec<&str> = s
        .read_events(0, u64::MAX, 0)
        .iter()
        .map(|e| e.event)
        .collect();
    assert!(
        names.ends_with(&["failed", "retries-exhausted"]),
        "{names:?}"
    );
}

#[test]
fn invalid_adds_write_nothing() {
    let mut s = store();
    for bad in ["", "0", "0:x", "42", "-7"] {
        let options = opts(|o| o.job_id = Some(bad.into()));
        assert!(s.add("job", "null", options, T).is_err());
    }
    let bulk = vec![
        ("a".to_owned(), "1".to_owned(), JobOptions::default()),
        (
            "b".to_owned(),
            "2".to_owned(),
            opts(|o| o.priority = MAX_PRIORITY + 1),
        ),
    ];
    assert!(s.add_bulk(bulk, T).is_err());
    assert_eq!(manage::count_pending(&mut s).unwrap(), 0);
    assert_eq!(s.last_event_id(), 0);
}

#[test]
fn duplicate_custom_id_returns_the_first_job() {
    let mut s = store();
    let first = s
        .add("a", "1", opts(|o| o.job_id = Some("x".into())), T)
        .unwrap();
    let second = s
        .add("a", "2", opts(|o| o.job_id = Some("x".into())), T)
        .unwrap();
    assert!(first.1 && !second.1);
    assert_eq!(&*second.0.data, "1");
    assert_eq!(s.count(JobState::Waiting), 1);
}

fn dedup(id: &str, f: impl FnOnce(&mut Dedup)) -> JobOptions {
    let mut d = Dedup::simple(id);
    f(&mut d);
    opts(|o| o.dedup = Some(d))
}

#[test]
fn bulk_dedups_in_order_and_is_all_or_nothing() {
    let mut s = store();
    let job = |data: &str, options: JobOptions| ("a".to_owned(), data.to_owned(), options);
    let bad = vec![job("1", dedup("k", |_| {})), job("2", dedup("", |_| {}))];
    assert!(matches!(s.add_bulk(bad, T), Err(CoreError::InvalidConfig(m)) if m.contains("job #1")));
    assert_eq!(
        (manage::count_pending(&mut s).unwrap(), s.last_event_id()),
        (0, 0)
    );
    assert_eq!(s.get_deduplication_job_id("k", T), None);

    let added = s
        .add_bulk(
            vec![
                job("1", dedup("k", |_| {})),
                job("2", JobOptions::default()),
                job("3", dedup("k", |_| {})),
            ],
            T,
        )
        .unwrap();
    let ids: Vec<(&str, bool)> = added.iter().map(|(j, c)| (&*j.id, *c)).collect();
    assert_eq!(ids, vec![("1", true), ("2", true), ("1", false)]);
    assert_eq!(s.get_deduplication_job_id("k", T).as_deref(), Some("1"));
}

#[test]
fn keep_last_follow_up_is_added_once_when_the_owner_finishes() {
    let mut s = store();
    let keep = |data: &str, s: &mut MemoryStore, now| {
        s.add("a", data, dedup("k", |d| d.keep_last = true), now)
            .unwrap()
    };
    let (owner, _) = keep("1", &mut s, T);
    let token = lifecycle::claim(&mut s, "w", 1000, 1, T)
        .unwrap()
        .remove(0)
        .lock
        .unwrap()
        .token;
    for (i, data) in ["2", "3", "4"].into_iter().enumerate() {
        let (got, created) = keep(data, &mut s, T + 1 + i as Millis);
        assert_eq!((&*got.id, created), (&*owner.id, false));
    }
    assert_eq!(manage::count_pending(&mut s).unwrap(), 0);
    lifecycle::complete(&mut s, &owner.id, &token, "null", T + 10).unwrap();
    let waiting = manage::list_jobs(&mut s, &[JobState::Waiting], 0, -1, true)
        .unwrap()
        .0;
    assert_eq!(waiting.len(), 1);
    assert_eq!((&*waiting[0].data, waiting[0].created_at), ("4", T + 10));
    assert_eq!(
        s.get_deduplication_job_id("k", T + 10).as_deref(),
        Some(&*waiting[0].id)
    );
}

#[test]
fn expired_keys_are_dropped_and_never_held() {
    let mut s = store();
    let throttle = |s: &mut MemoryStore, now| {
        s.add("a", "1", dedup("t", |d| d.ttl = Some(100)), now)
            .unwrap()
    };
    let (first, _) = throttle(&mut s, T);
    assert!(!throttle(&mut s, T + 99).1);
    let (second, created) = throttle(&mut s, T + 100);
    assert!(created && second.id != first.id);
    assert!(!s.remove_deduplication_key("t", T + 200), "expired");
    assert_eq!(s.get_deduplication_job_id("t", T + 200), None);
}

#[test]
fn keep_count_trims_the_oldest_finished() {
    let mut s = store();
    let keep = Retention::Keep {
        count: Some(1),
        age: None,
        limit: None,
    };
    let ids: Vec<String> = (0..3)
        .map(|_| add(&mut s, opts(|o| o.remove_on_complete = keep.clone())))
        .collect();
    for (i, job) in lifecycle::claim(&mut s, "w", 1000, 3, T)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        lifecycle::complete(
            &mut s,
            &job.id,
            &job.lock.unwrap().token,
            "null",
            T + i as u64,
        )
        .unwrap();
    }
    let kept: Vec<String> = manage::list_jobs(&mut s, &[JobState::Completed], 0, -1, true)
        .unwrap()
        .0
        .into_iter()
        .map(|j| j.id.to_string())
        .collect();
    assert_eq!(kept, vec![ids[2].clone()]);
}

#[test]
fn obliterate_refuses_with_active_jobs_and_stays_paused() {
    let mut s = store();
    add(&mut s, JobOptions::default());
    lifecycle::claim(&mut s, "w", 1000, 1, T).unwrap();
    assert!(matches!(
        manage::obliterate(&mut s, false, T).and_then(|refusal| refusal),
        Err(CoreError::Refused(_))
    ));
    assert!(manage::is_paused(&mut s).unwrap());
    manage::obliterate(&mut s, true, T)
        .and_then(|refusal| refusal)
        .unwrap();
    assert!(!manage::is_paused(&mut s).unwrap());
    assert_eq!(
        manage::get_job_counts(&mut s, &[])
            .unwrap()
            .iter()
            .map(|(_, n)| n)
            .sum::<usize>(),
        0
    );
}

// ------------------------------------------------------------------------ job schedulers

fn template() -> Template {
    Template {
        name: "tick".into(),
        data: "null".into(),
        options: JobOptions::default(),
    }
}

fn every(ms: Millis, f: impl FnOnce(&mut ScheduleSpec)) -> ScheduleSpec {
    let mut spec = ScheduleSpec::every(ms);
    f(&mut spec);
    spec
}

/// The ids of the jobs of scheduler `key` that have not started.
fn pending(s: &mut MemoryStore, key: &str) -> Vec<String> {
    manage::list_jobs(s, &[JobState::Waiting, JobState::Delayed], 0, -1, true)
        .unwrap()
        .0
        .into_iter()
        .filter(|j| j.options.scheduler.as_deref() == Some(key))
        .map(|j| j.id.to_string())
        .collect()
}

#[test]
fn a_claim_of_the_pending_occurrence_produces_the_next() {
    let mut s = store();
    let first = s
        .upsert_scheduler("k", every(1000, |_| {}), template(), T)
        .unwrap();
    assert_eq!(
        (&*first.id, first.state),
        ("repeat:k:1700000000000", JobState::Waiting)
    );
    let claimed = lifecycle::claim(&mut s, "w", 60_000, 10, T + 5).unwrap();
    assert_eq!(
        claimed.len(),
        1,
        "the next occurrence is not claimed with it"
    );
    assert_eq!(pending(&mut s, "k"), vec!["repeat:k:1700000001000"]);
    let sched = s.get_scheduler("k").unwrap();
    assert_eq!((sched.iteration_count, sched.next_run), (2, T + 1000));
    assert_eq!(sched.job_id.as_deref(), Some("repeat:k:1700000001000"));
}

#[test]
fn a_stalled_occurrence_claimed_again_produces_nothing() {
    let mut s = store();
    s.upsert_scheduler("k", every(1000, |_| {}), template(), T)
        .unwrap();
    lifecycle::claim(&mut s, "w", 10, 1, T).unwrap();
    let (recovered, _) = lifecycle::recover_stalled(&mut s, T + 10).unwrap();
    assert_eq!(recovered, vec!["repeat:k:1700000000000"]);
    let again = lifecycle::claim(&mut s, "w", 10, 1, T + 20).unwrap();
    assert_eq!(&*again[0].id, "repeat:k:1700000000000");
    assert_eq!(pending(&mut s, "k"), vec!["repeat:k:1700000001000"]);
    assert_eq!(s.get_scheduler("k").unwrap().iteration_count, 2);
}

#[test]
fn the_limit_ends_the_scheduler_at_the_claim_of_the_last_run() {
    let mut s = store();
    let spec = every(1000, |sp| sp.limit = Some(2));
    s.upsert_scheduler("k", spec, template(), T).unwrap();
    lifecycle::claim(&mut s, "w", 60_000, 1, T).unwrap();
    lifecycle::claim(&mut s, "w", 60_000, 1, T + 1000).unwrap();
    assert!(s.get_scheduler("k").is_none());
    assert_eq!(s.count_schedulers(), 0);
    assert!(pending(&mut s, "k").is_empty());
    assert_eq!(s.count(JobState::Active), 2);
}

#[test]
fn a_failed_upsert_writes_nothing() {
    let mut s = store();
    s.upsert_scheduler("k", every(1000, |_| {}), template(), T)
        .unwrap();
    let before = s.last_event_id();
    let bad = every(1000, |sp| sp.end = Some(T - 1));
    assert!(matches!(
        s.upsert_scheduler("k", bad, template(), T),
        Err(CoreError::InvalidConfig(_))
    ));
    assert_eq!(s.last_event_id(), before);
    assert_eq!(pending(&mut s, "k"), vec!["repeat:k:1700000000000"]);
}

#[test]
fn a_taken_run_time_is_skipped() {
    let mut s = store();
    s.upsert_scheduler("k", every(1000, |_| {}), template(), T)
        .unwrap();
    lifecycle::claim(&mut s, "w", 60_000, 1, T).unwrap();
    // Same millisecond, another interval: the first run (T) is the running occurrence's id.
    let replaced = s
        .upsert_scheduler("k", every(500, |_| {}), template(), T)
        .unwrap();
    assert_eq!(&*replaced.id, "repeat:k:1700000000500");
    assert_eq!(pending(&mut s, "k"), vec!["repeat:k:1700000000500"]);
}

#[test]
fn drain_keeps_the_delayed_pending_occurrences() {
    let mut s = store();
    s.upsert_scheduler(
        "k",
        every(1000, |sp| sp.start = Some(T + 50)),
        template(),
        T,
    )
    .unwrap();
    s.add("plain", "null", opts(|o| o.delay = 10), T).unwrap();
    assert_eq!(lifecycle::drain(&mut s, true, T).unwrap(), 1);
    assert_eq!(pending(&mut s, "k"), vec!["repeat:k:1700000000050"]);
    manage::obliterate(&mut s, true, T)
        .and_then(|refusal| refusal)
        .unwrap();
    assert_eq!(s.count_schedulers(), 0);
}

#[test]
fn the_later_end_of_the_rate_limits_holds_claims_back() {
    // Neither: claims go on. A wait only, a window only, both (the later end).
    assert_eq!(rate_limited_until(T, 0, None, 0, 0), None);
    assert_eq!(rate_limited_until(T, T + 5, None, 0, 0), Some(T + 5));
    assert_eq!(
        rate_limited_until(T, T, None, 0, 0),
        None,
        "a wait ends at its end"
    );
    let window = Some((2, 1_000));
    assert_eq!(
        rate_limited_until(T, 0, window, T - 10, 1),
        None,
        "a claim left"
    );
    assert_eq!(rate_limited_until(T, 0, window, T - 10, 2), Some(T + 990));
    assert_eq!(
        rate_limited_until(T, 0, window, T - 1_000, 2),
        None,
        "window over"
    );
    assert_eq!(
        rate_limited_until(T, T + 5, window, T - 10, 2),
        Some(T + 990)
    );
    assert_eq!(
        rate_limited_until(T, T + 5_000, window, T - 10, 2),
        Some(T + 5_000)
    );
}

#[test]
fn a_rate_limit_wait_is_refused_at_zero_and_past_exact_times() {
    assert_eq!(rate_limit_end(500, T).unwrap(), T + 500);
    for (duration, now) in [(0, T), (MAX_RATE_LIMIT_END, T), (u64::MAX, T)] {
        assert!(matches!(
            rate_limit_end(duration, now),
            Err(CoreError::InvalidConfig(_))
        ));
    }
    let mut s = store();
    manage::rate_limit(&mut s, 1_000, T).unwrap();
    assert!(manage::rate_limit(&mut s, 0, T + 1).is_err());
    assert_eq!(
        manage::get_rate_limit_ttl(&mut s, T + 1).unwrap(),
        999,
        "a refused call changes nothing"
    );
}

#[test]
fn a_claim_during_a_rate_limit_wait_opens_no_window() {
    let mut s = store();
    for _ in 0..3 {
        add(&mut s, JobOptions::default());
    }
    manage::set_rate_limit(&mut s, 2, 1_000).unwrap();
    manage::rate_limit(&mut s, 500, T).unwrap();
    assert!(lifecycle::claim(&mut s, "w", 1000, 5, T + 100)
        .unwrap()
        .is_empty());
    assert_eq!(s.next_ready_at(T + 100), Some(T + 500));
    // The window opens at the first claim after the wait, with all of its claims.
    assert_eq!(
        lifecycle::claim(&mut s, "w", 1000, 5, T + 500)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(manage::get_rate_limit_ttl(&mut s, T + 600).unwrap(), 900);
    manage::remove_rate_limit_key(&mut s).unwrap();
    assert_eq!(manage::get_rate_limit_ttl(&mut s, T + 600).unwrap(), 0);
    assert_eq!(
        lifecycle::claim(&mut s, "w", 1000, 5, T + 600)
            .unwrap()
            .len(),
        1
    );
}
