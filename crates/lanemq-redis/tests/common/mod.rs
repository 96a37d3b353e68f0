//! A redis-server the test starts on a free loopback port and kills when dropped. A missing
//! `redis-server` fails the test loudly (scripts/test installs it); it never skips.

#![allow(dead_code)] // each test file uses a part of this module

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lanemq_core::jobs::{Completion, Job, JobOptions, NewJob};
use lanemq_redis::RedisBackend;

/// A fixed clock for tests (ms since the epoch).
pub const T: u64 = 1_700_000_000_000;

/// A job called `name` whose options `f` sets.
pub fn job(name: &str, f: impl FnOnce(&mut JobOptions)) -> NewJob {
    let mut options = JobOptions::default();
    f(&mut options);
    NewJob {
        name: name.into(),
        data: "null".into(),
        options,
    }
}

/// The completion of claimed `job` (with its lock's token) with `result` (JSON text).
pub fn completion(job: &Job, result: &str) -> Completion {
    Completion {
        id: job.id.to_string(),
        token: job.lock.as_ref().expect("a claimed job").token.clone(),
        result: result.into(),
    }
}

/// The backend of queue `test` (prefix `lanemq`) on `server`.
pub async fn backend(server: &Server) -> RedisBackend {
    RedisBackend::connect(&server.url(), "lanemq", "test", 100, false)
        .await
        .expect("connects")
}

/// A plain connection to `server`, to look at keys directly.
pub async fn raw(server: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

pub struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts a server on a free port. Tests run in parallel: a port found free may be taken by
    /// another test's server before this one binds it, so the server that answers must be this
    /// child (its `process_id`), else the child is stopped and another port tried.
    pub fn start(extra: &[&str]) -> Self {
        for _ in 0..20 {
            if let Some(server) = Self::try_start(extra) {
                return server;
            }
        }
        panic!("redis-server did not start on a free port");
    }

    fn try_start(extra: &[&str]) -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut command = Command::new("redis-server");
        command
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = command
            .spawn()
            .expect("redis-server must be on PATH (scripts/test installs it)");
        // Dropped (killed) unless it is the server answering on the port.
        let mut server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if server.child.try_wait().ok().flatten().is_some() {
                return None; // it could not bind the port
            }
            if let Some(pid) = server.process_id() {
                return (pid == server.child.id()).then_some(server);
            }
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The `process_id` of the server answering on this port, if one does.
    fn process_id(&self) -> Option<u32> {
        let mut connection = redis::Client::open(self.url())
            .ok()?
            .get_connection()
            .ok()?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut connection)
            .ok()?;
        info.lines()
            .find_map(|line| line.strip_prefix("process_id:"))
            .and_then(|pid| pid.trim().parse().ok())
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stored value of job field `field` (of the hash `lanemq:{test}:job:<id>`) for job `id`,
/// read raw.
pub async fn stored_field(server: &Server, field: &str, id: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(format!("lanemq:{{test}}:job:{id}"))
        .arg(field)
        .query_async(&mut raw(server).await)
        .await
        .unwrap()
}

/// Writes job field `field` of job `id` raw, as an earlier version may have stored it.
pub async fn store_field(server: &Server, field: &str, id: &str, value: &str) {
    let _: usize = redis::cmd("HSET")
        .arg(format!("lanemq:{{test}}:job:{id}"))
        .arg(field)
        .arg(value)
        .query_async(&mut raw(server).await)
        .await
        .unwrap();
}
