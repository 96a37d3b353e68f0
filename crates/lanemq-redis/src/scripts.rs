//! The Lua scripts, embedded at build time. Each is loaded with the shared helpers of
//! `lua/common.lua` in front of it, so the helpers exist once in the source; redis-rs' `Script`
//! calls it by SHA (EVALSHA) and loads it again if the server answers NOSCRIPT.

use std::sync::LazyLock;

use redis::Script;

const COMMON: &str = include_str!("../../../lua/common.lua");

fn load(body: &str) -> Script {
    Script::new(&format!("{COMMON}\n{body}"))
}

pub static ADD: LazyLock<Script> = LazyLock::new(|| load(include_str!("../../../lua/add-30.lua")));
pub static CLAIM: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/claim-30.lua")));
pub static COMPLETE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/complete-30.lua")));
pub static FAIL: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/fail-30.lua")));
pub static RENEW: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/renew-30.lua")));
pub static DELAY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/delay-30.lua")));
pub static RELEASE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/release-30.lua")));
pub static RECOVER: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/recover-30.lua")));
pub static PROMOTE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/promote-30.lua")));
pub static RESCHEDULE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/reschedule-30.lua")));
pub static RETRY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/retry-30.lua")));
pub static PRIORITY: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/priority-30.lua")));
pub static EDIT: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/edit-30.lua")));
pub static LOGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/logs-30.lua")));
pub static REMOVE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/remove-30.lua")));
pub static PAUSE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/pause-30.lua")));
pub static OBLITERATE: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/obliterate-30.lua")));
pub static SETTINGS: LazyLock<Script> =
    LazyLock::new(|| load(include_str!("../../../lua/settings-30.lua")));
