//! `toolgate pins list|accept|apply|settings`: the team's tool pins in the server's
//! store, as `toolgate proxy --pin-tools` records them: changed definitions with
//! their diff, an admin's acceptance of what they reviewed, pins set ahead from a
//! file, and the team's pin settings.

use super::args::PinsCommand;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::usage;
use crate::proto::v1 as pb;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use std::path::Path;
use toolgate_proto::json::{object_from_pb, object_to_pb};

/// The largest pins file read.
pub(super) const MAX_PINS_FILE_BYTES: usize = 16 * 1024 * 1024;

pub(super) async fn pins(c: &Clients, cmd: PinsCommand) -> anyhow::Result<i32> {
    match cmd {
        PinsCommand::List {
            team,
            server_id: server,
            changed,
        } => {
            let r = c
                .pins()
                .list_pins(pb::ListPinsRequest {
                    team_id: team,
                    server: server.unwrap_or_default(),
                    changed_only: changed,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Listed {
                pins: r.pins.into_iter().map(PinRow::from).collect(),
            });
        }
        PinsCommand::Accept {
            team,
            server_id: server,
            tool,
            sha256,
        } => {
            // what is accepted is what is shown: the hash of the definition printed
            let listed = c
                .pins()
                .list_pins(pb::ListPinsRequest {
                    team_id: team.clone(),
                    server: server.clone(),
                    changed_only: false,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            let Some(pin) = listed.pins.into_iter().find(|p| p.tool == tool) else {
                return Err(usage(format!(
                    "{server}:{tool}: no such pin of team {team}: `toolgate pins list --team {team} --server-id {server}` lists them"
                )));
            };
            let row = PinRow::from(pin);
            let sha256 = match (sha256, &row.changed) {
                (Some(given), _) => given,
                (None, Some(changed)) => changed.sha256.clone(),
                (None, None) => row
                    .pinned
                    .as_ref()
                    .map(|p| p.sha256.clone())
                    .unwrap_or_default(),
            };
            let r = c
                .pins()
                .accept_pin(pb::AcceptPinRequest {
                    team_id: team,
                    server,
                    tool,
                    sha256,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Accepted {
                reviewed: row,
                now: r.pin.map(PinRow::from),
            });
        }
        PinsCommand::Apply { team, file } => {
            let (server, tools) = read_pins_file(&file)?;
            let r = c
                .pins()
                .set_pins(pb::SetPinsRequest {
                    team_id: team,
                    server,
                    tools,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Applied {
                pinned: r.pins.into_iter().map(PinRow::from).collect(),
            });
        }
        PinsCommand::Settings {
            team,
            members_pin_first,
            hide_flagged,
        } => {
            let current = c
                .pins()
                .get_pin_settings(pb::GetPinSettingsRequest {
                    team_id: team.clone(),
                })
                .await
                .map_err(rpc_error)?
                .into_inner()
                .settings
                .unwrap_or_default();
            let settings = if members_pin_first.is_none() && hide_flagged.is_none() {
                current
            } else {
                let wanted = pb::PinSettings {
                    members_pin_first: members_pin_first.unwrap_or(current.members_pin_first),
                    hide_flagged: hide_flagged.unwrap_or(current.hide_flagged),
                };
                c.pins()
                    .update_pin_settings(pb::UpdatePinSettingsRequest {
                        team_id: team,
                        settings: Some(wanted),
                    })
                    .await
                    .map_err(rpc_error)?
                    .into_inner()
                    .settings
                    .unwrap_or_default()
            };
            c.out.print(&Settings {
                members_pin_first: settings.members_pin_first,
                hide_flagged: settings.hide_flagged,
            });
        }
    }
    Ok(0)
}

/// A pins file: the MCP server id and its tools as `tools/list` lists them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PinsFile {
    server: String,
    tools: Vec<FileTool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct FileTool {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) input_schema: Option<serde_json::Map<String, serde_json::Value>>,
    // what else a tools/list result may hold is not pinned
    #[serde(default, rename = "title")]
    _title: IgnoredAny,
    #[serde(default, rename = "outputSchema")]
    _output_schema: IgnoredAny,
    #[serde(default, rename = "annotations")]
    _annotations: IgnoredAny,
    #[serde(default, rename = "_meta")]
    _meta: IgnoredAny,
    #[serde(default, rename = "icons")]
    _icons: IgnoredAny,
}

/// The server id and tools of a pins file (JSON or YAML).
fn read_pins_file(path: &Path) -> anyhow::Result<(String, Vec<pb::ToolDefinition>)> {
    let bytes = toolgate_files::read_regular(path, MAX_PINS_FILE_BYTES)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    let parsed: Result<PinsFile, String> =
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            serde_norway::from_slice(&bytes).map_err(|e| e.to_string())
        } else {
            serde_json::from_slice(&bytes).map_err(|e| e.to_string())
        };
    let file = parsed.map_err(|e| {
        usage(format!(
            "{}: {e}: a pins file is {{\"server\": ID, \"tools\": [...]}}, the tools as the server's tools/list gives them",
            path.display()
        ))
    })?;
    Ok((
        file.server,
        file.tools.iter().map(FileTool::to_pb).collect(),
    ))
}

impl FileTool {
    pub(super) fn to_pb(&self) -> pb::ToolDefinition {
        pb::ToolDefinition {
            name: self.name.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.as_ref().map(object_to_pb),
        }
    }

    /// The hash the server pins this definition under.
    pub(super) fn sha256(&self) -> String {
        let schema = self
            .input_schema
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        crate::service::pin_hash(&toolgate_core::pins::definition(
            &self.name,
            self.description.as_deref(),
            &schema,
        ))
    }
}

/// A definition as shown: its hash, its flags, who recorded it.
#[derive(Debug, Serialize)]
struct DefinitionRow {
    sha256: String,
    definition: serde_json::Value,
    flags: Vec<String>,
    by: String,
}

impl From<pb::PinnedDefinition> for DefinitionRow {
    fn from(d: pb::PinnedDefinition) -> Self {
        Self {
            definition: d
                .definition
                .as_ref()
                .and_then(|s| object_from_pb(s, "definition").ok())
                .map(serde_json::Value::Object)
                .unwrap_or_default(),
            flags: d
                .flags
                .into_iter()
                .map(|f| format!("{} in {}: {}", f.kind, f.place, f.why))
                .collect(),
            sha256: d.sha256,
            by: d.by,
        }
    }
}

/// One pin as listed.
#[derive(Debug, Serialize)]
struct PinRow {
    server: String,
    tool: String,
    pinned: Option<DefinitionRow>,
    changed: Option<DefinitionRow>,
    diff: Vec<String>,
}

impl From<pb::ToolPin> for PinRow {
    fn from(p: pb::ToolPin) -> Self {
        Self {
            server: p.server,
            tool: p.tool,
            pinned: p.pinned.map(DefinitionRow::from),
            changed: p.changed.map(DefinitionRow::from),
            diff: p.diff,
        }
    }
}

impl PinRow {
    fn lines(&self) -> String {
        let sha = |d: &Option<DefinitionRow>| {
            d.as_ref()
                .map(|d| d.sha256.chars().take(12).collect::<String>())
                .unwrap_or_default()
        };
        let mut out = match &self.changed {
            Some(_) => format!(
                "{}:{}  CHANGED  pinned {}  seen {}  (hidden; its calls ask)\n",
                self.server,
                self.tool,
                sha(&self.pinned),
                sha(&self.changed)
            ),
            None => format!(
                "{}:{}  pinned {}  by {}\n",
                self.server,
                self.tool,
                sha(&self.pinned),
                self.pinned.as_ref().map_or("", |p| p.by.as_str())
            ),
        };
        let flags = self
            .changed
            .as_ref()
            .or(self.pinned.as_ref())
            .map(|d| d.flags.as_slice())
            .unwrap_or_default();
        for flag in flags {
            out.push_str(&format!("    flagged: {flag}\n"));
        }
        for line in &self.diff {
            out.push_str(&format!("    {line}\n"));
        }
        out
    }
}

#[derive(Debug, Serialize)]
struct Listed {
    pins: Vec<PinRow>,
}

impl Render for Listed {
    fn human(&self) -> String {
        if self.pins.is_empty() {
            return "no pins\n".into();
        }
        self.pins.iter().map(PinRow::lines).collect()
    }
}

#[derive(Debug, Serialize)]
struct Accepted {
    reviewed: PinRow,
    now: Option<PinRow>,
}

impl Render for Accepted {
    fn human(&self) -> String {
        let mut out = self.reviewed.lines();
        if let Some(now) = &self.now {
            out.push_str(&format!(
                "accepted {}:{} as {}: gateways show it again\n",
                now.server,
                now.tool,
                now.pinned.as_ref().map_or("", |p| p.sha256.as_str())
            ));
        }
        out
    }
}

#[derive(Debug, Serialize)]
struct Applied {
    pinned: Vec<PinRow>,
}

impl Render for Applied {
    fn human(&self) -> String {
        let mut out = String::new();
        for pin in &self.pinned {
            out.push_str(&pin.lines());
        }
        out.push_str(&format!("pinned {} tools\n", self.pinned.len()));
        out
    }
}

#[derive(Debug, Serialize)]
struct Settings {
    members_pin_first: bool,
    hide_flagged: bool,
}

impl Render for Settings {
    fn human(&self) -> String {
        format!(
            "members_pin_first: {}\nhide_flagged: {}\n",
            self.members_pin_first, self.hide_flagged
        )
    }
}
