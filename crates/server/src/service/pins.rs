//! Tool pins: a gateway's report of the tools an upstream lists (pinned on first
//! sight when the caller may, a different definition noted as changed), an admin's
//! acceptance of a change or pins set ahead, the team's pin settings, and the stream
//! that tells gateways on every replica to check again. The hash and the description
//! checks are the core's (`toolgate_core::pins`), so every replica decides alike.

use super::{Service, ServiceError, check_id};
use crate::auth::{Action, Principal, Role, authorize};
use crate::hub::PinsChanged;
use crate::store::{PinSettings, PinWrite, SeenTool, StoredPin};
use futures::Stream;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use toolgate_core::pins::{self as core_pins, Finding};

/// The most tools one report or one set of pins may hold.
pub const MAX_TOOLS_PER_CALL: usize = 1_000;
/// The most pins one list returns.
const MAX_LISTED: u32 = 10_000;

/// A tool as an upstream lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSeen {
    pub name: String,
    pub description: Option<String>,
    pub input_schema: Value,
}

/// Where a reported tool stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinState {
    Pinned,
    Changed,
    NotPinned,
}

/// The answer for one reported tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCheck {
    pub name: String,
    pub state: PinState,
    pub sha256: String,
    pub flags: Vec<Finding>,
    /// Whether a gateway may show it.
    pub shown: bool,
}

/// A definition as recorded, read back for people.
#[derive(Debug, Clone, PartialEq)]
pub struct DefinitionView {
    pub sha256: String,
    pub definition: Value,
    pub flags: Vec<Finding>,
    pub at_ms: i64,
    pub by: String,
}

/// A pin as admins see it: both definitions, their flags and the diff.
#[derive(Debug, Clone, PartialEq)]
pub struct PinView {
    pub server: String,
    pub tool: String,
    pub pinned: DefinitionView,
    pub reviewed: bool,
    pub changed: Option<DefinitionView>,
    pub diff: Vec<String>,
}

/// One event of `WatchPins`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinsEvent {
    /// The team's pins or pin settings changed (the server, when known).
    Changed(String),
    Heartbeat,
}

/// What woke a `WatchPins` stream.
enum PinWake {
    /// Another team's notice.
    Other,
    Changed,
    Tick,
    Stopping,
}

/// The hex SHA-256 of a canonical definition.
pub fn pin_hash(definition: &Value) -> String {
    hex::encode(Sha256::digest(
        core_pins::canonical_text(definition).as_bytes(),
    ))
}

/// A server id or tool name as policy entries use them, and nothing a person would
/// read otherwise: no control, invisible or bidirectional character.
fn check_name(field: &str, name: &str) -> Result<(), ServiceError> {
    if crate::policy::validate_call_name(name).is_err() {
        return Err(ServiceError::invalid(
            field,
            format!(
                "{name:?} is not a valid MCP server or tool name: 1 to {} characters, no `:` or `*`, not only whitespace",
                core_pins::MAX_TOOL_NAME_CHARS
            ),
        ));
    }
    if name
        .chars()
        .any(|c| c.is_control() || core_pins::is_bidi(c) || core_pins::is_invisible(c))
    {
        return Err(ServiceError::invalid(
            field,
            format!(
                "{name:?} holds a control, invisible or bidirectional character: give the name as policy entries write it"
            ),
        ));
    }
    Ok(())
}

fn check_count(field: &str, n: usize) -> Result<(), ServiceError> {
    if n > MAX_TOOLS_PER_CALL {
        return Err(ServiceError::invalid(
            field,
            format!("{n} tools, more than {MAX_TOOLS_PER_CALL}: send them in parts"),
        ));
    }
    Ok(())
}

fn view_of(text: &crate::store::PinnedText) -> Result<DefinitionView, ServiceError> {
    let definition: Value = serde_json::from_str(&text.definition)
        .map_err(|e| ServiceError::Internal(format!("a stored pin does not decode: {e}")))?;
    Ok(DefinitionView {
        flags: core_pins::check_definition(&definition),
        sha256: text.sha256.clone(),
        definition,
        at_ms: text.at_ms,
        by: text.by.clone(),
    })
}

fn pin_view(pin: &StoredPin) -> Result<PinView, ServiceError> {
    let pinned = view_of(&pin.pinned)?;
    let changed = pin.changed.as_ref().map(view_of).transpose()?;
    let diff = changed
        .as_ref()
        .map(|c| core_pins::diff(&pinned.definition, &c.definition))
        .unwrap_or_default();
    Ok(PinView {
        server: pin.server.clone(),
        tool: pin.tool.clone(),
        pinned,
        reviewed: pin.reviewed,
        changed,
        diff,
    })
}

