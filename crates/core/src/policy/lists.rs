//! Settings compiled for decisions, and the list edits of seed 001 (`Yro`) plus
//! remove and normalise (in `edits.rs`).

use super::entry::{self, Entry, Side, hint, validate_call_name};
use super::group_names::{MAX_GROUP_POLICIES, check_group_name};
use super::matcher::{CompiledList, ListBuilder};
use super::roles::RolesDocument;
use super::shell::{Prefix, PrefixList};
use super::{AdminControls, EntryProblem, ListMode, PolicyError, Rule, UserSettings, settings};

mod edits;
pub use edits::{AddOutcome, add_mcp_entry, normalise, remove_entry};

/// The most entries one list may hold.
pub const MAX_LIST_ENTRIES: usize = 100_000;

/// The longest command prefix, in bytes: MCP entries are bounded by seed 001's 256
/// characters a side, and a prefix is a few command words, so this is generous.
pub const MAX_PREFIX_LEN: usize = 1_024;

fn check_len(field: &str, list: &[String], problems: &mut Vec<EntryProblem>) {
    if list.len() > MAX_LIST_ENTRIES {
        problems.push(EntryProblem {
            field: field.to_owned(),
            entry: format!("{} entries", list.len()),
            rule: Rule::TooMany,
            hint: format!("at most {MAX_LIST_ENTRIES} entries: use wildcards or globs"),
        });
    }
}

fn compile_mcp(field: &str, list: &[String], problems: &mut Vec<EntryProblem>) -> CompiledList {
    let found = problems.len();
    check_len(field, list, problems);
    // a list past the limits is never compiled: its text could outgrow the offsets
    let mut built = (problems.len() == found).then(|| ListBuilder::new(list));
    for (i, raw) in list.iter().enumerate() {
        // each entry is added and dropped before the next is parsed (see `ListBuilder`)
        match Entry::parse(raw) {
            Ok(e) => {
                if let Some(b) = &mut built {
                    b.add(i, &e);
                }
            }
            Err(rule) => {
                built = None;
                problems.push(EntryProblem {
                    field: format!("{field}[{i}]"),
                    entry: raw.clone(),
                    rule,
                    hint: hint(rule).to_owned(),
                });
            }
        }
    }
    built.map(ListBuilder::finish).unwrap_or_default()
}

/// How a team's allow-type list reads `@name` entries that are no preset.
#[derive(Clone, Copy)]
enum Categories<'a> {
    /// Deciding on a stored document: an `@name` no category of the team defines (it
    /// was deleted after the entry was written) matches nothing.
    Lenient(&'a RolesDocument),
    /// Writing a document: such an entry is refused, unless the list held it before
    /// the write (`before`), so deleting a category a list names stays possible.
    Strict {
        roles: &'a RolesDocument,
        before: &'a [String],
    },
}

impl<'a> Categories<'a> {
    fn roles(self) -> &'a RolesDocument {
        match self {
            Self::Lenient(roles) | Self::Strict { roles, .. } => roles,
        }
    }
}

/// The tool category `raw` names, when it is an `@name` entry that is no preset.
fn category_name(raw: &str) -> Option<&str> {
    let name = raw
        .strip_prefix('@')
        .filter(|_| !raw.contains(entry::SEPARATOR))?;
    super::builtin::preset(name).is_none().then_some(name)
}

