//! A team's controls combined with each set of groups its callers come with,
//! compiled once per set and kept until the team's controls change (a new
//! `CompiledTeam` starts with an empty cache), so a caller in five groups decides
//! at the cost of a caller in none.

use super::{CompiledTeam, OrgGroups};
use crate::policy::PolicyError;
use crate::policy::groups::GroupedAdmin;
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

/// Most sets of groups kept per team: past it the cache starts again, so callers
/// naming ever new sets cannot grow memory without bound.
pub const MAX_CACHED_GROUP_SETS: usize = 1_024;

/// The compiled combinations of one version of a team's controls, by set of groups
/// with a policy in the team or the organisation, for the organisation's revision
/// they were made with (a newer one starts the cache again).
#[derive(Debug, Default)]
pub struct GroupCache(Mutex<(u64, GroupSets)>);

/// Compiled combinations by the set of groups that say something (hashed on every
/// decision of a caller in a group, and keyed by names the team's admins chose).
type GroupSets = FxHashMap<Vec<String>, Arc<GroupedAdmin>>;

impl CompiledTeam {
    /// The team's controls for a caller in `groups` (sorted, each once, as a
    /// principal carries them) under the team's and the organisation's (`org`)
    /// group policies; None when none of them has a policy in either (the team's
    /// own controls decide). A combination that does not compile is an error, never
    /// the team's controls without the groups' denies.
    pub fn for_groups(
        &self,
        org: &OrgGroups,
        groups: &[String],
    ) -> Result<Option<Arc<GroupedAdmin>>, PolicyError> {
        let policies = &self.admin.switches().groups;
        let says = |g: &&String| {
            policies.contains_key(g.as_str()) || org.policies.contains_key(g.as_str())
        };
        // the key is the groups that say something: callers differing only in
        // groups without a policy share one entry
        let saying = groups.iter().filter(says).count();
        if saying == 0 {
            return Ok(None);
        }
        // a caller whose every group has a policy (the usual case) is its own key:
        // looked up without a copy, since this runs on every decision
        let filtered: Vec<String>;
        let key: &[String] = if saying == groups.len() {
            groups
        } else {
            filtered = groups.iter().filter(says).cloned().collect();
            &filtered
        };
        let mut guard = self.groups.0.lock().unwrap_or_else(|e| e.into_inner());
        let (made_with, cache) = &mut *guard;
        if *made_with != org.revision {
            cache.clear();
            *made_with = org.revision;
        }
        if let Some(hit) = cache.get(key) {
            return Ok(Some(hit.clone()));
        }
        let grouped = Arc::new(GroupedAdmin::compile_in(
            &self.admin.document(),
            &org.policies,
            key,
        )?);
        if cache.len() >= MAX_CACHED_GROUP_SETS {
            cache.clear();
        }
        cache.insert(key.to_vec(), grouped.clone());
        Ok(Some(grouped))
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

    fn names(groups: &[&str]) -> Vec<String> {
        groups.iter().map(|g| (*g).to_owned()).collect()
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
        assert!(team.for_groups(&org, &[]).unwrap().is_none());
        let cache = team.groups.0.lock().unwrap();
        assert_eq!(cache.1.len(), 2);
    }
}
