//! How a queue of a cluster follows its slot: which replies mean the slot's master may have
//! changed, and the check that queues linked by flows share the slot (a script gets the keys
//! of every queue it touches, and a call's keys must be in one slot).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use lanemq_core::CoreError;
use redis::{ErrorKind, ServerErrorKind};

use crate::cluster::{slot_of, Cluster};
use crate::keys::Keys;

/// How many redirections (or waits for a changing cluster) one call follows before it fails.
pub(crate) const MAX_REDIRECTS: usize = 40;

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
        ErrorKind::Server(ServerErrorKind::Ask) => error
            .redirect_node()
            .map(|(address, _)| Redirect::Ask(address.to_owned())),
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
