//! The Lua scripts, embedded at build time. Each is loaded with the shared helpers of
//! `lua/common.lua` in front of it (and those of `lua/jobs.lua` and `lua/flows.lua`, for
//! scripts that create, finish or remove jobs, and then `lua/schedulers.lua`, for those that claim or manage job
//! schedulers), so the helpers exist once in the source; redis-rs' `Script` calls it by SHA
//! (EVALSHA) and loads it again if the server answers NOSCRIPT. Scripts that need no job
//! helpers go without them: every helper defined costs each call a closure.

use std::sync::LazyLock;

use redis::Script;

const COMMON: &str = include_str!("../../../lua/common.lua");
const JOBS: &str = include_str!("../../../lua/jobs.lua");
const FLOWS: &str = include_str!("../../../lua/flows.lua");
const SCHEDULERS: &str = include_str!("../../../lua/schedulers.lua");

fn load(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{body}"))
}

fn load_with_jobs(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{JOBS}\n{FLOWS}\n{body}"))
}

/// For the scripts that claim (claim_jobs calls `scheduler_on_claim`, which `jobs.lua`
/// declares and `schedulers.lua` defines) or manage job schedulers.
fn load_with_schedulers(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{JOBS}\n{FLOWS}\n{SCHEDULERS}\n{body}"))
}

pub static ADD: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/add-36.lua")));
pub static CLAIM: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/claim-36.lua")));
pub static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/complete-36.lua")));
pub static FAIL: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/fail-36.lua")));
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/renew-36.lua")));
pub static DELAY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/delay-36.lua")));
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/release-36.lua")));
pub static RECOVER: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/recover-36.lua")));
pub static PROMOTE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/promote-36.lua")));
pub static RESCHEDULE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/reschedule-36.lua")));
pub static RETRY: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/retry-36.lua")));
pub static PRIORITY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/priority-36.lua")));
pub static EDIT: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/edit-36.lua")));
pub static LOGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/logs-36.lua")));
pub static REMOVE: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/remove-36.lua")));
pub static PAUSE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/pause-36.lua")));
pub static OBLITERATE: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/obliterate-36.lua")));
pub static SETTINGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/settings-36.lua")));
pub static DEDUP: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/dedup-36.lua")));
pub static COMPLETE_CLAIM: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/complete_claim-36.lua")));
pub static SCHEDULERS_OP: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/schedulers-36.lua")));
pub static FLOWS_OP: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/flows-36.lua")));
