//! Group policies: a partial set of admin controls kept per group in a team's
//! document, and the one way a team's controls and the policies of a caller's
//! groups combine (docs/groups.md has the table). Pure: the hub caches a combination
//! per set of groups.

use super::lists::{CompiledAdmin, CompiledUser};
use super::settings::{AccessMode, AdminControls, ListMode};
use super::{Call, Check, Decision, PolicyError, Reason};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

// The group document and the name rules are read by the settings and the lists'
// compiler, which this module builds on: they live below it, and are named here.
pub use super::group_names::{
    MAX_GROUP_NAME_LEN, MAX_GROUP_POLICIES, MAX_GROUPS_PER_PRINCIPAL, check_group_name,
    normalise_groups,
};
pub use super::settings::{AllowMode, GroupControls};

/// Group policies by group name: a team's (in its document, under `groups`) or the
/// organisation's (every team's members are under them).
pub type GroupPolicies = BTreeMap<String, GroupControls>;

/// Where a group policy that applies is kept, as its origin's label says.
const TEAM_GROUP: u8 = 1;
const ORG_GROUP: u8 = 2;

/// The lists whose entries carry an origin, each an index into
/// [`Origins`]' entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ListField {
    Allowed,
    Blocked,
    Denied,
    McpAllowlist,
    McpBlocklist,
    McpAccess,
}

const LIST_FIELDS: usize = ListField::McpAccess as usize + 1;

/// Where each entry and switch of a combination came from, for the entries and
/// switches a group contributed to (anything else is the team's).
#[derive(Debug, Clone, Default)]
pub struct Origins {
    // looked up on every decision of a caller in a group: by index, then by an
    // entry the admins wrote (FxHash: no member chooses these keys)
    entries: [FxHashMap<Arc<str>, Arc<str>>; LIST_FIELDS],
    switches: FxHashMap<&'static str, Arc<str>>,
    /// The caller's groups with a policy in the team, in name order.
    applied: Vec<String>,
}

/// A team's controls combined with the policies of a set of groups.
#[derive(Debug, Clone)]
pub struct Combined {
    /// The controls in force for the groups' members (no group policies in them).
    pub controls: AdminControls,
    pub origins: Origins,
}

/// Labels for the sources of one entry, in a fixed order: the team, then the
/// team's groups by name, then the organisation's.
#[derive(Default)]
struct Sources(BTreeMap<(u8, String), ()>);

impl Sources {
    fn label(&self) -> String {
        let parts: Vec<String> = self
            .0
            .keys()
            .map(|(rank, name)| match *rank {
                0 => "team".to_owned(),
                TEAM_GROUP => format!("group {name}"),
                _ => format!("org group {name}"),
            })
            .collect();
        parts.join(", ")
    }
}

/// A list built from the team's and the groups' entries: the team's first in their
/// order, then each group's in the groups' name order; an entry given twice is kept
/// once, with every source.
#[derive(Default)]
struct ListBuild {
    order: Vec<String>,
    sources: HashMap<String, Sources>,
}

impl ListBuild {
    fn add(&mut self, entries: &[String], source: (u8, &String)) {
        for e in entries {
            let sources = self.sources.entry(e.clone()).or_insert_with(|| {
                self.order.push(e.clone());
                Sources::default()
            });
            sources.0.insert((source.0, source.1.clone()), ());
        }
    }

    fn finish(self, field: ListField, origins: &mut Origins) -> Vec<String> {
        for (entry, sources) in &self.sources {
            let only_team = sources.0.keys().all(|(rank, _)| *rank == 0);
            if !only_team {
                origins.entries[field as usize]
                    .insert(Arc::from(entry.as_str()), Arc::from(sources.label()));
            }
        }
        self.order
    }
}

/// The team's controls combined with the policies of `groups` (the caller's
/// groups; those without a policy in the team say nothing): [`combine_in`] with no
/// organisation-wide policies.
pub fn combine(team: &AdminControls, groups: &[String]) -> Combined {
    combine_in(team, &GroupPolicies::new(), groups)
}

