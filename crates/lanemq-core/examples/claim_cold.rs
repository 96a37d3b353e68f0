//! Wall time of claiming and completing N jobs added in bulk beforehand (the add untimed), on
//! the memory store: jobs.py's `process` phase without Python. The claims reach jobs not
//! touched since their add, cold in the caches once N is large (see benches/README.md).
//!
//!     cargo run --release --example claim_cold -p lanemq-core -- 100000 5

use std::time::Instant;

use lanemq_core::jobs::{lifecycle, JobOptions, MemoryStore, StoreConfig};

const T: u64 = 1_700_000_000_000;

fn run(n: usize) -> f64 {
    let mut store = MemoryStore::new(StoreConfig::default());
    let jobs = (0..n)
        .map(|i| {
            (
                "noop".to_owned(),
                format!("{{\"i\":{i}}}"),
                JobOptions::default(),
            )
        })
        .collect();
    store.add_bulk(jobs, T).expect("add_bulk");
    let started = Instant::now();
    loop {
        let claimed = lifecycle::claim(&mut store, "w", 30_000, 50, T).expect("claim");
        if claimed.is_empty() {
            break;
        }
        for job in claimed {
            let token = job.lock.expect("claimed jobs are locked").token;
            lifecycle::complete(&mut store, &job.id, &token, "null", T).expect("complete");
        }
    }
    started.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let mut best = f64::MAX;
    for _ in 0..rounds {
        best = best.min(run(n));
    }
    println!("memory store, {n} jobs: claim + complete {best:.0} ns a job (best of {rounds})");
}
