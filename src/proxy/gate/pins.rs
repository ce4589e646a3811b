//! The gate's side of tool pins: the pin file looked at for an admin's re-pin, or the
//! server's pins watched per team, and what they hold back of the upstream's tools.

use super::{BACKOFF_MAX, BACKOFF_MIN, Gate, Held, PinKeeper};
use crate::grpc::client::{PinStatus, ToolDefinition};
use rmcp::model::Tool;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use toolgate_core::backoff::Backoff;
use tracing::warn;

/// How often the pin file is looked at for an admin's re-pin.
const PIN_FILE_POLL: Duration = Duration::from_secs(1);

impl Gate {
    /// Pins tools as `pins` says; a pin file is looked at every `PIN_FILE_POLL` for
    /// an admin's re-pin, the server's pins are watched per team (`follow`).
    #[must_use]
    pub fn with_pins(self: Arc<Self>, pins: PinKeeper) -> Arc<Self> {
        let mut gate = Arc::try_unwrap(self).unwrap_or_else(|_| unreachable!("not shared yet"));
        let path = match &pins {
            PinKeeper::File(file) => file.path().to_path_buf(),
            PinKeeper::Off | PinKeeper::Server => {
                gate.pins = pins;
                return Arc::new(gate);
            }
        };
        gate.pins = pins;
        let moved = gate.pins_moved.clone();
        tokio::spawn(async move {
            let stamp = |p: &std::path::Path| {
                std::fs::metadata(p)
                    .ok()
                    .map(|m| (m.modified().ok(), m.len()))
            };
            let mut last = stamp(&path);
            loop {
                tokio::time::sleep(PIN_FILE_POLL).await;
                let now = stamp(&path);
                if now != last {
                    last = now;
                    moved.send_modify(|g| *g += 1);
                }
                if moved.is_closed() {
                    return;
                }
            }
        });
        Arc::new(gate)
    }

    /// Why `tool` is held back for `team`, if it is (as of the last check).
    pub fn held(&self, team: &str, tool: &str) -> Option<Held> {
        self.held.get(team).and_then(|h| h.get(tool).copied())
    }

    /// Whether the pins are kept in the server's store.
    pub fn pins_on_server(&self) -> bool {
        matches!(self.pins, PinKeeper::Server)
    }

    /// Watches `team`'s pins on the server (once per team, for the proxy's life):
    /// each change bumps `pins_moved`, so every view of the team is checked again.
    pub(super) fn watch_pins(self: &Arc<Self>, team: &str) {
        if !self.pins_on_server() || self.pin_watches.insert(team.to_owned(), ()).is_some() {
            return;
        }
        let gate = Arc::clone(self);
        let team = team.to_owned();
        tokio::spawn(async move {
            let mut backoff = Backoff::new(BACKOFF_MIN, BACKOFF_MAX);
            loop {
                match gate.client.watch_pins(&team, &gate.server_id).await {
                    Ok(mut stream) => {
                        // (re)opened: a change may have been missed meanwhile
                        gate.pins_moved.send_modify(|g| *g += 1);
                        loop {
                            match stream.next().await {
                                Ok(Some(true)) => {
                                    backoff.reset();
                                    gate.pins_moved.send_modify(|g| *g += 1);
                                }
                                Ok(Some(false)) => backoff.reset(),
                                Ok(None) => break,
                                Err(e) => {
                                    warn!(team = %team, error = %e, "pin watch ended");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => warn!(team = %team, error = %e, "pin watch refused"),
                }
                tokio::time::sleep(backoff.next_wait()).await;
            }
        });
    }

    /// What the pins hold back of `tools` for `team`: the file's or the server's
    /// answer. `Err` (nothing may be shown) when the pins cannot be read.
    pub(super) async fn held_back(
        &self,
        team: &str,
        tools: &[Tool],
    ) -> Result<BTreeMap<String, Held>, String> {
        match &self.pins {
            PinKeeper::Off => Ok(BTreeMap::new()),
            PinKeeper::File(pins) => Ok(pins
                .check(team, tools)?
                .into_iter()
                .map(|name| (name, Held::Changed))
                .collect()),
            PinKeeper::Server => {
                let definitions: Vec<ToolDefinition> = tools
                    .iter()
                    .map(|t| ToolDefinition {
                        name: t.name.to_string(),
                        description: t.description.as_deref().map(str::to_owned),
                        input_schema: serde_json::Value::Object((*t.input_schema).clone()),
                    })
                    .collect();
                let checks = self
                    .client
                    .check_tools(team, &self.server_id, &definitions)
                    .await
                    .map_err(|e| format!("toolgate could not check the tools' pins: {e}"))?;
                let mut held = BTreeMap::new();
                for check in checks {
                    if !check.flags.is_empty() {
                        warn!(team = %team, server = %self.server_id, tool = %check.name, flags = ?check.flags, "upstream tool description flagged");
                    }
                    let why = match (check.status, check.shown) {
                        (PinStatus::Pinned, true) => continue,
                        (PinStatus::Pinned, false) => Held::Flagged,
                        (PinStatus::Changed, _) => Held::Changed,
                        (PinStatus::NotPinned, _) => Held::NotPinned,
                    };
                    held.insert(check.name, why);
                }
                Ok(held)
            }
        }
    }
}