/// The team's controls combined with the policies of `groups` kept in the team and
/// in the organisation (`org`): the one combination. A group with a policy in both
/// gets both, each as one more source under the same rules, so an organisation's
/// deny stands in every team and a team's deny stands against the organisation's
/// policies. The order of `groups` never matters: the policies are taken in name
/// order, and every rule is a union, an "on anywhere" or a "strictest".
///
/// | field | combined |
/// | --- | --- |
/// | `denied`, `blocked`, `mcp_tool_blocklist`, `browser_server_ids` | the union of the team's and every group's |
/// | `allowed`, `mcp_tool_allowlist`, `mcp_access_allowlist` | the union of every group's that sets it, plus the team's unless one of them is in `replace` mode |
/// | `enabled`, `disable_mcp_auto_run`, `delete_file_protection`, `browser_protection` | on if on anywhere |
/// | `enable_run_everything` | on only if the team's is on and no group turns it off |
/// | `list_mode` | `replace` if any says `replace` |
/// | `mcp_access_mode` | `allowlist` if any says `allowlist` |
/// | `kill_switch`, `roles`, `approvals`, `default_user_settings`, `sandboxing_controls`, `managed`, `rates` | the team's |
pub fn combine_in(team: &AdminControls, org: &GroupPolicies, groups: &[String]) -> Combined {
    let mut origins = Origins::default();
    let mut controls = AdminControls {
        groups: Box::default(),
        ..team.clone()
    };
    // the team's policies map is ordered by name: the order of `groups` is lost here
    let members: BTreeSet<&str> = groups.iter().map(String::as_str).collect();
    let applied: Vec<((u8, &String), &GroupControls)> = team
        .groups
        .iter()
        .map(|(name, g)| ((TEAM_GROUP, name), g))
        .chain(org.iter().map(|(name, g)| ((ORG_GROUP, name), g)))
        .filter(|((_, name), _)| members.contains(name.as_str()))
        .collect();
    let names: BTreeSet<&String> = applied.iter().map(|((_, n), _)| *n).collect();
    origins.applied = names.into_iter().cloned().collect();
    if applied.is_empty() {
        return Combined { controls, origins };
    }

    let deny_like = |team_list: &[String],
                     field: ListField,
                     pick: fn(&GroupControls) -> &Vec<String>,
                     origins: &mut Origins| {
        let mut build = ListBuild::default();
        build.add(team_list, (0, &String::new()));
        for (source, g) in &applied {
            build.add(pick(g), *source);
        }
        build.finish(field, origins)
    };
    controls.denied = deny_like(&team.denied, ListField::Denied, |g| &g.denied, &mut origins);
    controls.blocked = deny_like(
        &team.blocked,
        ListField::Blocked,
        |g| &g.blocked,
        &mut origins,
    );
    controls.mcp_tool_blocklist = deny_like(
        &team.mcp_tool_blocklist,
        ListField::McpBlocklist,
        |g| &g.mcp_tool_blocklist,
        &mut origins,
    );
    if applied
        .iter()
        .any(|(_, g)| !g.browser_server_ids.is_empty())
    {
        let mut ids = if team.browser_server_ids.is_empty() {
            super::settings::default_browser_server_ids()
        } else {
            team.browser_server_ids.clone()
        };
        for (_, g) in &applied {
            for id in &g.browser_server_ids {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
        }
        controls.browser_server_ids = ids;
    }

    let allow_like = |team_list: &[String],
                      field: ListField,
                      pick: fn(&GroupControls) -> &Option<Vec<String>>,
                      origins: &mut Origins| {
        let replaced = applied
            .iter()
            .any(|(_, g)| g.allow_mode == AllowMode::Replace && pick(g).is_some());
        let mut build = ListBuild::default();
        if !replaced {
            build.add(team_list, (0, &String::new()));
        }
        for (source, g) in &applied {
            if let Some(list) = pick(g) {
                build.add(list, *source);
            }
        }
        build.finish(field, origins)
    };
    controls.allowed = allow_like(
        &team.allowed,
        ListField::Allowed,
        |g| &g.allowed,
        &mut origins,
    );
    controls.mcp_tool_allowlist = allow_like(
        &team.mcp_tool_allowlist,
        ListField::McpAllowlist,
        |g| &g.mcp_tool_allowlist,
        &mut origins,
    );
    controls.mcp_access_allowlist = allow_like(
        &team.mcp_access_allowlist,
        ListField::McpAccess,
        |g| &g.mcp_access_allowlist,
        &mut origins,
    );

    // switches: on anywhere is on; the label names every source that has it on
    let mut switch = |name: &'static str, team_on: bool, pick: fn(&GroupControls) -> bool| {
        let mut sources = Sources::default();
        if team_on {
            sources.0.insert((0, String::new()), ());
        }
        for ((rank, group), g) in &applied {
            if pick(g) {
                sources.0.insert((*rank, (*group).clone()), ());
            }
        }
        let on = !sources.0.is_empty();
        if on && sources.0.keys().any(|(rank, _)| *rank != 0) {
            origins.switches.insert(name, Arc::from(sources.label()));
        }
        on
    };
    controls.enabled = switch("enabled", team.enabled, |g| g.enabled);
    controls.disable_mcp_auto_run =
        switch("disable_mcp_auto_run", team.disable_mcp_auto_run, |g| {
            g.disable_mcp_auto_run
        });
    controls.delete_file_protection =
        switch("delete_file_protection", team.delete_file_protection, |g| {
            g.delete_file_protection
        });
    controls.browser_protection = switch("browser_protection", team.browser_protection, |g| {
        g.browser_protection
    });
    // the strictest: off wins
    controls.enable_run_everything = team.enable_run_everything
        && applied
            .iter()
            .all(|(_, g)| g.enable_run_everything != Some(false));
    if applied
        .iter()
        .any(|(_, g)| g.list_mode == Some(ListMode::Replace))
    {
        controls.list_mode = ListMode::Replace;
    }
    let access_allowlist = switch(
        "mcp_access_mode",
        team.mcp_access_mode == AccessMode::Allowlist,
        |g| g.mcp_access_mode == Some(AccessMode::Allowlist),
    );
    if access_allowlist {
        controls.mcp_access_mode = AccessMode::Allowlist;
    }
    Combined { controls, origins }
}

