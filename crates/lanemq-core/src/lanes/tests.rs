//! Dispatcher behaviour, driven with explicit time.

use super::*;
use crate::error::CoreError;

fn lane(id: &str, priority: u32, max: u32) -> LaneConfig {
    LaneConfig::new(id, priority, max)
}

fn dispatcher(lanes: Vec<LaneConfig>, cap: Option<u32>) -> Dispatcher {
    let config = DispatcherConfig {
        lanes,
        max_concurrency: cap,
        dead_letter_capacity: 2,
        alerts: AlertThresholds::default(),
    };
    Dispatcher::<()>::new(config, 0).unwrap()
}

#[test]
fn lowest_priority_number_starts_first_and_fifo_within_lane() {
    let mut s = dispatcher(vec![lane("prompt", 5, 2), lane("control", 1, 3)], None);
    let p1 = s.push(0, 0, ()).unwrap();
    let c1 = s.push(1, 0, ()).unwrap();
    let c2 = s.push(1, 0, ()).unwrap();
    assert_eq!(s.pop(0).unwrap().id, c1);
    assert_eq!(s.pop(0).unwrap().id, c2);
    assert_eq!(s.pop(0).unwrap().id, p1);
    assert_eq!(s.pop(0), None);
}

#[test]
fn full_lane_does_not_block_lower_lane() {
    let mut s = dispatcher(vec![lane("hi", 0, 1), lane("lo", 1, 1)], None);
    s.push(0, 0, ()).unwrap();
    s.push(0, 0, ()).unwrap();
    let lo = s.push(1, 0, ()).unwrap();
    s.pop(0).unwrap();
    assert_eq!(s.pop(0).unwrap().id, lo);
    assert_eq!(s.pop(0), None);
}

#[test]
fn min_concurrency_is_reserved_under_a_global_cap() {
    let mut s = dispatcher(vec![lane("hi", 0, 10), lane("lo", 1, 10)], Some(3));
    for _ in 0..5 {
        s.push(0, 0, ()).unwrap();
    }
    assert!(s.pop(0).is_some());
    assert!(s.pop(0).is_some());
    // The third slot is lo's reservation, even with lo idle.
    assert_eq!(s.pop(0), None);
    let lo = s.push(1, 0, ()).unwrap();
    assert_eq!(s.pop(0).unwrap().id, lo);
}

#[test]
fn global_cap_below_reservations_is_refused() {
    let config = DispatcherConfig {
        lanes: vec![lane("a", 0, 2), lane("b", 1, 2)],
        max_concurrency: Some(1),
        ..Default::default()
    };
    let err = Dispatcher::<()>::new(config, 0).unwrap_err().to_string();
    assert!(err.contains("max_concurrency (1)"), "{err}");
}

#[test]
fn duplicate_lane_ids_are_refused() {
    let config = DispatcherConfig {
        lanes: vec![lane("a", 0, 2), lane("a", 1, 2)],
        ..Default::default()
    };
    assert!(Dispatcher::<()>::new(config, 0)
        .unwrap_err()
        .to_string()
        .contains("duplicate lane_id"));
}

#[test]
fn rate_limit_spends_tokens_only_on_starts() {
    let mut limited = lane("limited", 0, 5);
    limited.rate_limit = Some(RateLimit {
        permits: 1,
        per: 1_000_000,
    });
    let mut s = dispatcher(vec![limited], None);
    // Idle time does not waste the token.
    let a = s.push(0, 5_000_000, ()).unwrap();
    let b = s.push(0, 5_000_000, ()).unwrap();
    assert_eq!(s.pop(5_000_000).unwrap().id, a);
    assert_eq!(s.pop(5_000_001), None);
    assert_eq!(s.next_wake(5_000_001), Some(999_999));
    assert_eq!(s.pop(6_000_000).unwrap().id, b);
}