/// Whether `p` is the team's admin (or an operator): their gateway's first sight and
/// their pins count as reviewed.
fn is_admin(p: &Principal) -> bool {
    matches!(p.role, Role::Admin | Role::Operator)
}

impl Service {
    /// A gateway's report of `server`'s tools for `team`: what is new is pinned when
    /// the caller may pin first, what differs is noted as changed; each tool's
    /// state, flags and whether it may be shown, in the order given. A definition
    /// past the size limit is never stored, and never shown.
    pub async fn check_tools(
        &self,
        p: &Principal,
        team: &str,
        server: &str,
        tools: Vec<ToolSeen>,
    ) -> Result<Vec<ToolCheck>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::ReadTeam)?;
        check_name("server", server)?;
        check_count("tools", tools.len())?;
        let settings = self.store.get_pin_settings(team).await?;
        let mut seen = Vec::with_capacity(tools.len());
        let mut checks = Vec::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            check_name(&format!("tools[{i}].name"), &tool.name)?;
            let definition =
                core_pins::definition(&tool.name, tool.description.as_deref(), &tool.input_schema);
            let text = core_pins::canonical_text(&definition);
            let sha256 = pin_hash(&definition);
            let flags = core_pins::check_definition(&definition);
            if text.len() <= core_pins::MAX_DEFINITION_BYTES
                && !seen.iter().any(|s: &SeenTool| s.tool == tool.name)
            {
                seen.push(SeenTool {
                    tool: tool.name.clone(),
                    sha256: sha256.clone(),
                    definition: text,
                });
            }
            checks.push(ToolCheck {
                name: tool.name.clone(),
                state: PinState::NotPinned,
                sha256,
                flags,
                shown: false,
            });
        }
        let pin_first = is_admin(p) || settings.members_pin_first;
        // read first: the usual report changes nothing, and then writes nothing (a
        // store that cannot take writes still answers it)
        let known = self
            .store
            .list_pins(team, Some(server), false, MAX_LISTED)
            .await?;
        let to_write = seen
            .iter()
            .any(|s| match known.iter().find(|k| k.tool == s.tool) {
                None => pin_first,
                Some(k) => k.pinned.sha256 != s.sha256 && k.changed.is_none(),
            });
        let pins = if to_write {
            let how = PinWrite::Seen {
                pin_first,
                reviewed: is_admin(p),
            };
            let (pins, wrote) = self
                .store
                .write_pins(team, server, &seen, how, &p.name)
                .await?;
            if wrote {
                // this replica's watchers hear it now (others by the store's notice);
                // a report that writes nothing notifies no one, so gateways checking
                // again on a notice come to rest
                self.hub.pins_changed(team);
            }
            pins
        } else {
            known
        };
        for check in &mut checks {
            let Some(pin) = pins.iter().find(|pin| pin.tool == check.name) else {
                continue;
            };
            check.state = if pin.pinned.sha256 == check.sha256 {
                PinState::Pinned
            } else {
                PinState::Changed
            };
            let hidden_as_flagged =
                settings.hide_flagged && !pin.reviewed && !check.flags.is_empty();
            check.shown = check.state == PinState::Pinned && !hidden_as_flagged;
        }
        Ok(checks)
    }

    /// The team's pins (of `server`, or every server's with an empty one).
    pub async fn list_pins(
        &self,
        p: &Principal,
        team: &str,
        server: &str,
        changed_only: bool,
    ) -> Result<Vec<PinView>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::ReadTeam)?;
        let server = if server.is_empty() {
            None
        } else {
            check_name("server", server)?;
            Some(server)
        };
        self.store
            .list_pins(team, server, changed_only, MAX_LISTED)
            .await?
            .iter()
            .map(pin_view)
            .collect()
    }

    /// An admin accepts the definition hashed `sha256` of `tool`: the changed one
    /// they reviewed, or the pinned one (reviewed, so a flagged tool is shown).
    pub async fn accept_pin(
        &self,
        p: &Principal,
        team: &str,
        server: &str,
        tool: &str,
        sha256: &str,
    ) -> Result<PinView, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        check_name("server", server)?;
        check_name("tool", tool)?;
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ServiceError::invalid(
                "sha256",
                "must be the 64 hex digits of the definition you reviewed, as `toolgate pins list` shows it",
            ));
        }
        let sha256 = sha256.to_ascii_lowercase();
        let pin = self
            .store
            .accept_pin(team, server, tool, &sha256, &p.name)
            .await?
            .ok_or_else(|| {
                ServiceError::FailedPrecondition(format!(
                    "{server}:{tool} has no definition hashed {sha256} (it changed again, or was never seen): list the pins again and review what they show now"
                ))
            })?;
        self.hub.pins_changed(team);
        pin_view(&pin)
    }

    /// An admin pins `tools` ahead (policy as code): each replaces any pin of the same
    /// tool and counts as reviewed.
    pub async fn set_pins(
        &self,
        p: &Principal,
        team: &str,
        server: &str,
        tools: Vec<ToolSeen>,
    ) -> Result<Vec<PinView>, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        check_name("server", server)?;
        check_count("tools", tools.len())?;
        let mut seen: Vec<SeenTool> = Vec::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            check_name(&format!("tools[{i}].name"), &tool.name)?;
            if seen.iter().any(|s| s.tool == tool.name) {
                return Err(ServiceError::invalid(
                    &format!("tools[{i}].name"),
                    format!("{:?} is given twice: pin each tool once", tool.name),
                ));
            }
            let definition =
                core_pins::definition(&tool.name, tool.description.as_deref(), &tool.input_schema);
            let text = core_pins::canonical_text(&definition);
            if text.len() > core_pins::MAX_DEFINITION_BYTES {
                return Err(ServiceError::invalid(
                    &format!("tools[{i}]"),
                    format!(
                        "the definition is {} bytes, more than {}: a tool this large is not pinned",
                        text.len(),
                        core_pins::MAX_DEFINITION_BYTES
                    ),
                ));
            }
            seen.push(SeenTool {
                tool: tool.name.clone(),
                sha256: pin_hash(&definition),
                definition: text,
            });
        }
        let (pins, _) = self
            .store
            .write_pins(team, server, &seen, PinWrite::Set, &p.name)
            .await?;
        self.hub.pins_changed(team);
        pins.iter().map(pin_view).collect()
    }

    pub async fn pin_settings(
        &self,
        p: &Principal,
        team: &str,
    ) -> Result<PinSettings, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::ReadTeam)?;
        Ok(self.store.get_pin_settings(team).await?)
    }

    pub async fn update_pin_settings(
        &self,
        p: &Principal,
        team: &str,
        settings: PinSettings,
    ) -> Result<PinSettings, ServiceError> {
        let team: &str = &check_id("team_id", team)?;
        authorize(p, team, Action::WriteTeam)?;
        self.store.put_pin_settings(team, settings, &p.name).await?;
        self.hub.pins_changed(team);
        Ok(settings)
    }

    /// An event each time `team`'s pins change here or on another replica (with
    /// heartbeats between); ends with `Unavailable` on shutdown. `server` is what the
    /// caller watches; a notice names only the team, so every change is sent.
    pub fn watch_pins(
        &self,
        p: &Principal,
        team: &str,
        server: &str,
    ) -> Result<impl Stream<Item = Result<PinsEvent, ServiceError>> + use<>, ServiceError> {
        let team: String = check_id("team_id", team)?.into_owned();
        authorize(p, &team, Action::ReadTeam)?;
        if !server.is_empty() {
            check_name("server", server)?;
        }
        let server = server.to_owned();
        let mut notices = self.hub.pin_notices();
        let heartbeat = self.heartbeat;
        let shutdown = self.shutdown.clone();
        let team_key: Arc<str> = Arc::from(team.as_str());
        Ok(async_stream::try_stream! {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
            loop {
                let woke = tokio::select! {
                    n = notices.recv() => match n {
                        Ok(PinsChanged::Team(t)) if t != team_key => PinWake::Other,
                        Ok(_) | Err(RecvError::Lagged(_)) => PinWake::Changed,
                        Err(RecvError::Closed) => PinWake::Stopping,
                    },
                    _ = tick.tick() => PinWake::Tick,
                    () = shutdown.cancelled() => PinWake::Stopping,
                };
                let event = match woke {
                    PinWake::Other => continue,
                    PinWake::Changed => PinsEvent::Changed(server.clone()),
                    PinWake::Tick => PinsEvent::Heartbeat,
                    PinWake::Stopping => Err(ServiceError::Unavailable(
                        "the server is stopping: call again (another replica, or this one once it restarts)".into(),
                    ))?,
                };
                yield event;
            }
        })
    }
}