/// A team's controls compiled for the members of a set of groups, with the origins
/// of what the groups contributed.
#[derive(Debug)]
pub struct GroupedAdmin {
    pub compiled: CompiledAdmin,
    pub origins: Origins,
}

impl GroupedAdmin {
    /// [`combine`], compiled. A combination whose lists break a limit (their
    /// union too long) is refused: deciding without a group's deny would fail open.
    pub fn compile(team: &AdminControls, groups: &[String]) -> Result<Self, PolicyError> {
        Self::compile_in(team, &GroupPolicies::new(), groups)
    }

    /// [`combine_in`], compiled, refused as [`Self::compile`] is.
    pub fn compile_in(
        team: &AdminControls,
        org: &GroupPolicies,
        groups: &[String],
    ) -> Result<Self, PolicyError> {
        let Combined { controls, origins } = combine_in(team, org, groups);
        Ok(Self {
            compiled: CompiledAdmin::compile(&controls)?,
            origins,
        })
    }
}

/// The label of the team, allocated once: naming an origin costs a reference
/// count, not an allocation (nor a comparison).
fn team_label() -> Arc<str> {
    static TEAM: OnceLock<Arc<str>> = OnceLock::new();
    TEAM.get_or_init(|| Arc::from("team")).clone()
}

/// The label of the user, as [`team_label`].
fn user_label() -> Arc<str> {
    static USER: OnceLock<Arc<str>> = OnceLock::new();
    USER.get_or_init(|| Arc::from("user")).clone()
}

impl Origins {
    /// The caller's groups with a policy in the team, in name order.
    pub fn applied(&self) -> &[String] {
        &self.applied
    }

