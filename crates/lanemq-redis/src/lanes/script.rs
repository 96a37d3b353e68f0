//! The store's script: `lua/includes/lanes.lua` (its helpers) and
//! `lua/includes/lanes_claim.lua` (the dispatch) in front of `lua/lanes-1.lua` (the
//! operations), run by EVALSHA (redis-rs loads it again when the server answers NOSCRIPT). It
//! is not part of the jobs' FUNCTION library: the store is one script with one key, and
//! keeping it apart leaves the library's hash, so the jobs' scripts on a server, as they were.

use std::sync::LazyLock;

use lanemq_core::CoreError;

pub(super) static LANES: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(concat!(
        include_str!("../../../../lua/includes/lanes.lua"),
        include_str!("../../../../lua/includes/lanes_claim.lua"),
        include_str!("../../../../lua/lanes-1.lua"),
    ))
});

/// An optional argument as the script reads it: `-` for None, else `+` and the text.
pub(super) fn optional(value: Option<&str>) -> String {
    match value {
        Some(text) => format!("+{text}"),
        None => "-".to_owned(),
    }
}

/// The refusal a script error stands for (`LANEMQ_...` codes, see `lua/lanes-1.lua`), if it is
/// one; else None (a server or connection error, the caller's to map).
pub(super) fn refusal(error: &redis::RedisError) -> Option<CoreError> {
    let detail = error.detail().unwrap_or_default();
    // (the server appends " script: <sha>, on @user_script:<line>." to the script's text)
    let detail = detail.split(" script: ").next().unwrap_or_default();
    match error.code()? {
        "LANEMQ_BAD_LANE" => {
            let (lane, count) = detail.split_once(' ').unwrap_or((detail, "?"));
            Some(CoreError::InvalidConfig(format!(
                "invalid lane: {lane} (the store has {count} lanes, numbered from 0)"
            )))
        }
        "LANEMQ_NO_LANES" => Some(CoreError::InvalidConfig(format!(
            "the shared lanes' store: {detail}"
        ))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_arguments_keep_their_text() {
        assert_eq!(optional(None), "-");
        assert_eq!(optional(Some("")), "+");
        assert_eq!(optional(Some("-")), "+-");
    }
}
