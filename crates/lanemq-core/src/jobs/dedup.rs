//! Deduplication decisions, shared by the backends so that they decide alike: what an add, a
//! finish, a manual retry or a removal does to a dedup key. These are pure functions of what the
//! backend read; what they decide is written by `lifecycle::dedup` for the in-process stores
//! (once, over their `DedupTable`s) and by the Lua scripts for Redis.
//!
//! A key maps a dedup id to the job holding it (its owner), with an optional expiry and, in
//! keep_last mode, the latest duplicate that arrived while the owner was active (its "next").

use super::model::{JobState, Millis};
use super::options::Dedup;

/// What a backend knows of a key when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyView<'a> {
    pub owner: &'a str,
    pub expires_at: Option<Millis>,
    /// The owner's state; `None` when the owner no longer exists.
    pub owner_state: Option<JobState>,
    /// A keep_last duplicate is stored on the key.
    pub has_next: bool,
}

impl KeyView<'_> {
    pub fn expired(&self, now: Millis) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// Whether the key turns adds away: with an expiry, until then whatever the owner's state
    /// (throttle); without, while the owner has not finished. Either way only while the owner
    /// exists: a duplicate add returns the owner, so a job that is gone (removed by retention,
    /// say) holds nothing.
    pub fn is_held(&self, now: Millis) -> bool {
        match (self.expires_at, self.owner_state) {
            (_, None) => false,
            (Some(at), Some(_)) => now < at,
            (None, Some(state)) => !state.is_finished(),
        }
    }

    /// Whether the key still means anything (held, or carrying a next job). A key that does not
    /// is as good as absent: every decision treats it so, and a backend may delete it any time.
    pub fn is_live(&self, now: Millis) -> bool {
        self.is_held(now) || self.has_next
    }
}

/// When a key set now for `dedup` expires.
pub fn expiry(dedup: &Dedup, now: Millis) -> Option<Millis> {
    dedup.ttl.map(|ttl| now.saturating_add(ttl))
}

/// What an add with `dedup` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnAdd {
    /// The key is not held: add the job; the key now points at it, expiring at `expires_at`,
    /// and carries no next job.
    Create { expires_at: Option<Millis> },
    /// The key is held: add nothing and return the owner (emitting `deduplicated` and
    /// `debounced` on it). The key's expiry becomes `expires_at`; with `store`, this add
    /// becomes the key's next job (replacing an earlier one).
    Duplicate {
        expires_at: Option<Millis>,
        store: bool,
    },
    /// The key is held by a delayed owner and `replace` is set: remove the owner (a `removed`
    /// event), add the job, and point the key at it, expiring at `expires_at`.
    Replace { expires_at: Option<Millis> },
}

pub fn on_add(dedup: &Dedup, key: Option<&KeyView<'_>>, now: Millis) -> OnAdd {
    let fresh = expiry(dedup, now);
    let Some(key) = key.filter(|k| k.is_held(now)) else {
        return OnAdd::Create { expires_at: fresh };
    };
    // `extend` needs a ttl (validated), so an extended expiry is never `None`.
    let kept_or_extended = if dedup.extend { fresh } else { key.expires_at };
    match key.owner_state {
        Some(JobState::Delayed) if dedup.replace => OnAdd::Replace {
            expires_at: kept_or_extended.or(fresh),
        },
        Some(JobState::Active) if dedup.keep_last => OnAdd::Duplicate {
            expires_at: kept_or_extended,
            store: true,
        },
        _ => OnAdd::Duplicate {
            expires_at: kept_or_extended,
            store: false,
        },
    }
}

/// What producing a job scheduler's occurrence with (keep_last) `dedup` does: as an add, but a
/// held key keeps the occurrence as its next job whatever the owner's state, not only while it
/// is active. An occurrence turned away would stop its schedule (the next one is produced when
/// it starts); kept, it is added once the owner finishes, and the schedule goes on from it.
pub fn on_add_occurrence(dedup: &Dedup, key: Option<&KeyView<'_>>, now: Millis) -> OnAdd {
    match on_add(dedup, key, now) {
        OnAdd::Duplicate { expires_at, .. } => OnAdd::Duplicate {
            expires_at,
            store: true,
        },
        other => other,
    }
}

/// What finishing a job (completed, or failed for good) does to its dedup key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFinish {
    /// Nothing: the key belongs to another job, or its ttl still runs (throttle).
    Keep,
    /// Delete the key.
    Release,
    /// Add the key's next job (its delay counted from now); the key points at it, expiring
    /// as its own dedup options say (`expiry`), and carries no next job any more.
    Requeue,
}

