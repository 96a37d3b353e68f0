//! A queue's first call: connecting and checking the server, once per queue (`ready`): the
//! eviction policy, whether scripts run as functions (the library loaded), the key layout
//! (an older one moved to the current one) and the queue-name rule, which a queue made before
//! it may break (it opens, with a warning).

use std::sync::atomic::Ordering;

use lanemq_core::jobs::{check_queue_name, is_queue_name, wall_clock_ms, QUEUE_NAME_RULE};
use lanemq_core::{CoreError, CoreResult};

use super::call::load_library;
use super::RedisBackend;
use crate::scripts;
use crate::topology::connect::{check_policy, is_connection_class, read_policy};

/// The key layout this version reads and writes (`LAYOUT` in lua/includes/common.lua).
const CURRENT_LAYOUT: &str = "4";

impl RedisBackend {
    /// Connects (if no other queue of the server has) and checks the server for this queue,
    /// once: the eviction policy (refused unless `allow_eviction`; a warning when the user may
    /// not read it) and whether scripts run as functions. Bounded by the connect timeout.
    pub async fn ready(&self) -> CoreResult<()> {
        self.target.routed().await?;
        if self.ready.initialized() {
            return Ok(());
        }
        // Boxed: the checks' future (connecting, routing, loading functions, the layout) is
        // large, and every caller's future would carry it inline (a test's runtime polls its
        // future on the thread's own stack, which a debug build overflowed).
        let checked = Box::pin(self.checked()).await;
        self.target.lost(checked)
    }

    async fn checked(&self) -> CoreResult<()> {
        let server = self.server();
        self.ready
            .get_or_try_init(|| {
                server.bounded("cannot connect", async {
                    let mut connection = server.commands().await?;
                    let address = server.address();
                    match read_policy(&mut connection, address).await? {
                        Ok(policy) => check_policy(&policy, address, self.allow_eviction)?,
                        Err(why) => server.warn(format!(
                            "redis at {address}: cannot read maxmemory-policy ({why}); going on \
                             without the check that the server never evicts job keys"
                        )),
                    }
                    server
                        .functions(|| async {
                            let mut connection = server.commands().await?;
                            match load_library(&mut connection).await {
                                Ok(()) => Ok(true),
                                // The server cannot serve now: learn it later.
                                Err(e) if is_connection_class(&e) => Err(server.error(e)),
                                // Before Redis 7, FUNCTION renamed away or not allowed to this
                                // user: scripts run by EVALSHA. (The tests check it loads.)
                                Err(_) => Ok(false),
                            }
                        })
                        .await?;
                    self.upgrade_layout().await?;
                    self.check_old_name().await
                })
            })
            .await
            .map(|_| ())
    }

    /// Moves a queue of an older layout (lua/includes/common.lua `LAYOUT`) to the current one,
    /// in one script call; refuses a queue of a layout newer than this lanemq knows. A new
    /// queue has none until its first write.
    async fn upgrade_layout(&self) -> CoreResult<()> {
        let mut connection = self.server().commands().await?;
        let layout: Option<String> = redis::cmd("HGET")
            .arg(self.keys.key("meta"))
            .arg("layout")
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        match layout.as_deref() {
            None | Some(CURRENT_LAYOUT) => Ok(()),
            Some("2" | "3") => {
                let args = vec![wall_clock_ms().to_string(), self.max_events.to_string()];
                self.run_ready(&scripts::LAYOUT, args).await.map(drop)
            }
            Some(other) => Err(CoreError::InvalidConfig(format!(
                "redis queue {:?} has key layout {other:?}, newer than this lanemq's \
                 ({CURRENT_LAYOUT:?}): open it with the lanemq version that wrote it",
                self.queue
            ))),
        }
    }

    /// Refuses a name outside the queue-name rule unless the queue exists already (it was
    /// made before the rule): that one still opens, and `take_name_warning` says it must move.
    async fn check_old_name(&self) -> CoreResult<()> {
        if is_queue_name(&self.queue) {
            return Ok(());
        }
        let mut connection = self.server().commands().await?;
        let exists: bool = redis::cmd("EXISTS")
            .arg(self.keys.key("meta"))
            .query_async(&mut connection)
            .await
            .map_err(|e| self.target.error(e))?;
        if !exists {
            return check_queue_name(&self.queue);
        }
        self.name_warning.store(true, Ordering::Release);
        Ok(())
    }

    /// The warning for an existing queue whose name the rule refuses, once.
    pub fn take_name_warning(&self) -> Option<String> {
        if !self.name_warning.swap(false, Ordering::AcqRel) {
            return None;
        }
        Some(format!(
            "redis queue {:?}: its name does not follow the queue-name rule ({QUEUE_NAME_RULE}); \
             it opens because it exists, but a future lanemq will refuse it: move its jobs to a \
             queue with a valid name",
            self.queue
        ))
    }

    /// Whether `ready` succeeded (calls made without awaiting, on a wire, need it).
    pub fn is_ready(&self) -> bool {
        self.ready.initialized()
    }
}
