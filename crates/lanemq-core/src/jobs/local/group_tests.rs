//! Groups on the SQLite file: a held group's jobs cost another group's claim nothing, counted
//! in SQLite VM steps (a measure of work that no load on the machine moves).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rusqlite::Connection;

use crate::jobs::contract::NewJob;
use crate::jobs::lifecycle::{self, group_admin};
use crate::jobs::options::JobOptions;

use crate::jobs::local::env::Env;
use crate::jobs::local::storage::SqlStore;

fn vm_steps<T>(conn: &mut Connection, f: impl FnOnce(&Connection) -> T) -> (T, u64) {
    let steps = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&steps);
    conn.progress_handler(
        1,
        Some(move || {
            counter.fetch_add(1, Ordering::Relaxed);
            false
        }),
    )
    .unwrap();
    let out = f(conn);
    conn.progress_handler(1, None::<fn() -> bool>).unwrap();
    (out, steps.load(Ordering::Relaxed))
}

fn add(conn: &Connection, env: &mut Env, group: Option<&str>, n: usize) {
    let jobs = (0..n)
        .map(|_| NewJob {
            name: "n".into(),
            data: "null".into(),
            options: JobOptions {
                group: group.map(str::to_owned),
                ..JobOptions::default()
            },
        })
        .collect();
    lifecycle::add_bulk(&mut SqlStore::new(conn, env), jobs, 1 << 20, 1).unwrap();
}

#[test]
fn a_paused_group_with_many_jobs_costs_another_groups_claim_nothing() {
    let path = std::env::temp_dir().join(format!(
        "lanemq-groups-{}-{:?}.sqlite3",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let mut conn = crate::jobs::local::schema::open(&path, "q").unwrap();
    let mut env = Env::new("q", 1 << 20, 100);
    conn.execute_batch("BEGIN").unwrap();
    group_admin::set_paused(&mut SqlStore::new(&conn, &mut env), "held", true).unwrap();
    let claim_beside = |conn: &mut Connection, env: &mut Env, held: usize| {
        add(conn, env, Some("held"), held);
        add(conn, env, Some("a"), 1);
        add(conn, env, None, 1);
        let (claimed, steps) = vm_steps(conn, |conn| {
            lifecycle::claim(&mut SqlStore::new(conn, env), "w", 1_000, 5, 2).unwrap()
        });
        assert_eq!(claimed.len(), 2, "the held group's jobs are not claimed");
        steps
    };
    let few = claim_beside(&mut conn, &mut env, 500);
    let many = claim_beside(&mut conn, &mut env, 20_000);
    // (within a few steps: the indexes may be a level deeper)
    assert!(
        many <= few + few / 20,
        "a claim beside 20,500 held jobs took {many} VM steps, beside 500 {few}"
    );
    conn.execute_batch("COMMIT").unwrap();
    drop(conn);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
