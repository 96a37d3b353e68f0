//! The key layout (documented in `lua/README.md`). Every key of a queue starts with
//! `<prefix>:{<queue>}:`, so a queue lives on one Redis Cluster slot. The scripts are handed the
//! queue's META and a key that never exists (`script_keys`), and build its other keys from
//! META's name (`queue_keys`, in the order `bind` in `lua/includes/common.lua` names them), as
//! they build a job's hash, `<base>job:<id>`: each carries the queue's hash tag, so it is in
//! the declared keys' slot.
//! What the queue keeps for observation (metrics, workers) has keys of its own, which its
//! scripts are given (`Keys::metrics`, `Keys::workers`).

use lanemq_core::jobs::MetricsKind;

/// The fields of a job, in the order a job is read (`common.lua`'s `job(id)`), each a field of
/// its hash `<base>job:<id>` (layout "4"; layouts "2" and "3" had a hash per field,
/// `<base>j:<field>`, job id -> value).
pub const JOB_FIELDS: [&str; 20] = [
    "name",
    "data",
    "opts",
    "state",
    "prio",
    "ord",
    "seq",
    "created",
    "delay",
    "processed",
    "finished",
    "attempts",
    "stalled",
    "progress",
    "result",
    "reason",
    "trace",
    "token",
    "worker",
    "expires",
];

/// The list of waiting jobs of priority 0 (claimed before the sorted set `waiting`, which holds
/// the other priorities): a key the scripts build from `waiting`'s name (`WAITING0` in
/// `lua/includes/common.lua`), so not in their block.
pub const WAITING_LIST: &str = "waiting:0";

/// The sorted set of each state, in `JobState::ALL` order (waiting jobs of priority 0 are in
/// `WAITING_LIST` instead).
pub const STATE_SETS: [&str; 6] = [
    "waiting",
    "delayed",
    "active",
    "children",
    "completed",
    "failed",
];

/// The queue's fixed keys after META and the state sets, in the order `bind`
/// (`lua/includes/common.lua`) names them. (The scripts build them; the tests hold `bind` to
/// this list.)
#[cfg(test)]
const AFTER_STATES: [&str; 9] = [
    "logs",
    "events",
    "marker",
    "dedup",
    "dedup:expiry",
    "schedulers",
    "schedulers:next",
    "deps",
    "deps:values",
];

/// The queue's fixed keys, in the order `bind` names them, each `<base><name>`: the scripts are
/// given the first, META, and build the others from its name.
#[cfg(test)]
pub fn queue_keys() -> impl Iterator<Item = &'static str> {
    std::iter::once("meta")
        .chain(STATE_SETS)
        .chain(AFTER_STATES)
}

/// A key of the queue that nothing writes, given to every script beside META: Redis Cluster
/// serves no call whose declared keys are missing in part while their slot migrates (ASK or
/// TRYAGAIN, the call not run), so a script never runs mid-migration, where the keys it builds
/// could be found moved after its first writes (`topology/route.rs`). The 16 fixed keys, given
/// until session 19, did this as some of them were missing in most queues.
pub const GUARD: &str = "guard";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    base: String,
}

impl Keys {
    pub fn new(prefix: &str, queue: &str) -> Self {
        Self {
            base: format!("{prefix}:{{{queue}}}:"),
        }
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.base)
    }

    /// The hash of job `id`'s fields.
    pub fn job(&self, id: &str) -> String {
        format!("{}job:{id}", self.base)
    }

    /// The keys a script of this queue is given (its `KEYS`): META, from whose name the
    /// scripts build the others (`queue_keys`), and `GUARD`. A flow's script gets those of the
    /// queues linked to it after them.
    pub fn script_keys(&self) -> [String; 2] {
        [self.key("meta"), self.key(GUARD)]
    }

    /// The keys of a metrics series, the KEYS of `lua/metrics-2.lua`: its hash (`count`,
    /// `newest`) and its list of per-minute counts.
    pub fn metrics(&self, kind: MetricsKind) -> [String; 2] {
        let head = self.key(&format!("metrics:{}", kind.as_str()));
        let data = format!("{head}:data");
        [head, data]
    }

    /// The keys of the worker registry, the KEYS of `lua/workers-2.lua`: the entries' hash and
    /// their expiries' sorted set.
    pub fn workers(&self) -> [String; 2] {
        [self.key("workers"), self.key("workers:expiry")]
    }

    /// Every key of what the queue keeps for observation (`obliterate` deletes them).
    pub fn observed(&self) -> Vec<String> {
        let series = MetricsKind::ALL
            .into_iter()
            .flat_map(|kind| self.metrics(kind));
        series.chain(self.workers()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_carries_the_queue_hash_tag() {
        let keys = Keys::new("lanemq", "email");
        assert_eq!(keys.key("waiting"), "lanemq:{email}:waiting");
        assert_eq!(keys.key(WAITING_LIST), "lanemq:{email}:waiting:0");
        assert_eq!(keys.job("42"), "lanemq:{email}:job:42");
        assert_eq!(
            keys.script_keys(),
            ["lanemq:{email}:meta", "lanemq:{email}:guard"]
        );
        assert_eq!(queue_keys().count(), 16);
        assert!(queue_keys().all(|name| name != GUARD));
        let all: Vec<String> = queue_keys().map(|name| keys.key(name)).collect();
        let observed = keys.observed();
        assert_eq!(observed.len(), 6);
        assert!(observed.iter().all(|k| k.starts_with("lanemq:{email}:")));
        assert!(
            observed.iter().all(|k| !all.contains(k)),
            "outside the block"
        );
        assert_eq!(
            keys.metrics(MetricsKind::Failed),
            [
                "lanemq:{email}:metrics:failed",
                "lanemq:{email}:metrics:failed:data"
            ]
        );
    }
}
