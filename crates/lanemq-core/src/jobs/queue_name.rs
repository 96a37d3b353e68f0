//! The one rule for queue names, the same on every backend: 1 to `MAX_QUEUE_NAME` characters
//! from `[A-Za-z0-9._-]`, not starting with `.`. A name that a backend could not hold the
//! same way everywhere (a file name with `/` or `..`, a Redis key with `:`, the key delimiter
//! BullMQ 5+ refuses too, or `{}`, which would change the hash tag) never gets in.

use crate::error::{CoreError, CoreResult};

/// The longest queue name, in characters.
pub const MAX_QUEUE_NAME: usize = 200;

/// The rule, as the refusal states it.
pub const QUEUE_NAME_RULE: &str =
    "a queue name is 1-200 characters from A-Z, a-z, 0-9, '.', '_' and '-', not starting with '.'";

/// Whether `name` follows the rule.
pub fn is_queue_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_QUEUE_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `ConfigError` naming `name` and the rule, unless `name` follows it.
pub fn check_queue_name(name: &str) -> CoreResult<()> {
    if is_queue_name(name) {
        return Ok(());
    }
    Err(CoreError::InvalidConfig(format!(
        "invalid queue name: {name:?} ({QUEUE_NAME_RULE})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_rule_and_refuses_the_rest() {
        for good in [
            "a",
            "emails",
            "conformance-12",
            "a.b_c-D9",
            "x..y",
            &"a".repeat(200),
        ] {
            assert!(is_queue_name(good), "{good:?}");
        }
        let long = "a".repeat(201);
        for bad in [
            "", ".", "..", ".x", "a/b", "x:y", "a b", "a\tb", "*", "{tag}", "é", "a\0", &long,
        ] {
            assert!(check_queue_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_refusal_names_the_name_and_the_rule() {
        let message = check_queue_name("x:y").unwrap_err().to_string();
        assert!(message.contains("\"x:y\""), "{message}");
        assert!(message.contains("1-200 characters"), "{message}");
    }
}
