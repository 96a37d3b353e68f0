//! The shared management decisions (`lifecycle::manage`), run on the memory store (the SQLite
//! store runs the same code; the conformance suite holds both to every contract).

use crate::error::CoreError;
use crate::jobs::contract::NewJob;
use crate::jobs::lifecycle::manage::*;
use crate::jobs::lifecycle::{add as add_job, claim};
use crate::jobs::model::{JobState, LogLine, Millis};
use crate::jobs::options::{JobOptions, StoreConfig};
use crate::jobs::MemoryStore;

const T: Millis = 1_700_000_000_000;

fn add(s: &mut MemoryStore, delay: Millis) -> String {
    let options = JobOptions {
        delay,
        ..JobOptions::default()
    };
    let job = NewJob {
        name: "n".into(),
        data: "null".into(),
        options,
    };
    add_job(s, job, 1 << 20, T).unwrap().0.id.to_string()
}

fn ids(jobs: &[crate::jobs::model::Job]) -> Vec<&str> {
    jobs.iter().map(|j| &*j.id).collect()
}

fn event_names(s: &MemoryStore) -> Vec<&'static str> {
    s.read_events(0, u64::MAX, 0)
        .iter()
        .map(|e| e.event)
        .collect()
}

#[test]
fn a_page_over_several_states_reads_each_state_in_its_order_from_where_the_page_starts() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let waiting: Vec<String> = (0..3).map(|_| add(&mut s, 0)).collect();
    let delayed: Vec<String> = (0..2).map(|_| add(&mut s, 1_000)).collect();
    let states = [JobState::Waiting, JobState::Delayed];
    let (page, total) = list_jobs(&mut s, &states, 2, 3, true).unwrap();
    assert_eq!(total, 5);
    assert_eq!(ids(&page), vec![&*waiting[2], &*delayed[0]]);
    // Descending reverses each state's order, not the concatenation.
    let (page, _) = list_jobs(&mut s, &states, 0, -1, false).unwrap();
    let expected = [
        &waiting[2],
        &waiting[1],
        &waiting[0],
        &delayed[1],
        &delayed[0],
    ];
    assert_eq!(ids(&page), expected.map(|id| &**id).to_vec());
    let (page, _) = list_jobs(&mut s, &[JobState::Delayed], -1, -1, true).unwrap();
    assert_eq!(ids(&page), vec![&*delayed[1]]);
    assert_eq!(count_pending(&mut s).unwrap(), 5);
    let counts = get_job_counts(
        &mut s,
        &[JobState::Delayed, JobState::Waiting, JobState::Delayed],
    );
    assert_eq!(
        counts.unwrap(),
        vec![(JobState::Delayed, 2), (JobState::Waiting, 3)]
    );
}

#[test]
fn a_log_keeps_its_newest_lines_and_reports_how_many_it_holds() {
    let mut s = MemoryStore::new(StoreConfig::default());
    let id = add(&mut s, 0);
    for (i, held) in [(0, 1), (1, 2), (2, 3)] {
        assert_eq!(add_log(&mut s, &id, &format!("l{i}"), 0, i).unwrap(), held);
    }
    assert_eq!(add_log(&mut s, &id, "l3", 2, 3).unwrap(), 2);
    // Each line keeps the time it was written at ("lN" at N).
    let line = |n: u64| LogLine {
        time: Some(n),
        text: format!("l{n}"),
    };
    assert_eq!(
        get_logs(&mut s, &id, 0, -1, true).unwrap(),
        (vec![line(2), line(3)], 2)
    );
    assert_eq!(
        get_logs(&mut s, &id, 0, 0, false).unwrap(),
        (vec![line(3)], 2)
    );
    clear_logs(&mut s, &id, 0).unwrap();
    assert_eq!(get_logs(&mut s, &id, 0, -1, true).unwrap(), (vec![], 0));
    assert!(matches!(
        add_log(&mut s, "missing", "l", 0, 7),
        Err(CoreError::JobNotFound(_))
    ));
}

#[test]
fn pause_and_resume_say_so_once_and_obliterate_refused_stays_paused() {
    let mut s = MemoryStore::new(StoreConfig::default());
    add(&mut s, 0);
    set_paused(&mut s, false, T).unwrap();
    set_paused(&mut s, true, T).unwrap();
    set_paused(&mut s, true, T).unwrap();
    set_paused(&mut s, false, T).unwrap();
    claim(&mut s, "w", 1_000, 1, T).unwrap();
    let refused = obliterate(&mut s, false, T).unwrap();
    assert!(matches!(refused, Err(CoreError::Refused(_))));
    assert!(is_paused(&mut s).unwrap());
    let names = event_names(&s);
    let from_pause = &names[names.iter().position(|e| *e == "paused").unwrap()..];
    assert_eq!(from_pause.iter().filter(|e| **e == "paused").count(), 2);
    assert_eq!(from_pause.iter().filter(|e| **e == "resumed").count(), 1);
    obliterate(&mut s, true, T).unwrap().unwrap();
    assert!(!is_paused(&mut s).unwrap());
    assert_eq!(
        get_stats(&mut s, T)
            .unwrap()
            .counts
            .iter()
            .map(|c| c.1)
            .sum::<usize>(),
        0
    );
    assert!(event_names(&s).is_empty());
}

#[test]
fn progress_is_written_then_told_and_data_is_checked_before_it_is_written() {
    let mut s = MemoryStore::new(StoreConfig {
        max_payload_bytes: 8,
        ..StoreConfig::default()
    });
    let id = add(&mut s, 0);
    update_progress(&mut s, &id, "50", T).unwrap();
    let last = s.read_events(0, u64::MAX, 0).pop().unwrap();
    assert_eq!(
        (last.event, last.job_id.as_deref()),
        ("progress", Some(&*id))
    );
    assert_eq!(&*s.get_job(&id).unwrap().progress, "50");
    assert!(update_data(&mut s, &id, "\"far too long\"").is_err());
    assert_eq!(&*s.get_job(&id).unwrap().data, "null");
    assert!(matches!(
        update_progress(&mut s, "missing", "1", T),
        Err(CoreError::JobNotFound(_))
    ));
}
