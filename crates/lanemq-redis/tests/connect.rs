//! Against a real redis-server started on a free loopback port (skipped only when no
//! `redis-server` binary exists; the Python suite, which CI runs, never skips).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lanemq_redis::{connect, describe};

struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(extra: &[&str]) -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
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
        let child = command.spawn().ok()?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self { child, port })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn connects_and_refuses_an_evicting_server() {
    let Some(server) = Server::start(&[]) else {
        eprintln!("no redis-server on PATH");
        return;
    };
    connect(&server.url(), false)
        .await
        .expect("connects to a noeviction server");
    let evicting = Server::start(&["--maxmemory-policy", "allkeys-lru"]).expect("second server");
    let error = connect(&evicting.url(), false)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(error.contains("allkeys-lru"), "{error}");
    connect(&evicting.url(), true)
        .await
        .expect("accepted when allowed");
}

#[tokio::test]
async fn errors_name_the_address_not_the_password() {
    let url = "redis://user:s3cret@127.0.0.1:1/0";
    let error = connect(url, false)
        .await
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(error.contains("127.0.0.1:1"), "{error}");
    assert!(!error.contains("s3cret"), "{error}");
    assert_eq!(describe(url), "redis://127.0.0.1:1");
    let bad = connect("redis://user:s3cret@[bad", false)
        .await
        .err()
        .expect("unparsable")
        .to_string();
    assert!(!bad.contains("s3cret"), "{bad}");
}
