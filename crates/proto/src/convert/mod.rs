//! Conversions between protobuf messages and the policy core's types: the only place both meet.

mod calls;

use crate::v1 as pb;
pub use calls::{
    BatchCall, agent_from_pb, arguments_from_pb, call_from_pb, call_to_pb, decision_to_pb,
    outcome_to_pb, reason_to_pb,
};
use std::time::{Duration, UNIX_EPOCH};
use toolgate_core::policy::approvals::{ApprovalMode, ApprovalSettings, ApproverRole};
use toolgate_core::policy::groups::{AllowMode, GroupControls};
use toolgate_core::policy::managed::{ManagedControls, ServerIdentity};
use toolgate_core::policy::rates::{RateControls, RateExceeded, RateRule, RateScope};
use toolgate_core::policy::{
    self, AccessMode, AdminControls, ListMode, SandboxingControls, UserSettings,
};

pub use crate::error::ConvertError;

/// Unix milliseconds (the domain's times) as a protobuf time; none for 0 ("never").
pub fn timestamp(ms: i64) -> Option<prost_types::Timestamp> {
    let ms = u64::try_from(ms).ok().filter(|ms| *ms > 0)?;
    Some((UNIX_EPOCH + Duration::from_millis(ms)).into())
}

/// The earliest and latest instants a protobuf `Timestamp` may hold
/// (0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z).
const TIMESTAMP_SECONDS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

/// A `Timestamp` as Unix milliseconds; out of its documented range (seconds past
/// year 9999, which used to wrap, or nanos outside 0..1e9) it is refused.
pub fn timestamp_ms(field: &str, t: &prost_types::Timestamp) -> Result<i64, ConvertError> {
    if !TIMESTAMP_SECONDS.contains(&t.seconds) || !(0..1_000_000_000).contains(&t.nanos) {
        return Err(ConvertError {
            field: field.to_owned(),
            message: format!(
                "{{seconds: {}, nanos: {}}} is not a timestamp: seconds must lie within years 1 to 9999 and nanos within 0 to 999999999",
                t.seconds, t.nanos
            ),
        });
    }
    Ok(t.seconds * 1000 + i64::from(t.nanos / 1_000_000))
}

pub fn controls_from_pb(c: pb::AutoRunControls) -> Result<AdminControls, ConvertError> {
    let list_mode = match pb::ListMode::try_from(c.list_mode) {
        Ok(pb::ListMode::Unspecified | pb::ListMode::Replace) => ListMode::Replace,
        Ok(pb::ListMode::Union) => ListMode::Union,
        Err(_) => return Err(unknown_enum("auto_run_controls.list_mode", c.list_mode)),
    };
    let mcp_access_mode = match pb::McpAccessMode::try_from(c.mcp_access_mode) {
        Ok(pb::McpAccessMode::Unspecified | pb::McpAccessMode::Blocklist) => AccessMode::Blocklist,
        Ok(pb::McpAccessMode::Allowlist) => AccessMode::Allowlist,
        Err(_) => {
            return Err(unknown_enum(
                "auto_run_controls.mcp_access_mode",
                c.mcp_access_mode,
            ));
        }
    };
    Ok(AdminControls {
        enabled: c.enabled,
        allowed: c.allowed,
        blocked: c.blocked,
        disable_mcp_auto_run: c.disable_mcp_auto_run,
        delete_file_protection: c.delete_file_protection,
        enable_run_everything: c.enable_run_everything,
        mcp_tool_allowlist: c.mcp_tool_allowlist,
        sandboxing_controls: c
            .sandboxing_controls
            .map(|s| SandboxingControls { enabled: s.enabled }),
        browser_protection: c.browser_protection,
        mcp_tool_blocklist: c.mcp_tool_blocklist,
        kill_switch: c.kill_switch,
        // proto3 cannot tell an empty list from an unset one: empty means the defaults
        browser_server_ids: if c.browser_server_ids.is_empty() {
            policy::default_browser_server_ids()
        } else {
            c.browser_server_ids
        },
        list_mode,
        mcp_access_mode,
        mcp_access_allowlist: c.mcp_access_allowlist,
        denied: c.denied,
        roles: match c.roles {
            Some(d) => crate::roles::roles_from_pb(d, "auto_run_controls.roles")?,
            None => Default::default(),
        },
        default_user_settings: c.default_user_settings.map(|s| Box::new(user_from_pb(s))),
        approvals: c
            .approvals
            .map(|a| approvals_from_pb(a).map(Box::new))
            .transpose()?,
        groups: Box::new(
            c.groups
                .into_iter()
                .map(|(name, g)| {
                    let field = format!("auto_run_controls.groups[{name:?}]");
                    group_from_pb(g, &field).map(|g| (name, g))
                })
                .collect::<Result<_, _>>()?,
        ),
        managed: c
            .managed
            .map(managed_from_pb)
            .filter(|m| !m.is_default())
            .map(Box::new),
        rates: c
            .rates
            .map(rates_from_pb)
            .transpose()?
            .filter(|r| !r.is_default())
            .map(Box::new),
    })
}

