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
