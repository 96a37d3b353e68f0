//! The Lua scripts, embedded at build time. Each is loaded with the shared helpers of
//! `lua/common.lua` in front of it (and those of `lua/jobs.lua`, for scripts that create,
//! finish or remove jobs, and then `lua/schedulers.lua`, for those that claim or manage job
//! schedulers), so the helpers exist once in the source; redis-rs' `Script` calls it by SHA
//! (EVALSHA) and loads it again if the server answers NOSCRIPT. Scripts that need no job
//! helpers go without them: every helper defined costs each call a closure.

use std::sync::LazyLock;

use redis::Script;

const COMMON: &str = include_str!("../../../lua/common.lua");
const JOBS: &str = include_str!("../../../lua/jobs.lua");
const SCHEDULERS: &str = include_str!("../../../lua/schedulers.lua");

fn load(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{body}"))
}

fn load_with_jobs(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{JOBS}\n{body}"))
}

/// For the scripts that claim (claim_jobs calls `scheduler_on_claim`, which `jobs.lua`
/// declares and `schedulers.lua` defines) or manage job schedulers.
fn load_with_schedulers(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{JOBS}\n{SCHEDULERS}\n{body}"))
}

pub static ADD: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/add-34.lua")));
pub static CLAIM: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/claim-34.lua")));
pub static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/complete-34.lua")));
pub static FAIL: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/fail-34.lua")));
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/renew-34.lua")));
pub static DELAY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/delay-34.lua")));
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/release-34.lua")));
pub static RECOVER: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/recover-34.lua")));
pub static PROMOTE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/promote-34.lua")));
pub static RESCHEDULE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/reschedule-34.lua")));
pub static RETRY: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/retry-34.lua")));
pub static PRIORITY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/priority-34.lua")));
pub static EDIT: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/edit-34.lua")));
pub static LOGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/logs-34.lua")));
pub static REMOVE: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/remove-34.lua")));
pub static PAUSE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/pause-34.lua")));
pub static OBLITERATE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/obliterate-34.lua")));
pub static SETTINGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/settings-34.lua")));
pub static DEDUP: LazyLock<Script> =
    LazyLock::new(|| load_with_jobs(include_str!("../../../lua/dedup-34.lua")));
pub static COMPLETE_CLAIM: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/complete_claim-34.lua")));
pub static SCHEDULERS_OP: LazyLock<Script> =
    LazyLock::new(|| load_with_schedulers(include_str!("../../../lua/schedulers-34.lua")));