/// Like [`compile_mcp`] for a team's allowlist, whose `@name` entries may also name a
/// tool category of the team's roles document: the entry matches the calls whose
/// operation (as the roles name it, [`super::roles::tool_operation`]) the category
/// lists, so the allowlist and the roles never disagree on what a category holds.
fn compile_team_allowlist(
    field: &str,
    list: &[String],
    categories: Categories<'_>,
    problems: &mut Vec<EntryProblem>,
) -> CompiledList {
    let found = problems.len();
    check_len(field, list, problems);
    // a list past the limits is never compiled: its text could outgrow the offsets
    let mut built = (problems.len() == found).then(|| ListBuilder::new(list));
    for (i, raw) in list.iter().enumerate() {
        let Some(name) = category_name(raw) else {
            // each entry is added and dropped before the next is parsed (see `ListBuilder`)
            match Entry::parse(raw) {
                Ok(e) => {
                    if let Some(b) = &mut built {
                        b.add(i, &e);
                    }
                }
                Err(rule) => problems.push(EntryProblem {
                    field: format!("{field}[{i}]"),
                    entry: raw.clone(),
                    rule,
                    hint: hint(rule).to_owned(),
                }),
            }
            continue;
        };
        match categories.roles().tool_categories.get(name) {
            Some(category) => {
                for op in &category.tools {
                    for (server, tool) in super::roles::calls_of_operation(op) {
                        if let Some(b) = &mut built {
                            b.add(
                                i,
                                &Entry::Pair {
                                    server: Side::Exact(server),
                                    tool: Side::Exact(tool),
                                },
                            );
                        }
                    }
                }
            }
            // written before its category was deleted: it matches nothing
            None if matches!(categories, Categories::Lenient(_)) => {}
            None if matches!(categories, Categories::Strict { before, .. } if before.contains(raw)) =>
                {}
            None => problems.push(EntryProblem {
                field: format!("{field}[{i}]"),
                entry: raw.clone(),
                rule: Rule::UnknownPreset,
                hint: unknown_category_hint(name, categories.roles()),
            }),
        }
    }
    if problems.len() == found {
        built.map(ListBuilder::finish).unwrap_or_default()
    } else {
        CompiledList::default()
    }
}

fn unknown_category_hint(name: &str, roles: &RolesDocument) -> String {
    let known: Vec<String> = roles
        .tool_categories
        .keys()
        .map(|c| format!("@{c}"))
        .collect();
    let known = if known.is_empty() {
        "the team's roles document defines no tool category".to_owned()
    } else {
        format!("the team's tool categories are {}", known.join(", "))
    };
    format!(
        "no preset or tool category is named {name}: the presets are @readonly, {known}; define toolCategories.{name} in the roles document or remove the entry"
    )
}

fn compile_prefixes(field: &str, list: &[String], problems: &mut Vec<EntryProblem>) -> PrefixList {
    check_len(field, list, problems);
    let mut out = Vec::with_capacity(list.len());
    for (i, raw) in list.iter().enumerate() {
        if raw.len() > MAX_PREFIX_LEN {
            // the entry is echoed cut short: the error must not grow with the input
            let cut = (0..=64)
                .rev()
                .find(|&n| raw.is_char_boundary(n))
                .unwrap_or(0);
            problems.push(EntryProblem {
                field: format!("{field}[{i}]"),
                entry: format!("{}… ({} bytes)", &raw[..cut], raw.len()),
                rule: Rule::TooLong,
                hint: format!(
                    "a command prefix is at most {MAX_PREFIX_LEN} bytes: keep the command words that decide"
                ),
            });
            continue;
        }
        if raw.trim() == crate::policy::shell::READONLY {
            // the curated read-only commands; the decision holds them to no writes
            out.extend(crate::policy::shell::readonly_prefixes());
            continue;
        }
        match Prefix::parse(raw) {
            Some(p) => out.push(p),
            None => problems.push(EntryProblem {
                field: format!("{field}[{i}]"),
                entry: raw.clone(),
                rule: Rule::EmptyCommand,
                hint: hint(Rule::EmptyCommand).to_owned(),
            }),
        }
    }
    PrefixList::new(out)
}

fn result<T>(value: T, problems: Vec<EntryProblem>) -> Result<T, PolicyError> {
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(PolicyError::InvalidEntries(problems))
    }
}

