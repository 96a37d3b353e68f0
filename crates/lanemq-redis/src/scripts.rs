//! The Lua scripts, embedded at build time, in two forms.
//!
//! - On Redis 7 and Valkey 7.2 on, all of them are the functions of one library (`LIBRARY`,
//!   built by `Prelude::library`). Its helpers are made once, when the server loads it, not on
//!   every call.
//! - On older servers, each script is loaded with the shared helpers it uses in front of it:
//!   the top-level definitions of the helper libraries in `lua/includes/` (`common.lua`,
//!   `jobs.lua`, `flows.lua` and `schedulers.lua`) that its body reaches, in that order (see
//!   `compose.rs`), so each call pays only for its own (every helper defined costs each call a
//!   closure, and its garbage).
//!   redis-rs' `Script` calls it by SHA (EVALSHA) and loads it again if the server answers
//!   NOSCRIPT.

use std::sync::LazyLock;

use redis::Script;

use crate::compose::Prelude;

const COMMON: &str = include_str!("../../../lua/includes/common.lua");
const JOBS: &str = include_str!("../../../lua/includes/jobs.lua");
const FLOWS: &str = include_str!("../../../lua/includes/flows.lua");
const SCHEDULERS: &str = include_str!("../../../lua/includes/schedulers.lua");

static PRELUDE: LazyLock<Prelude<'static>> =
    LazyLock::new(|| Prelude::new(&[COMMON, JOBS, FLOWS, SCHEDULERS]));

/// The helper of `lua/includes/common.lua` every script returns through: it writes the call's
/// events, which `emit` gathers into one stream entry.
const RETURN_THROUGH: &str = "events_flushed";

/// The script's text: the helpers `body` uses, then `body`, returning through `RETURN_THROUGH`.
fn text(body: &str) -> String {
    PRELUDE.compose(&format!(
        "return {RETURN_THROUGH}((function()\n{body}\nend)())"
    ))
}

/// A script, and whether it may work in the keys of queues linked by flows (its helpers use
/// `block_base`): only those are sent the linked queues' keys after their own.
pub struct LuaScript {
    pub script: Script,
    pub links: bool,
    /// Its name in the FUNCTION library (`LIBRARY`), for FCALL.
    pub function: String,
}

/// Every script: its operation name, and its body (`lua/<op>-2.lua`: two keys each, a queue's
/// `meta` and `guard`, or for those of `OWN_KEYS` two keys of their own).
const OPS: [(&str, &str); 31] = [
    ("add", include_str!("../../../lua/add-2.lua")),
    ("claim", include_str!("../../../lua/claim-2.lua")),
    ("complete", include_str!("../../../lua/complete-2.lua")),
    ("fail", include_str!("../../../lua/fail-2.lua")),
    ("renew", include_str!("../../../lua/renew-2.lua")),
    ("cancel", include_str!("../../../lua/cancel-2.lua")),
    ("delay", include_str!("../../../lua/delay-2.lua")),
    ("release", include_str!("../../../lua/release-2.lua")),
    ("recover", include_str!("../../../lua/recover-2.lua")),
    ("promote", include_str!("../../../lua/promote-2.lua")),
    ("reschedule", include_str!("../../../lua/reschedule-2.lua")),
    ("retry", include_str!("../../../lua/retry-2.lua")),
    ("priority", include_str!("../../../lua/priority-2.lua")),
    ("edit", include_str!("../../../lua/edit-2.lua")),
    ("logs", include_str!("../../../lua/logs-2.lua")),
    ("remove", include_str!("../../../lua/remove-2.lua")),
    ("pause", include_str!("../../../lua/pause-2.lua")),
    ("obliterate", include_str!("../../../lua/obliterate-2.lua")),
    ("settings", include_str!("../../../lua/settings-2.lua")),
    ("dedup", include_str!("../../../lua/dedup-2.lua")),
    (
        "complete_claim",
        include_str!("../../../lua/complete_claim-2.lua"),
    ),
    ("schedulers", include_str!("../../../lua/schedulers-2.lua")),
    ("flows", include_str!("../../../lua/flows-2.lua")),
    (
        "trim_events",
        include_str!("../../../lua/trim_events-2.lua"),
    ),
    ("orphans", include_str!("../../../lua/orphans-2.lua")),
    ("layout", include_str!("../../../lua/layout-2.lua")),
    (
        "publish_event",
        include_str!("../../../lua/publish_event-2.lua"),
    ),
    ("groups", include_str!("../../../lua/groups-2.lua")),
    ("search", include_str!("../../../lua/search-2.lua")),
    ("metrics", include_str!("../../../lua/metrics-2.lua")),
    ("workers", include_str!("../../../lua/workers-2.lua")),
];