pub fn on_finish(job_id: &str, key: Option<&KeyView<'_>>, now: Millis) -> OnFinish {
    match key {
        Some(key) if key.owner == job_id => {
            if key.has_next {
                OnFinish::Requeue
            } else if key.expires_at.is_some_and(|at| now < at) {
                OnFinish::Keep
            } else {
                OnFinish::Release
            }
        }
        _ => OnFinish::Keep,
    }
}

/// Whether removing the job (remove, clean, drain) deletes the key: only its own.
pub fn released_by_removal(job_id: &str, key: Option<&KeyView<'_>>) -> bool {
    key.is_some_and(|k| k.owner == job_id)
}

/// What a manual retry of a finished job with `dedup` does to the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnRetry {
    /// The key is free (absent, expired, or its owner finished or gone) or already this job's:
    /// the job takes it, expiring at `expires_at`, with no next job.
    Reclaim { expires_at: Option<Millis> },
    /// Another unfinished job holds the key: the retry is refused and nothing changes.
    Refuse { holder: String },
}

pub fn on_retry(dedup: &Dedup, job_id: &str, key: Option<&KeyView<'_>>, now: Millis) -> OnRetry {
    match key {
        Some(k)
            if k.owner != job_id
                && !k.expired(now)
                && k.owner_state.is_some_and(|s| !s.is_finished()) =>
        {
            OnRetry::Refuse {
                holder: k.owner.to_owned(),
            }
        }
        _ => OnRetry::Reclaim {
            expires_at: expiry(dedup, now),
        },
    }
}

