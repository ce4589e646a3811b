//! The organisation's group policies: kept once, as the document of the reserved
//! team [`ORG_TEAM`], and combined into every team's view. The hub holds them beside
//! the teams (the reserved team is never let go, so every replica follows its
//! changes) and tells every team's subscribers which groups' policies changed.

use super::{Hub, HubError};
use crate::auth::ORG_TEAM;
use crate::policy::groups::GroupPolicies;
use crate::store::StoreError;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The organisation's group policies as this replica last applied them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct OrgGroups {
    /// The revision of the organisation's document they were read at (0: never written).
    pub revision: u64,
    pub policies: GroupPolicies,
}

impl Hub {
    /// The organisation's group policies in force here, read from the store on first
    /// use. An error while they cannot be read: a view without them would lack their
    /// denies.
    pub async fn org_groups(&self) -> Result<Arc<OrgGroups>, HubError> {
        if let Some(org) = self.org.load_full() {
            return Ok(org);
        }
        // loading the reserved team sets them (`set_org`)
        self.team(ORG_TEAM).await?;
        self.org.load_full().ok_or_else(|| {
            HubError::Store(StoreError::Unavailable(
                "the organisation's group policies are not read yet: retry".into(),
            ))
        })
    }

    /// Holds the organisation's policies read at `revision` (a read older than the
    /// one held changes nothing), and tells every team's subscribers the groups
    /// whose policy was added, changed or removed.
    pub(super) fn set_org(&self, revision: u64, policies: &GroupPolicies) {
        let _one_at_a_time = self
            .org_writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let held = self.org.load_full();
        if held.as_ref().is_some_and(|h| h.revision >= revision) {
            return;
        }
        let changed = held.map(|h| changed_groups(&h.policies, policies));
        self.org.store(Some(Arc::new(OrgGroups {
            revision,
            policies: policies.clone(),
        })));
        // the first read: no view was made without them, so nobody is told
        let Some(changed) = changed.filter(|c| !c.is_empty()) else {
            return;
        };
        let changed = Arc::new(changed);
        for team in &self.teams {
            if team.key() != ORG_TEAM {
                team.groups_changed(&changed);
            }
        }
    }
}

/// The groups whose policy differs between `before` and `after`.
fn changed_groups(before: &GroupPolicies, after: &GroupPolicies) -> BTreeSet<String> {
    before
        .keys()
        .chain(after.keys())
        .filter(|name| before.get(*name) != after.get(*name))
        .cloned()
        .collect()
}
