//! A child's link to its parent, as a job's options carry it: the parent (`ParentRef`) and what
//! the child's failure does to it (`ParentPolicy`). The options hold these, and the flow
//! decisions (`flow`) act on them, so they sit below both and use neither.

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, CoreResult};

/// A child's parent: its queue (of the same backend or group) and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ParentRef {
    pub queue: String,
    pub id: String,
}

impl ParentRef {
    /// The parent's key, `<queue>:<id>`.
    pub fn key(&self) -> String {
        child_key(&self.queue, &self.id)
    }
}

/// The key of a job in a flow: `<queue>:<id>`.
pub fn child_key(queue: &str, id: &str) -> String {
    format!("{queue}:{id}")
}

/// What a child's terminal failure does to its parent (BullMQ's four options, and BullMQ's
/// default as `KeepParentWaiting`; at most one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParentPolicy {
    /// The parent fails (the default): `child <id> failed: <reason>`, and so on up the tree.
    FailParentOnFailure,
    /// The failure is recorded as ignored (reason kept) and counts as done.
    IgnoreDependencyOnFailure,
    /// The child is dropped from the parent's dependencies and counts as done.
    RemoveDependencyOnFailure,
    /// The failure is recorded as ignored (reason kept) and the parent is released at once.
    ContinueParentOnFailure,
    /// BullMQ's default: the parent keeps waiting for the child (still unprocessed), which a
    /// retry may complete; a child that its own `remove_on_fail` removes at once lets go.
    KeepParentWaiting,
}

impl ParentPolicy {
    /// BullMQ's four flags' policies come first, in the flags' order (`from_options`).
    pub const ALL: [ParentPolicy; 5] = [
        ParentPolicy::FailParentOnFailure,
        ParentPolicy::IgnoreDependencyOnFailure,
        ParentPolicy::RemoveDependencyOnFailure,
        ParentPolicy::ContinueParentOnFailure,
        ParentPolicy::KeepParentWaiting,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ParentPolicy::FailParentOnFailure => "fail_parent_on_failure",
            ParentPolicy::IgnoreDependencyOnFailure => "ignore_dependency_on_failure",
            ParentPolicy::RemoveDependencyOnFailure => "remove_dependency_on_failure",
            ParentPolicy::ContinueParentOnFailure => "continue_parent_on_failure",
            ParentPolicy::KeepParentWaiting => "keep_parent_waiting",
        }
    }

    pub fn parse(name: &str) -> CoreResult<Self> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .ok_or_else(|| {
                CoreError::InvalidConfig(format!(
                    "invalid parent_policy: {name:?} (policies: fail_parent_on_failure, \
                     ignore_dependency_on_failure, remove_dependency_on_failure, \
                     continue_parent_on_failure, keep_parent_waiting)"
                ))
            })
    }

    /// The policy from a name and/or BullMQ's four flags (in `ALL`'s order); more than one is
    /// refused.
    pub fn from_options(name: Option<&str>, flags: [bool; 4]) -> CoreResult<Option<Self>> {
        let mut chosen: Vec<ParentPolicy> =
            name.map(Self::parse).transpose()?.into_iter().collect();
        for (policy, set) in Self::ALL.into_iter().zip(flags) {
            if set && !chosen.contains(&policy) {
                chosen.push(policy);
            }
        }
        match chosen.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            many => Err(CoreError::InvalidConfig(format!(
                "invalid parent policy: {} together (choose at most one)",
                many.iter()
                    .map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join(" and ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_and_flags() {
        for p in ParentPolicy::ALL {
            assert_eq!(ParentPolicy::parse(p.as_str()).unwrap(), p);
        }
        assert!(ParentPolicy::parse("bogus")
            .unwrap_err()
            .to_string()
            .contains("\"bogus\""));
        assert_eq!(ParentPolicy::from_options(None, [false; 4]).unwrap(), None);
        assert_eq!(
            ParentPolicy::from_options(None, [false, true, false, false]).unwrap(),
            Some(ParentPolicy::IgnoreDependencyOnFailure)
        );
        assert_eq!(
            ParentPolicy::from_options(
                Some("continue_parent_on_failure"),
                [false, false, false, true]
            )
            .unwrap(),
            Some(ParentPolicy::ContinueParentOnFailure)
        );
        let err = ParentPolicy::from_options(None, [true, true, false, false])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fail_parent_on_failure and ignore_dependency_on_failure"),
            "{err}"
        );
        let json = serde_json::to_string(&ParentPolicy::RemoveDependencyOnFailure).unwrap();
        assert_eq!(json, "\"remove_dependency_on_failure\"");
    }
}
