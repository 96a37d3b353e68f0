//! Where a queue's calls go (`Target`): its server, and on a cluster how it follows its slot:
//! which replies mean the slot's master may have changed, the queue's routing to its slot's
//! master (again after such a reply or a lost connection), and the refusal of flows across
//! slots (a script gets the keys of every queue it touches, and a call's keys must be in one
//! slot). On a single server the routing is a no-op. It knows servers and clusters, not the
//! queue: `RedisBackend` holds a `Target` and asks it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use lanemq_core::{CoreError, CoreResult};
use redis::{ErrorKind, ServerErrorKind};

use super::cluster::{slot_of, Cluster};
use super::connect::is_connection_class;
use super::server::Server;
use crate::keys::Keys;

/// How many redirections (or waits for a changing cluster) one call follows before it fails:
/// with `SETTLE_WAIT`, about 5 s for a migration of the queue's slot to end. (A script is
/// given the queue's `meta` and its guard, a key that never exists (`keys::GUARD`); while its
/// slot migrates, the old master answers ASK or TRYAGAIN for such a call and the new one, even
/// after ASKING, TRYAGAIN: Redis serves no multi-key call with keys missing on a slot in
/// migration, so the call waits for the migration to end.)
pub(crate) const MAX_REDIRECTS: usize = 100;

/// How long a call waits for a cluster that is changing (TRYAGAIN, CLUSTERDOWN) to settle
/// before it asks again.
pub(crate) const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

pub(crate) struct Route {
    pub cluster: Arc<Cluster>,
    /// The queue's slot: that of its hash tag, which every key of the queue carries.
    pub slot: u16,
    /// Set when the master may have changed (and before the first call): the next call reads
    /// the slot map first.
    pub stale: AtomicBool,
    /// Whether the queue was routed once (later routings read a fresh map).
    pub routed: AtomicBool,
}

impl Route {
    pub fn new(cluster: Arc<Cluster>, keys: &Keys) -> Self {
        Self {
            cluster,
            slot: slot_of(&keys.key("meta")),
            stale: AtomicBool::new(true),
            routed: AtomicBool::new(false),
        }
    }
}

/// What a reply says of the slot's master.
pub(crate) enum Redirect {
    /// The slot is now served by another master (the map is read again).
    Moved,
    /// The slot is being migrated and its keys are at `address` already: the call goes there
    /// once, after ASKING.
    Ask(String),
    /// The cluster is changing (a migration with the keys split, a failover): wait, ask again.
    Settling,
}

/// The redirection `error` is, if any. Such a reply means the command did not run.
pub(crate) fn redirect(error: &redis::RedisError) -> Option<Redirect> {
    match error.kind() {
        ErrorKind::Server(ServerErrorKind::Moved) => Some(Redirect::Moved),
        // (The error of a pipeline names no node: its call waits as for TRYAGAIN.)
        ErrorKind::Server(ServerErrorKind::Ask) => Some(
            error
                .redirect_node()
                .map_or(Redirect::Settling, |(address, _)| {
                    Redirect::Ask(address.to_owned())
                }),
        ),
        ErrorKind::Server(
            ServerErrorKind::TryAgain | ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown,
        ) => Some(Redirect::Settling),
        // Behind sentinels: the old master, now a replica, refuses writes (READONLY) and ends
        // the waits blocked on it (UNBLOCKED); the sentinels name the new one, maybe not yet.
        ErrorKind::Server(ServerErrorKind::ReadOnly) => Some(Redirect::Settling),
        _ if error.code() == Some("UNBLOCKED") => Some(Redirect::Settling),
        _ => None,
    }
}

/// Whether `error` is the server's refusal of keys of several slots in one call.
pub(crate) fn is_cross_slot(error: &redis::RedisError) -> bool {
    error.kind() == ErrorKind::Server(ServerErrorKind::CrossSlot)
}

/// The refusal of a flow across queues of different slots, naming them.
pub(crate) fn cross_slot(prefix: &str, queue: &str, other: &str) -> CoreError {
    CoreError::InvalidConfig(format!(
        "queues {queue:?} and {other:?} are in different slots of the Redis Cluster (prefix \
         {prefix:?} gives each queue its own hash tag): a flow, and every call that links \
         queues, needs them in one slot; give the queues a prefix that is a hash tag, such as \
         prefix=\"{{app}}\", so that all of them share its slot"
    ))
}

/// The server of one queue's calls, held (`Server::acquire`) until the queue closes: on a
/// cluster, its slot's master, which may change (`route`).
pub(crate) struct Target {
    current: Mutex<Arc<Server>>,
    /// On a cluster: how this queue finds its master.
    pub route: Option<Route>,
    closed: AtomicBool,
}

impl Target {
    /// Calls go to `server` (held from now on), and on a cluster wherever `route` says.
    pub fn new(server: Arc<Server>, route: Option<Route>) -> Self {
        server.acquire();
        Self {
            current: Mutex::new(server),
            route,
            closed: AtomicBool::new(false),
        }
    }