/// Team admin controls compiled for decisions whose cost does not grow with list size.
#[derive(Debug, Clone)]
pub struct CompiledAdmin {
    /// The controls without their three MCP lists, which the compiled lists hold
    /// (one copy of each entry: [`Self::document`] puts them back).
    pub(super) controls: AdminControls,
    pub(super) allowlist: CompiledList,
    pub(super) blocklist: CompiledList,
    pub(super) access: CompiledList,
    pub(super) allowed: PrefixList,
    pub(super) blocked: PrefixList,
    /// Never run: DENY `COMMAND_DENIED`, whatever else holds.
    pub(super) denied: PrefixList,
    pub(super) browser_server_ids: Vec<String>,
    /// Seed 001's `isDisabledByAdmin`: controls on, and nothing allowed at all. In
    /// union mode the users' own lists count, so it never is.
    pub(super) disabled: bool,
    /// Seed 004's roles document, compiled.
    pub(super) roles: std::sync::Arc<super::roles::CompiledRoles>,
    /// The team's rates; None for a team without (the decision path then never
    /// looks for a bucket).
    pub(super) rates: Option<std::sync::Arc<super::rates::CompiledRates>>,
}

impl CompiledAdmin {
    /// Validates every entry (reporting all problems at once) and builds the lookup tables.
    pub fn compile(controls: &AdminControls) -> Result<Self, PolicyError> {
        Self::compile_with(controls, Categories::Lenient(&controls.roles))
    }

    /// [`Self::compile`] for a write replacing `before`: an `@name` entry of an
    /// allowlist must be a preset or one of the team's tool categories, unless the
    /// list held it already (its category is being deleted; it then matches nothing).
    pub fn compile_write(
        controls: &AdminControls,
        before: &AdminControls,
    ) -> Result<Self, PolicyError> {
        Self::compile_lists(controls, |field, list, problems| {
            // each list is checked against its own earlier version
            let earlier = match field {
                "mcp_tool_allowlist" => &before.mcp_tool_allowlist,
                _ => &before.mcp_access_allowlist,
            };
            compile_team_allowlist(
                field,
                list,
                Categories::Strict {
                    roles: &controls.roles,
                    before: earlier,
                },
                problems,
            )
        })
    }

    fn compile_with(
        controls: &AdminControls,
        categories: Categories<'_>,
    ) -> Result<Self, PolicyError> {
        Self::compile_lists(controls, |field, list, problems| {
            compile_team_allowlist(field, list, categories, problems)
        })
    }

    fn compile_lists(
        controls: &AdminControls,
        mut allow_type: impl FnMut(&str, &[String], &mut Vec<EntryProblem>) -> CompiledList,
    ) -> Result<Self, PolicyError> {
        let mut problems = Vec::new();
        let allowlist = allow_type(
            "mcp_tool_allowlist",
            &controls.mcp_tool_allowlist,
            &mut problems,
        );
        let blocklist = compile_mcp(
            "mcp_tool_blocklist",
            &controls.mcp_tool_blocklist,
            &mut problems,
        );
        let access = allow_type(
            "mcp_access_allowlist",
            &controls.mcp_access_allowlist,
            &mut problems,
        );
        let allowed = compile_prefixes("allowed", &controls.allowed, &mut problems);
        let blocked = compile_prefixes("blocked", &controls.blocked, &mut problems);
        let denied = compile_prefixes("denied", &controls.denied, &mut problems);
        check_len(
            "browser_server_ids",
            &controls.browser_server_ids,
            &mut problems,
        );
        for (i, id) in controls.browser_server_ids.iter().enumerate() {
            if let Err(rule) = validate_call_name(id) {
                problems.push(EntryProblem {
                    field: format!("browser_server_ids[{i}]"),
                    entry: id.clone(),
                    rule,
                    hint: "a browser server id is a plain server name".to_owned(),
                });
            }
        }
        if let Some(approvals) = &controls.approvals {
            problems.extend(approvals.problems());
        }
        problems.extend(group_problems(controls));
        if let Some(rates) = &controls.rates {
            problems.extend(rates.problems());
        }
        let rates = controls
            .rates
            .as_deref()
            .and_then(super::rates::CompiledRates::compile)
            .map(std::sync::Arc::new);
        let browser_server_ids = if controls.browser_server_ids.is_empty() {
            settings::default_browser_server_ids()
        } else {
            controls.browser_server_ids.clone()
        };
        let disabled = controls.enabled
            && controls.list_mode != ListMode::Union
            && controls.mcp_tool_allowlist.is_empty()
            && controls.allowed.is_empty()
            && !controls.enable_run_everything;
        let roles = match super::roles::compile_roles(&controls.roles) {
            Ok(roles) => roles,
            Err(PolicyError::InvalidEntries(found)) => {
                problems.extend(found.into_iter().map(|p| EntryProblem {
                    field: format!("roles.{}", p.field),
                    ..p
                }));
                Default::default()
            }
            Err(other) => return Err(other),
        };
        result(
            Self {
                roles: std::sync::Arc::new(roles),
                rates,
                controls: without_mcp_lists(controls),
                allowlist,
                blocklist,
                access,
                allowed,
                blocked,
                denied,
                browser_server_ids,
                disabled,
            },
            problems,
        )
    }

