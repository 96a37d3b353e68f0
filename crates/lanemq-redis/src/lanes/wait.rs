//! `wait`: BLPOP on the process's wake list (`wake:<pid>`, at most one token: the script's
//! `wake` LPUSHes and LTRIMs it), on a blocking connection of its own taken from the server's
//! spares, so the store's other calls, on the shared command connection, go on meanwhile.

use std::time::{Duration, Instant};

use lanemq_core::CoreResult;
use redis::Value;

use super::store::RedisLaneStore;
use crate::topology::route;
use crate::topology::server::MAX_BLOCK;

impl RedisLaneStore {
    /// Returns when `pid` was woken since its previous `wait` returned (at once if it was), or
    /// after `timeout_ms`. Each BLPOP blocks for at most `MAX_BLOCK` (the bound the server's
    /// blocking connections are made for), again until the timeout.
    pub async fn wait(&self, pid: &str, timeout_ms: u64) -> CoreResult<()> {
        let wake = self.key(&format!("wake:{pid}"));
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut redirects = 0;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            self.target.routed().await?;
            let server = self.target.server();
            let mut live = self.target.lost(server.blocking().await)?;
            // (BLPOP's timeout 0 would block forever: no time left is one LPOP)
            let popped = if left.is_zero() {
                redis::cmd("LPOP")
                    .arg(&wake)
                    .query_async::<Value>(&mut live.connection)
                    .await
            } else {
                let block = left.min(MAX_BLOCK).as_secs_f64().max(0.001);
                redis::cmd("BLPOP")
                    .arg(&wake)
                    .arg(format!("{block:.3}"))
                    .query_async::<Value>(&mut live.connection)
                    .await
            };
            match popped {
                Ok(value) => {
                    server.keep_blocking(live);
                    if value != Value::Nil || left.is_zero() {
                        return Ok(());
                    }
                }
                Err(error) => {
                    redirects += 1;
                    match route::redirect(&error) {
                        Some(redirect)
                            if self.target.route.is_some() && redirects < route::MAX_REDIRECTS =>
                        {
                            self.target.error_noted(&error);
                            self.target.follow_redirect(redirect, false).await?;
                        }
                        _ => return Err(self.target.error(error)),
                    }
                }
            }
        }
    }
}