/// The scripts that get keys of their own (two: `Keys::metrics`, `Keys::workers`) rather than
/// the queue's block: what the queue keeps for observation, called by `observe.rs` (named here
/// for the tests).
#[cfg(test)]
pub const OWN_KEYS: [&str; 2] = ["metrics", "workers"];

/// The file of a script under `lua/`.
#[cfg(test)]
fn file_name(op: &str) -> String {
    format!("{op}-2.lua")
}

fn load(op: &str) -> LuaScript {
    let body = OPS
        .iter()
        .find(|(name, _)| *name == op)
        .map(|(_, body)| *body)
        .expect("a script of OPS");
    let text = text(body);
    LuaScript {
        links: text.contains("block_base("),
        script: Script::new(&text),
        function: format!("{}_{op}", LIBRARY.name),
    }
}

/// Every script as the functions of one library (Redis 7 and Valkey 7.2 have them): its
/// helpers are made once, when it is loaded, instead of on every call (see `Prelude::library`).
pub struct Library {
    pub name: String,
    pub text: String,
}

/// Named by a hash of what it holds, so that two versions of lanemq sharing a server each
/// have their own (function names are global to the server, so they carry it too).
pub static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let hash = Script::new(&PRELUDE.library("lanemq", &OPS, RETURN_THROUGH))
        .get_hash()
        .to_owned();
    let name = format!("lanemq_{}", &hash[..12]);
    Library {
        text: PRELUDE.library(&name, &OPS, RETURN_THROUGH),
        name,
    }
});

pub static ADD: LazyLock<LuaScript> = LazyLock::new(|| load("add"));
pub static CLAIM: LazyLock<LuaScript> = LazyLock::new(|| load("claim"));
pub static COMPLETE: LazyLock<LuaScript> = LazyLock::new(|| load("complete"));
pub static FAIL: LazyLock<LuaScript> = LazyLock::new(|| load("fail"));
pub static RENEW: LazyLock<LuaScript> = LazyLock::new(|| load("renew"));
pub static CANCEL: LazyLock<LuaScript> = LazyLock::new(|| load("cancel"));
pub static DELAY: LazyLock<LuaScript> = LazyLock::new(|| load("delay"));
pub static RELEASE: LazyLock<LuaScript> = LazyLock::new(|| load("release"));
pub static RECOVER: LazyLock<LuaScript> = LazyLock::new(|| load("recover"));
pub static PROMOTE: LazyLock<LuaScript> = LazyLock::new(|| load("promote"));
pub static RESCHEDULE: LazyLock<LuaScript> = LazyLock::new(|| load("reschedule"));
pub static RETRY: LazyLock<LuaScript> = LazyLock::new(|| load("retry"));
pub static PRIORITY: LazyLock<LuaScript> = LazyLock::new(|| load("priority"));
pub static EDIT: LazyLock<LuaScript> = LazyLock::new(|| load("edit"));
pub static LOGS: LazyLock<LuaScript> = LazyLock::new(|| load("logs"));
pub static REMOVE: LazyLock<LuaScript> = LazyLock::new(|| load("remove"));
pub static PAUSE: LazyLock<LuaScript> = LazyLock::new(|| load("pause"));
pub static OBLITERATE: LazyLock<LuaScript> = LazyLock::new(|| load("obliterate"));
pub static TRIM_EVENTS: LazyLock<LuaScript> = LazyLock::new(|| load("trim_events"));
pub static SETTINGS: LazyLock<LuaScript> = LazyLock::new(|| load("settings"));
pub static DEDUP: LazyLock<LuaScript> = LazyLock::new(|| load("dedup"));
pub static COMPLETE_CLAIM: LazyLock<LuaScript> = LazyLock::new(|| load("complete_claim"));
pub static SCHEDULERS_OP: LazyLock<LuaScript> = LazyLock::new(|| load("schedulers"));
pub static FLOWS_OP: LazyLock<LuaScript> = LazyLock::new(|| load("flows"));
pub static ORPHANS: LazyLock<LuaScript> = LazyLock::new(|| load("orphans"));
pub static LAYOUT: LazyLock<LuaScript> = LazyLock::new(|| load("layout"));
pub static PUBLISH_EVENT: LazyLock<LuaScript> = LazyLock::new(|| load("publish_event"));
pub static GROUPS: LazyLock<LuaScript> = LazyLock::new(|| load("groups"));
pub static SEARCH: LazyLock<LuaScript> = LazyLock::new(|| load("search"));
pub static METRICS: LazyLock<LuaScript> = LazyLock::new(|| load("metrics"));
pub static WORKERS: LazyLock<LuaScript> = LazyLock::new(|| load("workers"));

