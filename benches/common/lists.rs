//! The allowlist the decision benches share: its entries, where each kind of entry
//! last stands, and its compiled forms.

use toolgate::policy::{
    AdminControls, CompiledAdmin, CompiledList, CompiledUser, Entry, UserSettings,
};

/// The allowlist of [`allowlist`] as the benches decide against it.
// each bench that includes this module reads the parts it needs
#[allow(dead_code)]
pub struct Compiled {
    pub raw: Vec<String>,
    pub entries: Vec<Entry>,
    /// The list alone (`CompiledList::first_match`).
    pub list: CompiledList,
    /// The team's controls with the list as their MCP allowlist.
    pub admin: CompiledAdmin,
    /// Auto-run on, so a decision reaches the allowlist.
    pub user: CompiledUser,
}

/// [`allowlist`]`(n)` parsed and compiled.
pub fn compiled(n: usize) -> Compiled {
    let raw = allowlist(n);
    let entries: Vec<Entry> = raw.iter().map(|r| Entry::parse(r).unwrap()).collect();
    let list = CompiledList::new(&raw, &entries);
    let admin = CompiledAdmin::compile(&AdminControls {
        enabled: true,
        mcp_tool_allowlist: raw.clone(),
        ..AdminControls::default()
    })
    .unwrap();
    let user = CompiledUser::compile(&UserSettings {
        use_yolo_mode: true,
        ..UserSettings::default()
    })
    .unwrap();
    Compiled {
        raw,
        entries,
        list,
        admin,
        user,
    }
}

/// The allowlist of `n` entries, in a fixed order: per ten entries, seven exact
/// `srv{i/10}:tool{i}`, one `srvX{i}:*`, one `*:toolY{i}`, one `srvG{i}:get_*`.
/// Each glob sits under its own server, so toolgate's grouping of globs by literal
/// server leaves one glob to try; many globs under one server would be tried in turn.
pub fn allowlist(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 10 {
            0..=6 => format!("srv{}:tool{i}", i / 10),
            7 => format!("srvX{i}:*"),
            8 => format!("*:toolY{i}"),
            _ => format!("srvG{i}:get_*"),
        })
        .collect()
}

/// The last index below `n` of the given kind (`i % 10 == kind`, or `<= 6` for exact).
pub fn last_of(n: usize, exact: bool, kind: usize) -> usize {
    (0..n)
        .rev()
        .find(|i| if exact { i % 10 <= 6 } else { i % 10 == kind })
        .expect("every size holds every kind")
}
