use super::{Call, ClaimLimit, Counts, Idle, Outcome, Turn, WorkerBook};
use crate::lanes::Micros;

/// Jobs are named by numbers; outcomes are the names of the jobs they are of.
type Book = WorkerBook<u32, &'static str, &'static str>;

const SECOND: Micros = 1_000_000;

fn book(concurrency: u32, remote: bool) -> Book {
    WorkerBook::new(concurrency, remote).unwrap()
}

fn calls(turn: Turn<&'static str>) -> (Vec<Call<&'static str>>, Idle) {
    match turn {
        Turn::Calls { calls, idle } => (calls, idle),
        other => panic!("expected calls, got {other:?}"),
    }
}

fn claims(calls: &[Call<&'static str>]) -> Vec<u32> {
    calls.iter().map(|c| c.claim).collect()
}

fn run(book: &mut Book, jobs: std::ops::Range<u32>) {
    for key in jobs {
        book.start(key, "job");
    }
}

#[test]
fn concurrency_must_be_at_least_one() {
    let error = Book::new(0, false).unwrap_err();
    assert_eq!(error.to_string(), "invalid concurrency: 0 (must be >= 1)");
    let mut book = book(3, false);
    assert!(book.set_concurrency(0).is_err());
    assert_eq!(book.concurrency(), 3);
}

#[test]
fn a_call_or_a_wait_claims_half_the_concurrency_rounded_up() {
    let shares: Vec<u32> = [1, 2, 3, 100]
        .into_iter()
        .map(|c| book(c, true).share())
        .collect();
    assert_eq!(shares, [1, 1, 2, 50]);
}

#[test]
fn in_process_one_call_reports_the_completions_and_claims_every_free_slot() {
    let mut book = book(4, false);
    let (first, _) = calls(book.turn(0));
    assert_eq!(
        first,
        [Call {
            completions: vec![],
            claim: 4
        }]
    );
    book.call_done(4, 3);
    run(&mut book, 0..3);
    book.finish(&0);
    book.finish(&1);
    book.record(Outcome::Completed, "a");
    book.record(Outcome::Completed, "b");
    let (second, idle) = calls(book.turn(0));
    // One job runs, so three slots are free; a wait would ask for half of four.
    assert_eq!(
        second,
        [Call {
            completions: vec!["a", "b"],
            claim: 3
        }]
    );
    assert_eq!(
        idle,
        Idle {
            claim: 2,
            pause: None
        }
    );
    assert_eq!(book.pending(), 0);
}

#[test]
fn with_every_slot_taken_completions_are_reported_without_a_claim() {
    let mut book = book(2, false);
    run(&mut book, 0..2);
    assert_eq!(book.free(), 0);
    let (nothing, idle) = calls(book.turn(0));
    assert!(nothing.is_empty());
    assert_eq!(
        idle,
        Idle {
            claim: 0,
            pause: None
        }
    ); // wait until a job ends
    book.finish(&0);
    book.record(Outcome::Completed, "a");
    book.set_concurrency(1).unwrap(); // lowered: the job still running takes every slot
    let (report, _) = calls(book.turn(0));
    assert_eq!(
        report,
        [Call {
            completions: vec!["a"],
            claim: 0
        }]
    );
}

#[test]
fn failures_and_releases_are_flushed_before_anything_else() {
    for remote in [false, true] {
        let mut book = book(2, remote);
        book.record(Outcome::Completed, "done");
        book.record(Outcome::Failed, "broken");
        assert_eq!(book.turn(0), Turn::Flush);
        assert_eq!(book.take(Outcome::Failed), ["broken"]);
        book.record(Outcome::Released, "given back");
        assert_eq!(book.turn(0), Turn::Flush);
        assert_eq!(book.take(Outcome::Released), ["given back"]);
        assert_eq!(book.take(Outcome::Completed), ["done"]);
        assert_eq!(book.pending(), 0);
    }
}

#[test]
fn a_report_that_failed_goes_first_in_the_next_one() {
    let mut book = book(2, false);
    book.record(Outcome::Failed, "a");
    book.record(Outcome::Failed, "b");
    let taken = book.take(Outcome::Failed);
    book.record(Outcome::Failed, "c"); // recorded while the report was out
    book.put_back(Outcome::Failed, taken);
    assert_eq!(book.waiting(Outcome::Failed), 3);
    assert_eq!(book.take(Outcome::Failed), ["a", "b", "c"]);
}

#[test]
fn a_rate_limit_pauses_claims_but_not_reports() {
    let mut book = book(2, false);
    book.pause(10 * SECOND, 2 * SECOND);
    book.pause(10 * SECOND, SECOND); // a shorter pause does not cut the first one short
    assert_eq!(book.paused_for(11 * SECOND), SECOND);
    assert_eq!(book.claimable(11 * SECOND), 0);
    book.record(Outcome::Completed, "a");
    let (report, idle) = calls(book.turn(11 * SECOND));
    assert_eq!(
        report,
        [Call {
            completions: vec!["a"],
            claim: 0
        }]
    );
    book.call_done(0, 0);
    assert_eq!(
        idle,
        Idle {
            claim: 0,
            pause: Some(SECOND)
        }
    );
    let (claim, idle) = calls(book.turn(12 * SECOND));
    assert_eq!(claims(&claim), [2]);
    assert_eq!(
        idle,
        Idle {
            claim: 1,
            pause: None
        }
    );
    assert_eq!(book.claimable(12 * SECOND), 0); // the call's claim holds the slots
    book.call_done(2, 0);
    assert_eq!(book.claimable(12 * SECOND), 2);
}

#[test]
fn remote_keeps_two_calls_in_flight_each_claiming_half() {
    let mut book = book(4, true);
    let (first, _) = calls(book.turn(0));
    assert_eq!(claims(&first), [2, 2]);
    assert_eq!(book.free(), 0);
    // Both in flight: nothing more to start, even with a completion waiting.
    book.record(Outcome::Completed, "a");
    let (none, _) = calls(book.turn(0));
    assert!(none.is_empty());
    book.call_done(2, 2);
    run(&mut book, 0..2);
    let (next, _) = calls(book.turn(0));
    // One call is out and its claim holds two slots; two jobs run: the completion goes alone.
    assert_eq!(
        next,
        [Call {
            completions: vec!["a"],
            claim: 0
        }]
    );
}

#[test]
fn remote_claims_along_with_reports_once_a_claim_came_back_short() {
    let mut book = book(4, true);
    let (first, _) = calls(book.turn(0));
    book.call_done(first[0].claim, 1); // the queue ran dry
    book.call_done(first[1].claim, 0);
    assert!(book.is_starved());
    run(&mut book, 0..1);
    let (none, idle) = calls(book.turn(0));
    assert!(none.is_empty(), "no claim on its own while starved");
    assert_eq!(
        idle,
        Idle {
            claim: 2,
            pause: None
        }
    ); // waiting for a job claims in the wait
    book.finish(&0);
    book.record(Outcome::Completed, "a");
    let (report, _) = calls(book.turn(0));
    assert_eq!(
        report,
        [Call {
            completions: vec!["a"],
            claim: 2
        }]
    );
    book.call_done(2, 0);
    // A wait that claimed what it asked for ends the starvation; one that asked nothing too.
    book.idled(2, 2);
    assert!(!book.is_starved());
    book.idled(2, 1);
    assert!(book.is_starved());
    book.idled(0, 0);
    assert!(!book.is_starved());
}

#[test]
fn remote_keeps_one_call_in_flight_after_a_call_failed() {
    let mut book = book(4, true);
    let (first, _) = calls(book.turn(0));
    book.call_failed(first[0].claim);
    book.call_failed(first[1].claim);
    assert!(!book.is_healthy());
    assert_eq!(book.free(), 4);
    assert_eq!(book.turn(0), Turn::CallFailed); // once for both
    let (one, _) = calls(book.turn(0));
    assert_eq!(claims(&one), [2]);
    let (none, _) = calls(book.turn(0));
    assert!(none.is_empty());
    book.call_done(2, 2);
    run(&mut book, 0..2);
    assert!(book.is_healthy());
    let (two, _) = calls(book.turn(0));
    assert_eq!(claims(&two), [2]); // two slots left: the jobs just claimed take the others
}

#[test]
fn the_back_off_doubles_per_failed_turn_and_starts_over_once_turns_go_through() {
    let mut book = book(1, true);
    let waits: Vec<Micros> = (0..8)
        .map(|_| {
            book.turn(0);
            book.back_off()
        })
        .collect();
    assert_eq!(
        waits,
        [100_000, 200_000, 400_000, 800_000, 1_600_000, 3_200_000, 5_000_000, 5_000_000]
    );
    book.turn(0); // goes through...
    book.turn(0); // ...so this one starts over
    assert_eq!(book.back_off(), 100_000);
}

#[test]
fn the_back_off_stands_while_the_last_call_failed() {
    let mut book = book(2, true);
    let (first, _) = calls(book.turn(0));
    for call in &first {
        book.call_failed(call.claim);
    }
    assert_eq!(book.turn(0), Turn::CallFailed);
    assert_eq!(book.back_off(), 100_000);
    let (retry, _) = calls(book.turn(0));
    book.turn(0); // a turn that raised nothing, but the backend has not answered yet
    assert_eq!(book.back_off(), 200_000);
    book.call_done(retry[0].claim, 0);
    book.turn(0);
    book.turn(0);
    assert_eq!(book.back_off(), 100_000);
}

#[test]
fn running_jobs_are_found_once_and_hold_slots() {
    let mut book = book(3, false);
    run(&mut book, 0..2);
    assert_eq!(book.running(), 2);
    assert_eq!(book.free(), 1);
    assert_eq!(book.finish(&1), Some("job"));
    assert_eq!(book.finish(&1), None);
    assert_eq!(book.running_jobs().count(), 1);
    assert_eq!(book.free(), 2);
}

#[test]
fn counters_count_completions_attempts_and_jobs_failed_for_good() {
    let mut book = book(1, false);
    book.count_completed(3);
    book.count_failed(true);
    book.count_failed(false);
    assert_eq!(
        book.counts(),
        Counts {
            processed: 3,
            failed: 1,
            attempts_failed: 2
        }
    );
}

#[test]
fn clearing_drops_jobs_and_outcomes() {
    let mut book = book(2, false);
    run(&mut book, 0..1);
    book.record(Outcome::Released, "a");
    book.clear();
    assert_eq!((book.running(), book.pending()), (0, 0));
}

#[test]
fn a_held_book_claims_nothing_and_sleeps_until_woken() {
    for remote in [false, true] {
        let mut book = book(4, remote);
        book.set_held(true);
        assert_eq!(book.claimable(0), 0);
        let (calls, idle) = calls(book.turn(0));
        assert!(calls.is_empty());
        assert_eq!(
            idle,
            Idle {
                claim: 0,
                pause: None
            }
        );
        book.set_held(false);
        assert_eq!(book.claimable(0), 4);
    }
}

#[test]
fn a_held_book_still_reports_completions() {
    let mut book = book(2, false);
    run(&mut book, 0..1);
    book.set_held(true);
    book.finish(&0);
    book.record(Outcome::Completed, "0");
    let (calls, _) = calls(book.turn(0));
    assert_eq!(claims(&calls), vec![0]);
    assert_eq!(calls[0].completions, vec!["0"]);
}

#[test]
fn the_claim_limit_caps_claims_per_window() {
    let mut book = book(10, false);
    let limit = ClaimLimit {
        max: 3,
        per: 60 * SECOND,
    };
    book.set_limit(Some(limit)).unwrap();
    assert_eq!(book.claimable(0), 3);
    let (first, _) = calls(book.turn(0));
    assert_eq!(claims(&first), vec![3]);
    book.call_done(3, 2);
    for key in 0..2 {
        book.start(key, "job");
        book.count_start(SECOND);
    }
    assert_eq!(book.claimable(SECOND), 1);
    book.start(2, "job");
    book.count_start(2 * SECOND);
    assert_eq!(book.claimable(2 * SECOND), 0);
    // The window opened at the first start: it closes a minute after it.
    let (none, idle) = calls(book.turn(2 * SECOND));
    assert!(none.is_empty());
    assert_eq!(
        idle,
        Idle {
            claim: 0,
            pause: Some(59 * SECOND)
        }
    );
    assert_eq!(book.claimable(61 * SECOND), 3);
}

#[test]
fn a_claim_limit_must_allow_a_job_per_some_time() {
    let mut book = book(1, false);
    assert!(book
        .set_limit(Some(ClaimLimit {
            max: 0,
            per: SECOND
        }))
        .is_err());
    assert!(book.set_limit(Some(ClaimLimit { max: 1, per: 0 })).is_err());
    assert!(!book.has_limit());
}

#[test]
fn remote_claims_ahead_up_to_the_prefetch_and_starts_them_as_slots_free() {
    let mut book = book(4, true);
    book.set_prefetch(None); // as many ahead as the concurrency: 8 in all
    let (first, _) = calls(book.turn(0));
    assert_eq!(claims(&first), [4, 4]);
    book.call_done(4, 4);
    book.call_done(4, 4);
    run(&mut book, 0..4);
    book.hold_ahead(4);
    assert_eq!((book.open(), book.free()), (0, 0));
    let (none, _) = calls(book.turn(0));
    assert!(none.is_empty(), "running and ahead fill the bound");
    book.finish(&0);
    book.record(Outcome::Completed, "a");
    assert_eq!(book.open(), 1, "one held job may start");
    book.unhold_ahead(1);
    book.start(4, "job");
    let (next, _) = calls(book.turn(0));
    assert_eq!(
        claims(&next),
        [1],
        "the bound: 4 running, 3 ahead, 1 to claim"
    );
}

#[test]
fn in_process_and_by_default_nothing_is_claimed_ahead() {
    let mut local = book(4, false);
    local.set_prefetch(Some(4));
    assert_eq!(local.prefetch(), 0);
    assert_eq!(book(4, true).prefetch(), 0);
    let mut remote = book(4, true);
    remote.set_prefetch(Some(2));
    assert_eq!((remote.prefetch(), remote.share()), (2, 3));
    remote.set_prefetch(None);
    assert_eq!(remote.prefetch(), 4, "the concurrency");
    let mut wide = book(100, true);
    wide.set_prefetch(None);
    assert_eq!(wide.prefetch(), 10, "up to 10 by default");
}

#[test]
fn jobs_claimed_ahead_count_against_the_claim_limit() {
    let mut book = book(2, true);
    book.set_prefetch(None);
    book.set_limit(Some(ClaimLimit {
        max: 3,
        per: SECOND,
    }))
    .unwrap();
    book.hold_ahead(2);
    assert_eq!(book.limit_room(0), 1);
}