#[cfg(test)]
mod restated;

#[cfg(test)]
mod tests {
    use super::*;

    fn script(name: &str) -> String {
        let path = format!(
            "{}/../../lua/{}",
            env!("CARGO_MANIFEST_DIR"),
            file_name(name)
        );
        text(&std::fs::read_to_string(path).unwrap())
    }

    #[test]
    fn scripts_with_keys_of_their_own_touch_no_key_of_the_block() {
        // `bind(0)` comes with them and names the block's keys, which they are not given: so
        // their bodies use KEYS alone, and reach no helper that writes a key of the block.
        for op in OWN_KEYS {
            let (_, body) = OPS.iter().find(|(name, _)| *name == op).unwrap();
            for name in ["META", "EVENTS", "MARKER", "F[", "F.", "emit("] {
                assert!(!body.contains(name), "{op} uses {name}");
            }
            let text = script(op);
            assert!(!text.contains("local function emit("), "{op}");
            assert!(!script(op).contains("block_base("), "{op}");
        }
        assert!(!METRICS.links && !WORKERS.links);
    }

    #[test]
    fn scripts_get_the_helpers_they_reach() {
        // Claims may produce a scheduler's next occurrence and finish flows' children.
        for name in ["claim", "complete_claim"] {
            let text = script(name);
            assert!(text.contains("\nscheduler_on_claim = function"), "{name}");
            assert!(text.contains("\nlocal scheduler_on_claim\n"), "{name}");
        }
        for name in [
            "complete",
            "complete_claim",
            "fail",
            "recover",
            "remove",
            "flows",
        ] {
            let text = script(name);
            assert!(text.contains("\nflow_on_finish = function"), "{name}");
            assert!(text.contains("\nneed_chain = function"), "{name}");
        }
        // Adding never finishes a job: no flows, no claims.
        let add = script("add");
        assert!(add.contains("local function create_jobs("));
        assert!(!add.contains("need_chain = function"));
        assert!(!add.contains("local function claim_jobs("));
        // A lock check needs none of the job helpers.
        let renew = script("renew");
        assert!(renew.contains("local function check_values("));
        assert!(!renew.contains("local function create_jobs("));
        // bind(0) comes with every script.
        assert!(renew.contains("\nbind(0)\n"));
    }

    #[test]
    fn the_library_resets_per_call_state_before_every_call() {
        let text = &LIBRARY.text;
        assert!(text.starts_with(&format!("#!lua name={}\n", LIBRARY.name)));
        let reset = text
            .split("local function reset(keys, args)\n")
            .nth(1)
            .and_then(|rest| rest.split("\nend\n").next())
            .expect("a reset function");
        // The keys, the clock, event ids and the flows' caches start afresh on every call.
        for line in [
            "bind(0)",
            "NOW, NOW_TEXT, MAX_EVENTS = tonumber(ARGV[1]), ARGV[1], ARGV[2]",
            "event_next, event_last = 1, 0",
            "home_queue = nil",
            "block_bases = nil",
            "bound_base = 0",
            "removed_children = {}",
        ] {
            assert!(reset.lines().any(|l| l.trim() == line), "{line}: {reset}");
        }
        // Constants are set once, and helpers declared ahead of use are never undone.
        assert!(text.contains("\nlocal LAYOUT = \"4\"\n"));
        for name in [
            "LAYOUT",
            "FIELDS",
            "need_chain",
            "flow_on_finish",
            "scheduler_on_claim",
        ] {
            assert!(
                !reset
                    .lines()
                    .any(|l| l.trim_start().starts_with(&format!("{name} ="))),
                "{name} is reset"
            );
        }
        // Every script is a function of it.
        for (op, _) in OPS {
            assert!(text.contains(&format!("'{}_{op}'", LIBRARY.name)), "{op}");
        }
        assert_eq!(ADD.function, format!("{}_add", LIBRARY.name));
    }