#[test]
fn retry_waits_without_a_slot_then_dead_letters() {
    let mut config = lane("work", 0, 1);
    config.retry = RetryPolicy::fixed(1, 2_000);
    let mut s = dispatcher(vec![config], None);
    let id = s.push(0, 0, ()).unwrap();
    let other = s.push(0, 0, ()).unwrap();
    assert_eq!(s.pop(0).unwrap().attempt, 1);
    let outcome = s
        .fail(id, 10, FailKind::Error, true, "boom", "work", 0)
        .unwrap();
    assert_eq!(
        outcome,
        CommandFailOutcome::Retry {
            next_attempt: 2,
            delay: 2_000
        }
    );
    // The slot is free for other work while the retry waits.
    assert_eq!(s.pop(10).unwrap().id, other);
    s.complete(other, 20).unwrap();
    assert_eq!(s.pop(20), None);
    assert_eq!(s.in_flight(), 1);
    assert_eq!(s.next_wake(20), Some(1_990));
    let again = s.pop(2_010).unwrap();
    assert_eq!((again.id, again.attempt), (id, 2));
    let outcome = s
        .fail(id, 2_020, FailKind::Error, true, "boom", "work", 7)
        .unwrap();
    assert_eq!(outcome, CommandFailOutcome::DeadLettered { attempts: 2 });
    let letters: Vec<_> = s.dead_letters().collect();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        (letters[0].attempts, letters[0].error.as_str()),
        (2, "boom")
    );
    assert_eq!(s.in_flight(), 0);
}

#[test]
fn unretryable_failure_dead_letters_at_once_and_dlq_keeps_newest() {
    let mut config = lane("work", 0, 3);
    config.retry = RetryPolicy::fixed(5, 1);
    let mut s = dispatcher(vec![config], None);
    let ids: Vec<u64> = (0..3).map(|_| s.push(0, 0, ()).unwrap()).collect();
    for &id in &ids {
        s.pop(0).unwrap();
        let outcome = s
            .fail(id, 1, FailKind::Error, false, "fatal", "work", 0)
            .unwrap();
        assert_eq!(outcome, CommandFailOutcome::DeadLettered { attempts: 1 });
    }
    let kept: Vec<u64> = s.dead_letters().map(|l| l.command_id).collect();
    assert_eq!(kept, ids[1..].to_vec());
}

#[test]
fn boost_lets_an_old_low_lane_command_overtake() {
    let mut low = lane("low", 3, 1);
    low.priority_boost = Some(PriorityBoost::standard(1_000));
    let mut s = dispatcher(vec![lane("high", 1, 1), low], Some(2));
    let old = s.push(1, 0, ()).unwrap();
    let fresh = s.push(0, 900, ()).unwrap();
    // At 900 us the old command has 10 % of its deadline left: boost 3, priority 0 < 1.
    let first = s.pop(900).unwrap();
    assert_eq!(first.id, old);
    assert_eq!(s.pop(900).unwrap().id, fresh);
}

#[test]
fn cancel_pending_and_stale_completion_is_refused() {
    let mut s = dispatcher(vec![lane("a", 0, 1)], None);
    let a = s.push(0, 0, ()).unwrap();
    let b = s.push(0, 0, ()).unwrap();
    s.cancel(b).unwrap();
    assert_eq!(s.pop(0).unwrap().id, a);
    assert_eq!(s.pop(0), None);
    s.complete(a, 1).unwrap();
    assert_eq!(s.complete(a, 2), Err(CoreError::UnknownCommand(a)));
    let c = s.push(0, 3, ()).unwrap();
    assert!(matches!(
        s.complete(c, 4),
        Err(CoreError::CommandState { .. })
    ));
}

#[test]
fn pressure_then_idle_are_signalled_once() {
    let mut config = lane("a", 0, 1);
    config.pressure_threshold = Some(2);
    let mut s = dispatcher(vec![config], None);
    let ids: Vec<u64> = (0..3).map(|_| s.push(0, 0, ()).unwrap()).collect();
    assert_eq!(
        s.take_signals(),
        vec![Signal::Pressure {
            lane: 0,
            pending: 2
        }]
    );
    for id in ids {
        s.pop(0).unwrap();
        s.complete(id, 1).unwrap();
    }
    assert_eq!(s.take_signals(), vec![Signal::Idle { lane: 0 }]);
}

#[test]
fn shutdown_refuses_pushes() {
    let mut s = dispatcher(vec![lane("a", 0, 1)], None);
    s.shutdown();
    assert_eq!(s.push(0, 0, ()), Err(CoreError::Shutdown));
}