    /// The server of the calls (on a cluster, the master as last routed).
    pub fn server(&self) -> Arc<Server> {
        Arc::clone(&self.current.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The cluster the queue is in, if it is.
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.route.as_ref().map(|route| &route.cluster)
    }

    /// The queue is done with the server (the last queue's close closes the connections).
    pub fn close(&self) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if !self.closed.swap(true, Ordering::AcqRel) {
            current.release();
        }
    }

    /// `error` as a core error. On a cluster, a redirection or a lost connection means the
    /// slot's master may have changed, so the next call reads the slot map first; a CROSSSLOT
    /// refusal names what to do.
    pub fn error(&self, error: redis::RedisError) -> CoreError {
        if let Some(route) = &self.route {
            if redirect(&error).is_some() || is_connection_class(&error) {
                route.stale.store(true, Ordering::Release);
            }
            if is_cross_slot(&error) {
                return CoreError::InvalidConfig(format!(
                    "redis cluster {}: {error}: the keys of one call must be in one slot; give \
                     queues that flows link a prefix that is a hash tag, such as \
                     prefix=\"{{app}}\"",
                    route.cluster.masked_url()
                ));
            }
        }
        self.server().error(error)
    }

    /// On a cluster, routes the queue to its slot's master if it is not yet, or a reply
    /// said it may no longer be (`Route::stale`); a no-op on a single server.
    pub async fn routed(&self) -> CoreResult<()> {
        let Some(route) = &self.route else {
            return Ok(());
        };
        if !route.stale.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let fresh = route.routed.swap(true, Ordering::AcqRel);
        // Boxed (the slow path only): reading the slot map is a large future, which every
        // call's future would otherwise carry inline (see `ready`).
        match Box::pin(route.cluster.master_of(route.slot, fresh)).await {
            Ok(master) => {
                let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
                if current.id() != master.id() {
                    master.acquire();
                    let old = std::mem::replace(&mut *current, master);
                    if !self.closed.load(Ordering::Acquire) {
                        old.release();
                    } else {
                        current.release();
                    }
                }
                Ok(())
            }
            Err(e) => {
                route.stale.store(true, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Follows a cluster's redirection of a script call: the server to call once after ASKING
    /// (ASK, where scripts run as functions: EVALSHA's loading of a missing script cannot go
    /// behind ASKING, so without functions the call waits for the migration to end instead),
    /// or none when the queue was routed again.
    pub async fn follow_redirect(
        &self,
        redirect: Redirect,
        functions: bool,
    ) -> CoreResult<Option<Arc<Server>>> {
        let Some(route) = &self.route else {
            return Ok(None);
        };
        match redirect {
            Redirect::Ask(address) if functions => {
                return route.cluster.server_at(&address).map(Some);
            }
            Redirect::Moved => {}
            Redirect::Ask(_) | Redirect::Settling => {
                tokio::time::sleep(SETTLE_WAIT).await;
            }
        }
        route.stale.store(true, Ordering::Release);
        self.routed().await?;
        Ok(None)
    }

    /// `outcome`, noting on a cluster that a connection error may mean the master was lost
    /// (failed over): the next call reads the slot map again.
    pub fn lost<T>(&self, outcome: CoreResult<T>) -> CoreResult<T> {
        if let (Some(route), Err(CoreError::Connection(_))) = (&self.route, &outcome) {
            route.stale.store(true, Ordering::Release);
        }
        outcome
    }

    /// Waits until the server answers (see `Server::wait_reachable`); on a cluster, until the
    /// master of this queue's slot does, reading the slot map again while it does not (its
    /// master may be failing over to a replica).
    pub async fn wait_reachable(&self, timeout: std::time::Duration) -> bool {
        let Some(route) = &self.route else {
            return self.server().wait_reachable(timeout).await;
        };
        let deadline = std::time::Instant::now() + timeout;
        loop {
            route.stale.store(true, Ordering::Release);
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let asked = tokio::time::timeout(left, self.routed()).await;
            if matches!(asked, Ok(Ok(())))
                && self
                    .server()
                    .wait_reachable(left.min(std::time::Duration::from_millis(300)))
                    .await
            {
                return true;
            }
            if std::time::Instant::now() + SETTLE_WAIT >= deadline {
                return false;
            }
            tokio::time::sleep(SETTLE_WAIT * 2).await;
        }
    }

    /// Notes what a redirection says (the map is stale) without making it an error.
    pub fn error_noted(&self, error: &redis::RedisError) {
        if let Some(route) = &self.route {
            if redirect(error).is_some() {
                route.stale.store(true, Ordering::Release);
            }
        }
    }

    /// Whether `error` is a cluster's redirection of this queue's call (noted: the next call
    /// reads the slot map first). Such a call did not run.
    pub fn redirected(&self, error: &redis::RedisError) -> bool {
        let redirected = self.route.is_some() && redirect(error).is_some();
        if redirected {
            self.error_noted(error);
        }
        redirected
    }
}