    #[test]
    fn the_library_functions_stay_within_the_lua_limit_of_locals() {
        // Lua 5.1 allows a function 200 active locals: the main chunk declares the helpers
        // above the nested ones, a function of its own the rest, and the scripts are fields
        // of a table (`Prelude::library`).
        let count = |text: &str| -> usize {
            text.lines()
                .filter_map(|line| line.strip_prefix("local "))
                .map(|rest| match rest.strip_prefix("function ") {
                    Some(_) => 1,
                    None => rest.split('=').next().unwrap().split(',').count(),
                })
                .sum()
        };
        let (main, nested) = LIBRARY.text.split_once("\n(function()\n").unwrap();
        let helpers = nested.split("\nlocal lanemq_ops = {}\n").next().unwrap();
        let (main, helpers) = (count(main), count(helpers));
        assert!(
            main + helpers > 150,
            "{main} + {helpers}: the helpers are counted"
        );
        assert!(main < 200 && helpers < 200, "{main} and {helpers} locals");
    }

    #[test]
    fn only_scripts_that_reach_other_queues_take_their_keys() {
        for script in [
            &*COMPLETE_CLAIM,
            &*FAIL,
            &*RECOVER,
            &*REMOVE,
            &*RETRY,
            &*OBLITERATE,
        ] {
            assert!(script.links);
        }
        for script in [&*CLAIM, &*RENEW, &*ADD, &*PROMOTE, &*SETTINGS] {
            assert!(!script.links);
        }
    }

    #[test]
    fn the_nested_function_stays_within_lua_limits() {
        // Its upvalues are at most the names defined above it: Lua 5.1 allows 60.
        let outer = PRELUDE.outer_names();
        assert!(
            outer.contains(&"JOB") && outer.contains(&"NOW"),
            "{outer:?}"
        );
        assert!(
            outer.len() < 60,
            "{} names above the nested function",
            outer.len()
        );
        for name in ["renew", "complete_claim"] {
            let text = script(name);
            assert!(text.contains("\nreturn (function()\n"), "{name}");
            assert!(text.ends_with("\nend)()\n"), "{name}");
        }
    }
}

/// Writes every composed script to `$LANEMQ_DUMP_SCRIPTS/<name>.lua`, the library to
/// `library.lua`, a queue's KEYS to `keys.txt` and default job options to `options.json`, for
/// profiling them outside
/// the client (benches/lua_cost.py): `LANEMQ_DUMP_SCRIPTS=/tmp/s cargo test -p lanemq-redis
/// dump_composed_scripts -- --ignored`.
#[cfg(test)]
#[test]
#[ignore]
fn dump_composed_scripts() {
    let dir = std::env::var("LANEMQ_DUMP_SCRIPTS").expect("LANEMQ_DUMP_SCRIPTS");
    std::fs::create_dir_all(&dir).unwrap();
    let lua = format!("{}/../../lua", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(lua).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name
            .strip_suffix("-2.lua")
            .or_else(|| name.strip_suffix("-2.lua"))
        {
            let body = std::fs::read_to_string(&path).unwrap();
            std::fs::write(format!("{dir}/{stem}.lua"), text(&body)).unwrap();
        }
    }
    std::fs::write(format!("{dir}/library.lua"), &LIBRARY.text).unwrap();
    // The KEYS a script of queue `bench` (prefix `lanemq`) gets, one per line.
    let keys = crate::keys::Keys::new("lanemq", "bench").script_keys();
    std::fs::write(format!("{dir}/keys.txt"), keys.join("\n") + "\n").unwrap();
    // The options JSON of a job added without options.
    let options = serde_json::to_string(&lanemq_core::jobs::JobOptions::default()).unwrap();
    std::fs::write(format!("{dir}/options.json"), options).unwrap();
}