fn rates_from_pb(r: pb::RateLimits) -> Result<RateControls, ConvertError> {
    let field = "auto_run_controls.rates";
    let exceeded = match pb::RateExceeded::try_from(r.exceeded) {
        Ok(pb::RateExceeded::Unspecified | pb::RateExceeded::Ask) => RateExceeded::Ask,
        Ok(pb::RateExceeded::Deny) => RateExceeded::Deny,
        Err(_) => return Err(unknown_enum(&format!("{field}.exceeded"), r.exceeded)),
    };
    let rules = r
        .rules
        .into_iter()
        .enumerate()
        .map(|(i, rule)| {
            let per = match pb::RateScope::try_from(rule.per) {
                Ok(pb::RateScope::Unspecified | pb::RateScope::User) => RateScope::User,
                Ok(pb::RateScope::Team) => RateScope::Team,
                Err(_) => return Err(unknown_enum(&format!("{field}.rules[{i}].per"), rule.per)),
            };
            Ok(RateRule {
                per,
                tools: rule.tools,
                calls_per_minute: i64::from(rule.calls_per_minute),
                burst: i64::from(rule.burst),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(RateControls { rules, exceeded })
}

fn rates_to_pb(r: &RateControls) -> pb::RateLimits {
    // a stored document holds only validated numbers (1 to 1,000,000)
    let number = |v: i64| u32::try_from(v).unwrap_or(0);
    pb::RateLimits {
        rules: r
            .rules
            .iter()
            .map(|rule| pb::RateRule {
                per: match rule.per {
                    RateScope::User => pb::RateScope::User,
                    RateScope::Team => pb::RateScope::Team,
                } as i32,
                tools: rule.tools.clone(),
                calls_per_minute: number(rule.calls_per_minute),
                burst: number(rule.burst),
            })
            .collect(),
        exceeded: match r.exceeded {
            RateExceeded::Ask => pb::RateExceeded::Ask,
            RateExceeded::Deny => pb::RateExceeded::Deny,
        } as i32,
    }
}

fn managed_from_pb(m: pb::ManagedDelivery) -> ManagedControls {
    ManagedControls {
        disable_bypass_permissions_mode: m.disable_bypass_permissions_mode,
        allow_user_hooks: m.allow_user_hooks,
        managed_permission_rules_only: m.managed_permission_rules_only,
        claude_code_minimum_version: m.claude_code_minimum_version,
        allowed_mcp_servers: m
            .allowed_mcp_servers
            .into_iter()
            .map(identity_from_pb)
            .collect(),
        denied_mcp_servers: m
            .denied_mcp_servers
            .into_iter()
            .map(identity_from_pb)
            .collect(),
    }
}

/// An identity with none of its kinds set reads as an empty name, which the
/// controls' check refuses (never as a match-anything).
fn identity_from_pb(i: pb::McpServerIdentity) -> ServerIdentity {
    use pb::mcp_server_identity::Identity;
    match i.identity {
        Some(Identity::Name(n)) => ServerIdentity::Name(n),
        Some(Identity::Command(c)) => ServerIdentity::Command(c.words),
        Some(Identity::Url(u)) => ServerIdentity::Url(u),
        None => ServerIdentity::Name(String::new()),
    }
}

fn identity_to_pb(i: &ServerIdentity) -> pb::McpServerIdentity {
    use pb::mcp_server_identity::Identity;
    pb::McpServerIdentity {
        identity: Some(match i {
            ServerIdentity::Name(n) => Identity::Name(n.clone()),
            ServerIdentity::Command(words) => Identity::Command(pb::CommandWords {
                words: words.clone(),
            }),
            ServerIdentity::Url(u) => Identity::Url(u.clone()),
        }),
    }
}

fn managed_to_pb(m: &ManagedControls) -> pb::ManagedDelivery {
    pb::ManagedDelivery {
        disable_bypass_permissions_mode: m.disable_bypass_permissions_mode,
        allow_user_hooks: m.allow_user_hooks,
        managed_permission_rules_only: m.managed_permission_rules_only,
        claude_code_minimum_version: m.claude_code_minimum_version.clone(),
        allowed_mcp_servers: m.allowed_mcp_servers.iter().map(identity_to_pb).collect(),
        denied_mcp_servers: m.denied_mcp_servers.iter().map(identity_to_pb).collect(),
    }
}

/// A group policy from the wire; `field` names it in errors.
pub fn group_from_pb(g: pb::GroupPolicy, field: &str) -> Result<GroupControls, ConvertError> {
    let allow_mode = match pb::GroupAllowMode::try_from(g.allow_mode) {
        Ok(pb::GroupAllowMode::Unspecified | pb::GroupAllowMode::Add) => AllowMode::Add,
        Ok(pb::GroupAllowMode::Replace) => AllowMode::Replace,
        Err(_) => return Err(unknown_enum(&format!("{field}.allow_mode"), g.allow_mode)),
    };
    let list_mode = match pb::ListMode::try_from(g.list_mode) {
        Ok(pb::ListMode::Unspecified) => None,
        Ok(pb::ListMode::Replace) => Some(ListMode::Replace),
        Ok(pb::ListMode::Union) => Some(ListMode::Union),
        Err(_) => return Err(unknown_enum(&format!("{field}.list_mode"), g.list_mode)),
    };
    let mcp_access_mode = match pb::McpAccessMode::try_from(g.mcp_access_mode) {
        Ok(pb::McpAccessMode::Unspecified) => None,
        Ok(pb::McpAccessMode::Blocklist) => Some(AccessMode::Blocklist),
        Ok(pb::McpAccessMode::Allowlist) => Some(AccessMode::Allowlist),
        Err(_) => {
            return Err(unknown_enum(
                &format!("{field}.mcp_access_mode"),
                g.mcp_access_mode,
            ));
        }
    };
    Ok(GroupControls {
        allow_mode,
        allowed: g.allowed.map(|l| l.entries),
        mcp_tool_allowlist: g.mcp_tool_allowlist.map(|l| l.entries),
        mcp_access_allowlist: g.mcp_access_allowlist.map(|l| l.entries),
        blocked: g.blocked,
        denied: g.denied,
        mcp_tool_blocklist: g.mcp_tool_blocklist,
        browser_server_ids: g.browser_server_ids,
        enabled: g.enabled,
        disable_mcp_auto_run: g.disable_mcp_auto_run,
        delete_file_protection: g.delete_file_protection,
        browser_protection: g.browser_protection,
        enable_run_everything: g.enable_run_everything,
        list_mode,
        mcp_access_mode,
    })
}

/// A group policy for the wire.
pub fn group_to_pb(g: &GroupControls) -> pb::GroupPolicy {
    let list = |l: &Option<Vec<String>>| {
        l.as_ref().map(|entries| pb::EntryList {
            entries: entries.clone(),
        })
    };
    pb::GroupPolicy {
        allow_mode: match g.allow_mode {
            AllowMode::Add => pb::GroupAllowMode::Add,
            AllowMode::Replace => pb::GroupAllowMode::Replace,
        } as i32,
        allowed: list(&g.allowed),
        mcp_tool_allowlist: list(&g.mcp_tool_allowlist),
        mcp_access_allowlist: list(&g.mcp_access_allowlist),
        blocked: g.blocked.clone(),
        denied: g.denied.clone(),
        mcp_tool_blocklist: g.mcp_tool_blocklist.clone(),
        browser_server_ids: g.browser_server_ids.clone(),
        enabled: g.enabled,
        disable_mcp_auto_run: g.disable_mcp_auto_run,
        delete_file_protection: g.delete_file_protection,
        browser_protection: g.browser_protection,
        enable_run_everything: g.enable_run_everything,
        list_mode: match g.list_mode {
            None => pb::ListMode::Unspecified,
            Some(ListMode::Replace) => pb::ListMode::Replace,
            Some(ListMode::Union) => pb::ListMode::Union,
        } as i32,
        mcp_access_mode: match g.mcp_access_mode {
            None => pb::McpAccessMode::Unspecified,
            Some(AccessMode::Blocklist) => pb::McpAccessMode::Blocklist,
            Some(AccessMode::Allowlist) => pb::McpAccessMode::Allowlist,
        } as i32,
    }
}

fn approvals_from_pb(a: pb::ApprovalSettings) -> Result<ApprovalSettings, ConvertError> {
    let mode = match pb::ApprovalMode::try_from(a.mode) {
        Ok(pb::ApprovalMode::Unspecified | pb::ApprovalMode::Off) => ApprovalMode::Off,
        Ok(pb::ApprovalMode::Headless) => ApprovalMode::Headless,
        Ok(pb::ApprovalMode::Always) => ApprovalMode::Always,
        Err(_) => return Err(unknown_enum("auto_run_controls.approvals.mode", a.mode)),
    };
    let approver_role = match pb::ApproverRole::try_from(a.approver_role) {
        Ok(pb::ApproverRole::Unspecified | pb::ApproverRole::Admin) => ApproverRole::Admin,
        Ok(pb::ApproverRole::Member) => ApproverRole::Member,
        Err(_) => {
            return Err(unknown_enum(
                "auto_run_controls.approvals.approver_role",
                a.approver_role,
            ));
        }
    };
    Ok(ApprovalSettings {
        mode,
        deadline_seconds: a.deadline_seconds,
        approver_users: a.approver_users,
        approver_role,
        allow_self_approval: a.allow_self_approval,
        webhook_url: a.webhook_url,
        max_grant_seconds: a.max_grant_seconds,
    })
}

pub fn approvals_to_pb(a: &ApprovalSettings) -> pb::ApprovalSettings {
    pb::ApprovalSettings {
        mode: match a.mode {
            ApprovalMode::Off => pb::ApprovalMode::Off,
            ApprovalMode::Headless => pb::ApprovalMode::Headless,
            ApprovalMode::Always => pb::ApprovalMode::Always,
        } as i32,
        deadline_seconds: a.deadline_seconds,
        approver_users: a.approver_users.clone(),
        approver_role: match a.approver_role {
            ApproverRole::Admin => pb::ApproverRole::Admin,
            ApproverRole::Member => pb::ApproverRole::Member,
        } as i32,
        allow_self_approval: a.allow_self_approval,
        webhook_url: a.webhook_url.clone(),
        max_grant_seconds: a.max_grant_seconds,
    }
}

fn unknown_enum(field: &str, value: i32) -> ConvertError {
    ConvertError {
        field: field.to_owned(),
        message: format!("{value} is not a known value: use one of the enum's named values"),
    }
}

pub fn controls_to_pb(c: &AdminControls) -> pb::AutoRunControls {
    pb::AutoRunControls {
        enabled: c.enabled,
        allowed: c.allowed.clone(),
        blocked: c.blocked.clone(),
        disable_mcp_auto_run: c.disable_mcp_auto_run,
        delete_file_protection: c.delete_file_protection,
        enable_run_everything: c.enable_run_everything,
        mcp_tool_allowlist: c.mcp_tool_allowlist.clone(),
        sandboxing_controls: c
            .sandboxing_controls
            .as_ref()
            .map(|s| pb::SandboxingControls { enabled: s.enabled }),
        browser_protection: c.browser_protection,
        mcp_tool_blocklist: c.mcp_tool_blocklist.clone(),
        kill_switch: c.kill_switch,
        browser_server_ids: c.browser_server_ids.clone(),
        list_mode: match c.list_mode {
            ListMode::Replace => pb::ListMode::Replace,
            ListMode::Union => pb::ListMode::Union,
        } as i32,
        mcp_access_mode: match c.mcp_access_mode {
            AccessMode::Blocklist => pb::McpAccessMode::Blocklist,
            AccessMode::Allowlist => pb::McpAccessMode::Allowlist,
        } as i32,
        mcp_access_allowlist: c.mcp_access_allowlist.clone(),
        denied: c.denied.clone(),
        roles: crate::roles::roles_to_pb(&c.roles),
        default_user_settings: c.default_user_settings.as_deref().map(user_to_pb),
        approvals: c.approvals.as_deref().map(approvals_to_pb),
        groups: c
            .groups
            .iter()
            .map(|(name, g)| (name.clone(), group_to_pb(g)))
            .collect(),
        managed: c.managed.as_deref().map(managed_to_pb),
        rates: c.rates.as_deref().map(rates_to_pb),
    }
}

/// The user's settings as a message with no ids or revision (a team's defaults);
/// the server's own conversion fills those in.
pub fn user_to_pb(s: &UserSettings) -> pb::UserSettings {
    pb::UserSettings {
        mcp_allowed_tools: s.mcp_allowed_tools.clone(),
        yolo_mcp_tools_disabled: s.yolo_mcp_tools_disabled,
        playwright_protection: Some(s.playwright_protection),
        use_yolo_mode: s.use_yolo_mode,
        yolo_enable_run_everything: s.yolo_enable_run_everything,
        command_allowlist: s.command_allowlist.clone(),
        command_denylist: s.command_denylist.clone(),
        ..pb::UserSettings::default()
    }
}

/// A field mask's paths as the user settings fields they name; a path naming none
/// (or a field the server sets) is refused, naming it.
pub fn user_fields_from_mask(
    mask: &prost_types::FieldMask,
) -> Result<Vec<policy::UserField>, ConvertError> {
    mask.paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            policy::UserField::parse(path).ok_or_else(|| ConvertError {
                field: format!("update_mask.paths[{i}]"),
                message: format!(
                    "{path:?} is not a user setting that can be changed: name one of {}",
                    policy::UserField::ALL
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        })
        .collect()
}

/// The user's settings from a message; team and user ids are taken separately.
pub fn user_from_pb(s: pb::UserSettings) -> UserSettings {
    UserSettings {
        mcp_allowed_tools: s.mcp_allowed_tools,
        yolo_mcp_tools_disabled: s.yolo_mcp_tools_disabled,
        playwright_protection: s.playwright_protection.unwrap_or(true),
        use_yolo_mode: s.use_yolo_mode,
        yolo_enable_run_everything: s.yolo_enable_run_everything,
        command_allowlist: s.command_allowlist,
        command_denylist: s.command_denylist,
    }
}
