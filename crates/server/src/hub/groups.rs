//! A team's controls combined with each set of groups its callers come with,
//! compiled once per set and kept until the team's controls change (a new
//! `CompiledTeam` starts with an empty cache), so a caller in five groups decides
//! at the cost of a caller in none.

use super::{CompiledTeam, OrgGroups};
use crate::policy::PolicyError;
use crate::policy::groups::GroupedAdmin;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most sets of groups kept per team: past it the cache starts again, so callers
/// naming ever new sets cannot grow memory without bound.
pub const MAX_CACHED_GROUP_SETS: usize = 1_024;

/// The compiled combinations of one version of a team's controls, by set of groups
/// with a policy in the team or the organisation, for the organisation's revision
/// they were made with (a newer one starts the cache again).
#[derive(Debug, Default)]
pub struct GroupCache(Mutex<(u64, GroupSets)>);

/// Compiled combinations by the set of groups that say something.
type GroupSets = HashMap<Vec<String>, Arc<GroupedAdmin>>;

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
        // the key is the groups that say something: callers differing only in
        // groups without a policy share one entry
        let key: Vec<String> = groups
            .iter()
            .filter(|g| policies.contains_key(g.as_str()) || org.policies.contains_key(g.as_str()))
            .cloned()
            .collect();
        if key.is_empty() {
            return Ok(None);
        }
        let mut guard = self.groups.0.lock().unwrap_or_else(|e| e.into_inner());
        let (made_with, cache) = &mut *guard;
        if *made_with != org.revision {
            cache.clear();
            *made_with = org.revision;
        }
        if let Some(hit) = cache.get(&key) {
            return Ok(Some(hit.clone()));
        }
        let grouped = Arc::new(GroupedAdmin::compile_in(
            &self.admin.document(),
            &org.policies,
            &key,
        )?);
        if cache.len() >= MAX_CACHED_GROUP_SETS {
            cache.clear();
        }
        cache.insert(key, grouped.clone());
        Ok(Some(grouped))
    }
}