    fn entry(&self, field: ListField, entry: &str) -> Arc<str> {
        self.entries[field as usize]
            .get(entry)
            .cloned()
            .unwrap_or_else(team_label)
    }

    fn switch(&self, name: &'static str) -> Arc<str> {
        self.switches.get(name).cloned().unwrap_or_else(team_label)
    }

    /// Who wrote what decided `d` on `call`: `team`, `user`, or the team and the
    /// groups (`team, group contractors`) that contributed the matching entry or the
    /// switch that decided. None when no entry or admin switch decided.
    pub fn origin_of(
        &self,
        admin: &CompiledAdmin,
        user: &CompiledUser,
        call: &Call,
        d: &Decision,
    ) -> Option<Arc<str>> {
        let controlled = admin.controlled();
        let entry = d.matched_entry.as_deref();
        match (d.reason, entry) {
            (Reason::BlockedByAdmin, Some(e)) => Some(self.entry(ListField::McpBlocklist, e)),
            (Reason::CommandDenied, Some(e)) => Some(self.entry(ListField::Denied, e)),
            (Reason::CommandBlocked, Some(e)) => {
                // the admin's blocked and the user's own denylist together
                if !admin.controls.blocked.iter().any(|b| b == e)
                    && user.settings.command_denylist.iter().any(|b| b == e)
                {
                    Some(user_label())
                } else {
                    Some(self.entry(ListField::Blocked, e))
                }
            }
            (Reason::CommandAllowed, Some(e)) => {
                let from_admin = controlled && admin.controls.allowed.iter().any(|a| a == e);
                Some(if from_admin {
                    self.entry(ListField::Allowed, e)
                } else {
                    user_label()
                })
            }
            (Reason::Allowlisted, _) => {
                if matches!(call, Call::Shell(_) | Call::DeleteFile(_)) {
                    return Some(user_label());
                }
                // the entry is the admin's when it is a span of the admin's list
                // (the user's list has its own text): no second match per decision
                let e = d.matched_entry.as_ref()?;
                Some(if controlled && admin.allowlist.wrote(e) {
                    self.entry(ListField::McpAllowlist, e)
                } else {
                    user_label()
                })
            }
            (Reason::NotInAccessAllowlist, _) => Some(self.switch("mcp_access_mode")),
            (Reason::AdminDisabled, _) => Some(self.switch("enabled")),
            (Reason::ProtectionOn, _) if controlled => Some(if d.scope.browser {
                self.switch("browser_protection")
            } else {
                self.switch("disable_mcp_auto_run")
            }),
            (Reason::ProtectionOn, _) => Some(user_label()),
            (Reason::DeleteProtected, _) => Some(self.switch("delete_file_protection")),
            (Reason::KillSwitch, _) => Some(team_label()),
            _ => None,
        }
    }

    /// [`Self::origin_of`] written into the decision, and, when it was explained
    /// for a caller in some group, the caller's groups and the origin as two more
    /// checks.
    pub fn name(
        &self,
        admin: &CompiledAdmin,
        user: &CompiledUser,
        call: &Call,
        groups: &[String],
        d: &mut Decision,
    ) {
        d.origin = self.origin_of(admin, user, call, d);
        // a caller in no group reads the explanation it always did
        if d.explanation.is_empty() || groups.is_empty() {
            return;
        }
        // named in one order, whatever order the caller's groups came in
        let groups: BTreeSet<&str> = groups.iter().map(String::as_str).collect();
        let groups: Vec<&str> = groups.into_iter().collect();
        d.explanation.push(Check {
            name: "groups",
            result: if self.applied.is_empty() {
                format!(
                    "member of {}; none has a policy in the team",
                    groups.join(", ")
                )
            } else {
                format!(
                    "member of {}; policies of {} applied",
                    groups.join(", "),
                    self.applied.join(", ")
                )
            },
        });
        if let Some(origin) = &d.origin {
            d.explanation.push(Check {
                name: "origin",
                result: match &d.matched_entry {
                    Some(e) => format!("{e} comes from {origin}"),
                    None => format!("decided by a setting of {origin}"),
                },
            });
        }
    }
}