    /// The controls this was compiled from, as they were given: the MCP lists are
    /// read back from their compiled form, in order, duplicates included.
    pub fn document(&self) -> AdminControls {
        let list = |l: &CompiledList| l.entries().map(str::to_owned).collect();
        AdminControls {
            mcp_tool_allowlist: list(&self.allowlist),
            mcp_tool_blocklist: list(&self.blocklist),
            mcp_access_allowlist: list(&self.access),
            ..without_mcp_lists(&self.controls)
        }
    }

    /// The controls this was compiled from, without the MCP lists (empty here): what
    /// a caller that reads only the switches and modes needs, without a copy of the
    /// lists.
    pub fn switches(&self) -> &AdminControls {
        &self.controls
    }

    /// The team's rates, compiled; None when it has no rule.
    pub fn rates(&self) -> Option<&super::rates::CompiledRates> {
        self.rates.as_deref()
    }

    /// The team's roles document, compiled (empty when roles are not in use).
    pub fn roles(&self) -> &super::roles::CompiledRoles {
        &self.roles
    }

    /// Admin controls are on: the admin's values stand in for the user's.
    pub fn controlled(&self) -> bool {
        self.controls.enabled
    }

    pub(super) fn union(&self) -> bool {
        self.controls.list_mode == ListMode::Union
    }

    pub(super) fn is_browser(&self, server: &str) -> bool {
        self.browser_server_ids.iter().any(|id| id == server)
    }
}

/// A copy of `c` without its three MCP lists, made without copying them (the
/// pattern names every field, so a new one is not forgotten).
fn without_mcp_lists(c: &AdminControls) -> AdminControls {
    let AdminControls {
        enabled,
        allowed,
        blocked,
        disable_mcp_auto_run,
        delete_file_protection,
        enable_run_everything,
        mcp_tool_allowlist: _,
        sandboxing_controls,
        browser_protection,
        mcp_tool_blocklist: _,
        kill_switch,
        browser_server_ids,
        list_mode,
        mcp_access_mode,
        mcp_access_allowlist: _,
        denied,
        roles,
        default_user_settings,
        approvals,
        groups,
        managed,
        rates,
    } = c;
    AdminControls {
        enabled: *enabled,
        allowed: allowed.clone(),
        blocked: blocked.clone(),
        disable_mcp_auto_run: *disable_mcp_auto_run,
        delete_file_protection: *delete_file_protection,
        enable_run_everything: *enable_run_everything,
        mcp_tool_allowlist: Vec::new(),
        sandboxing_controls: sandboxing_controls.clone(),
        browser_protection: *browser_protection,
        mcp_tool_blocklist: Vec::new(),
        kill_switch: *kill_switch,
        browser_server_ids: browser_server_ids.clone(),
        list_mode: *list_mode,
        mcp_access_mode: *mcp_access_mode,
        mcp_access_allowlist: Vec::new(),
        denied: denied.clone(),
        roles: roles.clone(),
        default_user_settings: default_user_settings.clone(),
        approvals: approvals.clone(),
        groups: groups.clone(),
        managed: managed.clone(),
        rates: rates.clone(),
    }
}

