//! `admin diff|apply` of a `kind: pins` document: a team's pinned tool definitions
//! and pin settings as code, diffed against the server's pins and applied with
//! `SetPins` and `UpdatePinSettings`. A pin the document does not name is left as
//! it is (pins are set ahead, never removed from a file).

use super::admin::changes::Change;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::pins::{FileTool, MAX_PINS_FILE_BYTES};
use super::{EXIT_DIFFERENT, usage};
use crate::proto::v1 as pb;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The most servers one document pins.
const MAX_SERVERS: usize = 100;
/// The most tools of one server (the server's own limit for `SetPins`).
const MAX_TOOLS: usize = 1000;

/// A `kind: pins` document.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinsDoc {
    #[allow(dead_code)]
    kind: String,
    team: String,
    /// Left out: the team's settings are not changed.
    #[serde(default)]
    settings: Option<SettingsDoc>,
    #[serde(default)]
    servers: Vec<ServerDoc>,
}

#[derive(Debug, Deserialize, Serialize, PartialEq, Eq, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct SettingsDoc {
    members_pin_first: bool,
    hide_flagged: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerDoc {
    server: String,
    tools: Vec<FileTool>,
}

/// Whether the YAML `text` is a `kind: pins` document (anything else is read as a
/// team policy, which says what is wrong with it). Read from the text's top-level
/// `kind:` line, so nothing parses a hostile text before the reader meant for it.
pub(super) fn is_pins_doc(text: &str) -> bool {
    text.lines().any(|line| {
        let Some(value) = line.strip_prefix("kind:") else {
            return false;
        };
        let value = value.split(" #").next().unwrap_or_default().trim();
        matches!(value, "pins" | "\"pins\"" | "'pins'")
    })
}

/// Reads the document at `path`, refusing what `SetPins` would (each problem named
/// by its place in the file).
fn read(path: &Path, text: &str) -> anyhow::Result<PinsDoc> {
    let file = path.display();
    let doc: PinsDoc = serde_norway::from_str(text).map_err(|e| {
        usage(format!(
            "{file}: {e}: a pins document is `kind: pins`, `team`, optional `settings: {{members_pin_first, hide_flagged}}` and `servers: [{{server, tools}}]`, the tools as the server's tools/list gives them"
        ))
    })?;
    if doc.servers.len() > MAX_SERVERS {
        return Err(usage(format!(
            "{file}: servers: {} servers, more than {MAX_SERVERS}: split the document",
            doc.servers.len()
        )));
    }
    let mut seen = BTreeSet::new();
    for (i, s) in doc.servers.iter().enumerate() {
        if !seen.insert(s.server.as_str()) {
            return Err(usage(format!(
                "{file}: servers[{i}].server: {:?} is named twice: keep one entry per server",
                s.server
            )));
        }
        if s.tools.len() > MAX_TOOLS {
            return Err(usage(format!(
                "{file}: servers[{i}].tools: {} tools, more than {MAX_TOOLS}: pin fewer at once",
                s.tools.len()
            )));
        }
        let mut names = BTreeSet::new();
        for (j, t) in s.tools.iter().enumerate() {
            if !names.insert(t.name.as_str()) {
                return Err(usage(format!(
                    "{file}: servers[{i}].tools[{j}].name: {:?} is listed twice: keep one definition per tool",
                    t.name
                )));
            }
        }
    }
    Ok(doc)
}