/// The refusal of a manual retry (the same words on every backend).
pub fn retry_refused(job_id: &str, dedup_id: &str, holder: &str) -> crate::CoreError {
    crate::CoreError::Refused(format!(
        "job {job_id:?} cannot be retried: its dedup id {dedup_id:?} is held by job {holder:?}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 10_000;

    fn key(expires_at: Option<Millis>, owner_state: Option<JobState>) -> KeyView<'static> {
        KeyView {
            owner: "1",
            expires_at,
            owner_state,
            has_next: false,
        }
    }

    fn dedup(ttl: Option<Millis>) -> Dedup {
        Dedup {
            ttl,
            ..Dedup::simple("d")
        }
    }

    #[test]
    fn held_without_ttl_while_the_owner_is_unfinished() {
        for state in [JobState::Waiting, JobState::Delayed, JobState::Active] {
            assert!(key(None, Some(state)).is_held(NOW), "{state:?}");
        }
        for state in [Some(JobState::Completed), Some(JobState::Failed), None] {
            assert!(!key(None, state).is_held(NOW), "{state:?}");
        }
    }

    #[test]
    fn held_with_ttl_until_expiry_whatever_the_owner() {
        let finished = key(Some(NOW + 1), Some(JobState::Completed));
        assert!(finished.is_held(NOW));
        assert!(!key(Some(NOW), Some(JobState::Active)).is_held(NOW));
        assert!(!key(Some(NOW - 1), None).is_held(NOW));
        assert!(
            !key(Some(NOW + 1), None).is_held(NOW),
            "a gone owner holds nothing"
        );
        let stored = KeyView {
            has_next: true,
            ..key(Some(NOW - 1), Some(JobState::Active))
        };
        assert!(!stored.is_held(NOW) && stored.is_live(NOW));
    }

    #[test]
    fn add_creates_when_not_held_and_sets_the_ttl() {
        assert_eq!(
            on_add(&dedup(None), None, NOW),
            OnAdd::Create { expires_at: None }
        );
        let done = key(None, Some(JobState::Completed));
        assert_eq!(
            on_add(&dedup(Some(500)), Some(&done), NOW),
            OnAdd::Create {
                expires_at: Some(NOW + 500)
            }
        );
        let expired = key(Some(NOW), Some(JobState::Waiting));
        assert!(matches!(
            on_add(&dedup(None), Some(&expired), NOW),
            OnAdd::Create { .. }
        ));
    }

    #[test]
    fn duplicates_keep_or_extend_the_expiry() {
        let held = key(Some(NOW + 100), Some(JobState::Waiting));
        assert_eq!(
            on_add(&dedup(Some(500)), Some(&held), NOW),
            OnAdd::Duplicate {
                expires_at: Some(NOW + 100),
                store: false
            }
        );
        let extend = Dedup {
            extend: true,
            ..dedup(Some(500))
        };
        assert_eq!(
            on_add(&extend, Some(&held), NOW),
            OnAdd::Duplicate {
                expires_at: Some(NOW + 500),
                store: false
            }
        );
    }

    #[test]
    fn replace_only_a_delayed_owner() {
        let replace = Dedup {
            replace: true,
            ..dedup(Some(500))
        };
        let delayed = key(Some(NOW + 100), Some(JobState::Delayed));
        assert_eq!(
            on_add(&replace, Some(&delayed), NOW),
            OnAdd::Replace {
                expires_at: Some(NOW + 100)
            }
        );
        let extend = Dedup {
            extend: true,
            ..replace.clone()
        };
        assert_eq!(
            on_add(&extend, Some(&delayed), NOW),
            OnAdd::Replace {
                expires_at: Some(NOW + 500)
            }
        );
        let waiting = key(Some(NOW + 100), Some(JobState::Waiting));
        assert!(matches!(
            on_add(&replace, Some(&waiting), NOW),
            OnAdd::Duplicate { store: false, .. }
        ));
    }

    #[test]
    fn keep_last_stores_only_while_the_owner_is_active() {
        let keep = Dedup {
            keep_last: true,
            ..dedup(None)
        };
        let active = key(None, Some(JobState::Active));
        assert_eq!(
            on_add(&keep, Some(&active), NOW),
            OnAdd::Duplicate {
                expires_at: None,
                store: true
            }
        );
        for state in [JobState::Waiting, JobState::Delayed] {
            assert!(matches!(
                on_add(&keep, Some(&key(None, Some(state))), NOW),
                OnAdd::Duplicate { store: false, .. }
            ));
        }
    }

    #[test]
    fn an_occurrence_is_kept_whatever_the_owner_state() {
        let keep = Dedup {
            keep_last: true,
            ..dedup(None)
        };
        for state in [JobState::Waiting, JobState::Delayed, JobState::Active] {
            assert_eq!(
                on_add_occurrence(&keep, Some(&key(None, Some(state))), NOW),
                OnAdd::Duplicate {
                    expires_at: None,
                    store: true
                },
                "{state:?}"
            );
        }
        let done = key(None, Some(JobState::Completed));
        assert_eq!(
            on_add_occurrence(&keep, Some(&done), NOW),
            OnAdd::Create { expires_at: None }
        );
    }

    #[test]
    fn finishing_releases_requeues_or_keeps() {
        let own = key(None, Some(JobState::Completed));
        assert_eq!(on_finish("1", Some(&own), NOW), OnFinish::Release);
        assert_eq!(on_finish("2", Some(&own), NOW), OnFinish::Keep);
        assert_eq!(on_finish("1", None, NOW), OnFinish::Keep);
        let throttled = key(Some(NOW + 1), Some(JobState::Completed));
        assert_eq!(on_finish("1", Some(&throttled), NOW), OnFinish::Keep);
        let stored = KeyView {
            has_next: true,
            ..throttled
        };
        assert_eq!(on_finish("1", Some(&stored), NOW), OnFinish::Requeue);
    }

    #[test]
    fn retry_reclaims_a_free_key_and_refuses_a_held_one() {
        let d = dedup(Some(500));
        let reclaim = OnRetry::Reclaim {
            expires_at: Some(NOW + 500),
        };
        assert_eq!(on_retry(&d, "9", None, NOW), reclaim);
        for free in [
            key(Some(NOW), Some(JobState::Active)),
            key(Some(NOW + 1), Some(JobState::Failed)),
            key(None, None),
        ] {
            assert_eq!(on_retry(&d, "9", Some(&free), NOW), reclaim, "{free:?}");
        }
        let own = key(Some(NOW + 1), Some(JobState::Failed));
        assert_eq!(on_retry(&d, "1", Some(&own), NOW), reclaim);
        let live = key(Some(NOW + 1), Some(JobState::Waiting));
        assert_eq!(
            on_retry(&d, "9", Some(&live), NOW),
            OnRetry::Refuse { holder: "1".into() }
        );
    }

    #[test]
    fn removal_releases_only_the_owners_key() {
        let k = key(None, Some(JobState::Waiting));
        assert!(released_by_removal("1", Some(&k)));
        assert!(!released_by_removal("2", Some(&k)));
        assert!(!released_by_removal("1", None));
    }
}
