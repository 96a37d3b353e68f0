//! `wait`: BLPOP on the process's wake list (`wake:<pid>`, at most one token: the script's
//! `wake` LPUSHes and LTRIMs it), on a blocking connection of its own taken from the server's
//! spares, so the store's other calls, on the shared command connection, go on meanwhile. A
//! token taken for a caller that stopped waiting goes back (`rewake`), so the next wait sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lanemq_core::CoreResult;
use redis::Value;

use super::store::RedisLaneStore;
use crate::topology::route;
use crate::topology::server::MAX_BLOCK;

impl RedisLaneStore {
    /// Waits until `pid` was woken since its previous `wait` returned (at once if it was), or
    /// `timeout_ms` passed, or `abandoned` is set (its caller stopped waiting: checked between
    /// BLPOPs, each of at most `MAX_BLOCK`, the bound the server's blocking connections are
    /// made for). True when it took the wake token: a caller that no longer waits for it then
    /// gives it back (`rewake`); one taken after `abandoned` was set is given back here.
    pub async fn wait(
        &self,
        pid: &str,
        timeout_ms: u64,
        abandoned: &AtomicBool,
    ) -> CoreResult<bool> {
        let wake = self.key(&format!("wake:{pid}"));
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        let mut redirects = 0;
        loop {
            if abandoned.load(Ordering::Acquire) {
                return Ok(false);
            }
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
                    let woken = value != Value::Nil;
                    if woken && abandoned.load(Ordering::Acquire) {
                        self.rewake(pid).await?;
                        return Ok(false);
                    }
                    if woken || left.is_zero() {
                        return Ok(woken);
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

    /// Gives `pid` back a wake token a `wait` took for a caller that no longer waited.
    pub async fn rewake(&self, pid: &str) -> CoreResult<()> {
        self.run::<Value>(&[String::from("rewake"), pid.to_owned()])
            .await?;
        Ok(())
    }
}
