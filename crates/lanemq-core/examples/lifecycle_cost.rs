//! The job lifecycle's own cost, without Python or a clock in the way: N jobs added in bulk,
//! claimed 100 at a time and completed, first on the memory store, then on a local SQLite file
//! (`--local`). Run it under `valgrind --tool=callgrind` to count instructions, which repeat
//! exactly run to run whatever else the machine does (see benches/README.md):
//!
//!     cargo build --release --example lifecycle_cost -p lanemq-core
//!     valgrind --tool=callgrind target/release/examples/lifecycle_cost 20000
//!     valgrind --tool=callgrind target/release/examples/lifecycle_cost 5000 --local

use std::time::Instant;

use lanemq_core::jobs::{
    lifecycle, Completion, JobLifecycle, JobOptions, LocalBackend, MemoryStore, NewJob, StoreConfig,
};

const T: u64 = 1_700_000_000_000;

fn jobs(n: usize) -> Vec<(String, String, JobOptions)> {
    (0..n)
        .map(|i| {
            (
                "noop".to_owned(),
                format!("{{\"i\":{i}}}"),
                JobOptions::default(),
            )
        })
        .collect()
}

fn memory(n: usize) -> usize {
    let mut store = MemoryStore::new(StoreConfig::default());
    store.add_bulk(jobs(n), T).expect("add_bulk");
    let mut done = 0;
    loop {
        let claimed = lifecycle::claim(&mut store, "w", 30_000, 100, T).expect("claim");
        if claimed.is_empty() {
            return done;
        }
        for job in claimed {
            let token = job.lock.expect("claimed jobs are locked").token;
            lifecycle::complete(&mut store, &job.id, &token, "null", T).expect("complete");
            done += 1;
        }
    }
}

fn local(n: usize) -> usize {
    let dir = std::env::temp_dir().join(format!("lanemq-lifecycle-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join("bench.sqlite3");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let done = runtime.block_on(async {
        let backend = LocalBackend::open(&path, "bench", StoreConfig::default()).expect("open");
        let new = jobs(n)
            .into_iter()
            .map(|(name, data, options)| NewJob {
                name,
                data,
                options,
            })
            .collect();
        backend.add_bulk(new, T).await.expect("add_bulk");
        let mut done = 0;
        loop {
            let claimed = backend
                .claim("w".into(), 30_000, 100, T)
                .await
                .expect("claim");
            if claimed.is_empty() {
                return done;
            }
            let items = claimed
                .into_iter()
                .map(|job| Completion {
                    id: job.id.to_string(),
                    token: job.lock.expect("claimed jobs are locked").token,
                    result: "null".into(),
                })
                .collect::<Vec<_>>();
            done += items.len();
            for outcome in backend.complete_many(items, T).await.expect("complete") {
                outcome.expect("completed");
            }
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    done
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let on_file = args.iter().any(|a| a == "--local");
    let started = Instant::now();
    let done = if on_file { local(n) } else { memory(n) };
    assert_eq!(done, n, "every job completed once");
    let seconds = started.elapsed().as_secs_f64();
    let backend = if on_file { "local" } else { "memory" };
    println!("{backend}: {n} jobs added, claimed and completed in {seconds:.3} s");
}
