//! The registry of running workers: each heartbeats its description (JSON that the bindings
//! write and read; the backends keep it as text) with a time to live, and a worker not heard
//! from within its ttl is dropped by the next read. The rules are here once for every backend.

use crate::error::{CoreError, CoreResult};
use crate::jobs::model::Millis;

/// A worker as the registry holds it: its id, its description (JSON text) and when it last
/// heartbeated (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerEntry {
    pub id: String,
    pub info: String,
    pub last_heartbeat: Millis,
}

/// Checks a heartbeat (a non-empty id, a ttl of at least 1 ms) and returns when the entry
/// expires: it is kept while `now < expires`.
pub fn heartbeat_expiry(id: &str, ttl: Millis, now: Millis) -> CoreResult<Millis> {
    if id.is_empty() {
        return Err(CoreError::InvalidConfig(
            "invalid worker id: \"\" (must not be empty)".into(),
        ));
    }
    if ttl == 0 {
        return Err(CoreError::InvalidConfig(
            "invalid ttl: 0 ms (must be at least 1 ms)".into(),
        ));
    }
    Ok(now.saturating_add(ttl))
}

/// Whether an entry that expires at `expires` is gone at `now`.
pub fn expired(expires: Millis, now: Millis) -> bool {
    expires <= now
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_lives_for_its_ttl() {
        let expires = heartbeat_expiry("w", 15_000, 1_000).unwrap();
        assert!(!expired(expires, 15_999));
        assert!(expired(expires, 16_000));
        assert!(heartbeat_expiry("", 1, 0).is_err());
        assert!(heartbeat_expiry("w", 0, 0).is_err());
    }
}