/// What applying the document changes: pins added or replaced, settings set.
async fn diff(
    c: &Clients,
    doc: &PinsDoc,
) -> anyhow::Result<(Vec<Change>, Option<pb::PinSettings>)> {
    let mut changes = Vec::new();
    for s in &doc.servers {
        let pins = c
            .pins()
            .list_pins(pb::ListPinsRequest {
                team_id: doc.team.clone(),
                server: s.server.clone(),
                changed_only: false,
            })
            .await
            .map_err(rpc_error)?
            .into_inner()
            .pins;
        for tool in &s.tools {
            let field = format!("pins.{}.{}", s.server, tool.name);
            let want = tool.sha256();
            let pinned = pins
                .iter()
                .find(|p| p.tool == tool.name)
                .and_then(|p| p.pinned.as_ref())
                .map(|p| p.sha256.clone());
            match pinned {
                None => changes.push(Change::Add {
                    field,
                    value: Value::String(want),
                }),
                Some(have) if have != want => changes.push(Change::Set {
                    field,
                    from: Value::String(have),
                    to: Value::String(want),
                }),
                Some(_) => {}
            }
        }
    }
    let mut settings = None;
    if let Some(wanted) = doc.settings {
        let current = c
            .pins()
            .get_pin_settings(pb::GetPinSettingsRequest {
                team_id: doc.team.clone(),
            })
            .await
            .map_err(rpc_error)?
            .into_inner()
            .settings
            .unwrap_or_default();
        for (name, have, want) in [
            (
                "members_pin_first",
                current.members_pin_first,
                wanted.members_pin_first,
            ),
            ("hide_flagged", current.hide_flagged, wanted.hide_flagged),
        ] {
            if have != want {
                changes.push(Change::Set {
                    field: format!("pin_settings.{name}"),
                    from: Value::Bool(have),
                    to: Value::Bool(want),
                });
            }
        }
        if current.members_pin_first != wanted.members_pin_first
            || current.hide_flagged != wanted.hide_flagged
        {
            settings = Some(pb::PinSettings {
                members_pin_first: wanted.members_pin_first,
                hide_flagged: wanted.hide_flagged,
            });
        }
    }
    Ok((changes, settings))
}

/// `admin diff|apply` of a pins document: the diff, then (for `apply` without
/// `--dry-run`) the changed pins and settings written.
pub(super) async fn run(
    c: &Clients,
    path: &Path,
    text: &str,
    apply: bool,
    dry_run: bool,
) -> anyhow::Result<i32> {
    let doc = read(path, text)?;
    let (changes, settings) = diff(c, &doc).await?;
    let mut report = PinsReport {
        team: doc.team.clone(),
        changes,
        applied: false,
        dry_run,
    };
    if !apply || dry_run || report.changes.is_empty() {
        c.out.print(&report);
        return Ok(if !apply && !report.changes.is_empty() {
            EXIT_DIFFERENT
        } else {
            0
        });
    }
    for s in &doc.servers {
        let changed: Vec<pb::ToolDefinition> = s
            .tools
            .iter()
            .filter(|t| {
                let field = format!("pins.{}.{}", s.server, t.name);
                report.changes.iter().any(|c| c.field() == field)
            })
            .map(FileTool::to_pb)
            .collect();
        if changed.is_empty() {
            continue;
        }
        c.pins()
            .set_pins(pb::SetPinsRequest {
                team_id: doc.team.clone(),
                server: s.server.clone(),
                tools: changed,
            })
            .await
            .map_err(rpc_error)?;
    }
    if let Some(settings) = settings {
        c.pins()
            .update_pin_settings(pb::UpdatePinSettingsRequest {
                team_id: doc.team.clone(),
                settings: Some(settings),
            })
            .await
            .map_err(rpc_error)?;
    }
    report.applied = true;
    c.out.print(&report);
    Ok(0)
}

/// What a pins document changes, and whether it was applied.
#[derive(Debug, Serialize)]
struct PinsReport {
    team: String,
    changes: Vec<Change>,
    applied: bool,
    dry_run: bool,
}

impl Render for PinsReport {
    fn human(&self) -> String {
        let team = &self.team;
        let mut out = if self.changes.is_empty() {
            format!("pins of team {team}: no changes\n")
        } else {
            format!("pins of team {team}:\n")
        };
        for change in &self.changes {
            out.push_str(&change.line());
            out.push('\n');
        }
        if self.applied {
            out.push_str(&format!("applied: team {team}'s pins are set\n"));
        } else if self.dry_run {
            out.push_str("dry run: nothing applied\n");
        }
        out
    }
}

/// The document's text, read within the pins file's bound.
pub(super) fn read_text(path: &Path) -> anyhow::Result<String> {
    let bytes = toolgate_files::read_regular(path, MAX_PINS_FILE_BYTES)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    String::from_utf8(bytes).map_err(|_| usage(format!("{}: is not UTF-8 text", path.display())))
}