/// A copy of `s` without its MCP list, made without copying it.
fn without_mcp_list(s: &UserSettings) -> UserSettings {
    let UserSettings {
        mcp_allowed_tools: _,
        yolo_mcp_tools_disabled,
        playwright_protection,
        use_yolo_mode,
        yolo_enable_run_everything,
        command_allowlist,
        command_denylist,
    } = s;
    UserSettings {
        mcp_allowed_tools: Vec::new(),
        yolo_mcp_tools_disabled: *yolo_mcp_tools_disabled,
        playwright_protection: *playwright_protection,
        use_yolo_mode: *use_yolo_mode,
        yolo_enable_run_everything: *yolo_enable_run_everything,
        command_allowlist: command_allowlist.clone(),
        command_denylist: command_denylist.clone(),
    }
}

/// User settings compiled like [`CompiledAdmin`].
#[derive(Debug, Clone)]
pub struct CompiledUser {
    /// The settings without `mcp_allowed_tools`, which the compiled list holds.
    pub(super) settings: UserSettings,
    pub(super) allowlist: CompiledList,
    pub(super) allowed: PrefixList,
    pub(super) denied: PrefixList,
}

impl CompiledUser {
    pub fn compile(settings: &UserSettings) -> Result<Self, PolicyError> {
        let mut problems = Vec::new();
        let allowlist = compile_mcp(
            "mcp_allowed_tools",
            &settings.mcp_allowed_tools,
            &mut problems,
        );
        let allowed = compile_prefixes(
            "command_allowlist",
            &settings.command_allowlist,
            &mut problems,
        );
        let denied = compile_prefixes(
            "command_denylist",
            &settings.command_denylist,
            &mut problems,
        );
        result(
            Self {
                settings: without_mcp_list(settings),
                allowlist,
                allowed,
                denied,
            },
            problems,
        )
    }

    /// The settings this was compiled from, as they were given (the MCP list read
    /// back from its compiled form).
    pub fn document(&self) -> UserSettings {
        UserSettings {
            mcp_allowed_tools: self.allowlist.entries().map(str::to_owned).collect(),
            ..without_mcp_list(&self.settings)
        }
    }
}

/// Every problem of a team's group policies: names, their number, and each list
/// checked as the team's own list of the same name is (`groups.NAME.field[i]`).
fn group_problems(team: &AdminControls) -> Vec<EntryProblem> {
    let mut problems = Vec::new();
    if team.groups.len() > MAX_GROUP_POLICIES {
        problems.push(EntryProblem {
            field: "groups".into(),
            entry: format!("{} groups", team.groups.len()),
            rule: Rule::TooMany,
            hint: format!("at most {MAX_GROUP_POLICIES} group policies per team"),
        });
    }
    for (name, g) in team.groups.iter() {
        if let Err(hint) = check_group_name(name) {
            problems.push(EntryProblem {
                field: "groups".into(),
                entry: name.clone(),
                rule: Rule::Malformed,
                hint,
            });
        }
        // the group's lists alone, in a document of their own, checked by the one
        // compiler of admin lists
        let alone = AdminControls {
            allowed: g.allowed.clone().unwrap_or_default(),
            mcp_tool_allowlist: g.mcp_tool_allowlist.clone().unwrap_or_default(),
            mcp_access_allowlist: g.mcp_access_allowlist.clone().unwrap_or_default(),
            blocked: g.blocked.clone(),
            denied: g.denied.clone(),
            mcp_tool_blocklist: g.mcp_tool_blocklist.clone(),
            browser_server_ids: if g.browser_server_ids.is_empty() {
                settings::default_browser_server_ids()
            } else {
                g.browser_server_ids.clone()
            },
            roles: team.roles.clone(),
            ..AdminControls::default()
        };
        if let Err(PolicyError::InvalidEntries(found)) = CompiledAdmin::compile(&alone) {
            problems.extend(found.into_iter().map(|p| EntryProblem {
                field: format!("groups.{name}.{}", p.field),
                ..p
            }));
        }
    }
    problems
}

#[cfg(test)]
mod tests;
