//! A team's controls combined with each set of groups its callers come with,
//! compiled once per set and kept until the team's controls change (a new
//! `CompiledTeam` starts with an empty cache), so a caller in five groups decides
//! at the cost of a caller in none.

use super::{CompiledTeam, OrgGroups};
use crate::policy::PolicyError;
use crate::policy::group_set::GroupSet;
use crate::policy::groups::GroupedAdmin;
use arc_swap::ArcSwap;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Most sets of groups kept per team: past it the cache starts again, so callers
/// naming ever new sets cannot grow memory without bound.
pub const MAX_CACHED_GROUP_SETS: usize = 1_024;

/// The compiled combinations of one version of a team's controls. Read without a
/// lock on every decision of a caller in a group; replaced whole on a miss (rare:
/// once per set of groups, team version and organisation revision).
#[derive(Debug, Default)]
pub struct GroupCache(ArcSwap<Combinations>);

/// The combinations made with one revision of the organisation's group policies
/// (a newer one starts the cache again).
#[derive(Debug, Default, Clone)]
struct Combinations {
    made_with: u64,
    /// By the caller's whole set: found by the set's hash and, for one
    /// credential, its pointer. None when no group of the set has a policy.
    by_caller: FxHashMap<GroupSet, Option<Arc<GroupedAdmin>>>,
    /// By the groups of a set that have a policy, so callers differing only in
    /// groups without one share a combination (keyed by names admins gave
    /// policies: no member chooses them).
    by_saying: FxHashMap<Vec<String>, Arc<GroupedAdmin>>,
}

impl CompiledTeam {
    /// The team's controls for a caller in `groups` under the team's and the
    /// organisation's (`org`) group policies; None when none of them has a policy
    /// in either (the team's own controls decide). A combination that does not
    /// compile is an error, never the team's controls without the groups' denies.
    pub fn for_groups(
        &self,
        org: &OrgGroups,
        groups: &GroupSet,
    ) -> Result<Option<Arc<GroupedAdmin>>, PolicyError> {
        if groups.is_empty() {
            return Ok(None);
        }
        {
            let made = self.groups.0.load();
            if made.made_with == org.revision
                && let Some(hit) = made.by_caller.get(groups)
            {
                return Ok(hit.clone());
            }
        }
        self.combine(org, groups)
    }

    /// A set not seen since the team's or the organisation's last change: its
    /// combination made (or shared with a set that has the same groups with a
    /// policy) and kept.
    fn combine(
        &self,
        org: &OrgGroups,
        groups: &GroupSet,
    ) -> Result<Option<Arc<GroupedAdmin>>, PolicyError> {
        let policies = &self.admin.switches().groups;
        let saying: Vec<String> = groups
            .iter()
            .filter(|g| policies.contains_key(g.as_str()) || org.policies.contains_key(g.as_str()))
            .cloned()
            .collect();
        let made = self.groups.0.load();
        let current = made.made_with == org.revision;
        let grouped = match current.then(|| made.by_saying.get(&saying)).flatten() {
            _ if saying.is_empty() => None,
            Some(shared) => Some(shared.clone()),
            None => Some(Arc::new(GroupedAdmin::compile_in(
                &self.admin.document(),
                &org.policies,
                &saying,
            )?)),
        };
        drop(made);
        self.groups.0.rcu(|made| {
            let mut next =
                if made.made_with == org.revision && made.by_caller.len() < MAX_CACHED_GROUP_SETS {
                    Combinations::clone(made)
                } else {
                    Combinations {
                        made_with: org.revision,
                        ..Combinations::default()
                    }
                };
            next.by_caller.insert(groups.clone(), grouped.clone());
            if let Some(g) = &grouped {
                next.by_saying.insert(saying.clone(), g.clone());
            }
            next
        });
        Ok(grouped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::groups::GroupControls;
    use crate::policy::{AdminControls, CompiledAdmin};

    fn team() -> CompiledTeam {
        let group = |word: &str| GroupControls {
            denied: vec![word.to_owned()],
            ..GroupControls::default()
        };
        let controls = AdminControls {
            enabled: true,
            groups: Box::new(
                [("g1", "deploy"), ("g2", "publish")]
                    .map(|(g, w)| (g.to_owned(), group(w)))
                    .into_iter()
                    .collect(),
            ),
            ..AdminControls::default()
        };
        CompiledTeam {
            admin: CompiledAdmin::compile(&controls).unwrap(),
            default_user: None,
            groups: GroupCache::default(),
        }
    }

    fn names(groups: &[&str]) -> GroupSet {
        GroupSet::new(groups.iter().map(|g| (*g).to_owned()).collect())
    }

    #[test]
    fn callers_differing_only_in_groups_without_a_policy_share_one_combination() {
        let team = team();
        let org = OrgGroups::default();
        let plain = team
            .for_groups(&org, &names(&["g1", "g2"]))
            .unwrap()
            .unwrap();
        let mixed = team
            .for_groups(&org, &names(&["g0", "g1", "g2", "g9"]))
            .unwrap()
            .unwrap();
        assert!(Arc::ptr_eq(&plain, &mixed), "one entry for both");
        let one = team
            .for_groups(&org, &names(&["g1", "g9"]))
            .unwrap()
            .unwrap();
        assert!(!Arc::ptr_eq(&plain, &one), "g1 alone is another set");
        assert!(
            team.for_groups(&org, &names(&["g0", "g9"]))
                .unwrap()
                .is_none()
        );
        assert!(team.for_groups(&org, GroupSet::empty()).unwrap().is_none());
        let made = team.groups.0.load();
        assert_eq!(made.by_saying.len(), 2, "two sets of groups with a policy");
        assert_eq!(made.by_caller.len(), 4, "four callers' sets");
        // found again, for the same set and an equal one
        let again = team
            .for_groups(&org, &names(&["g2", "g1"]))
            .unwrap()
            .unwrap();
        assert!(Arc::ptr_eq(&plain, &again));
    }
}
