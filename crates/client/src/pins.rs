//! Tool pins as the gateway uses them: the report of an upstream's tools
//! (`CheckTools`) and the stream that says when to report again (`WatchPins`).

use super::{Client, ClientError, status_error};
use crate::proto::v1 as pb;
use std::time::Duration;

/// A tool as an upstream lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: Option<String>,
    /// A JSON object (anything else is sent as no schema).
    pub input_schema: serde_json::Value,
}

/// Where a reported tool stands, as the server says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinStatus {
    Pinned,
    /// Its definition differs from the pinned one.
    Changed,
    /// Not pinned, and this caller may not pin it first.
    NotPinned,
}

/// The server's answer for one reported tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinCheck {
    pub name: String,
    pub status: PinStatus,
    /// Whether the gateway may show it.
    pub shown: bool,
    /// The description checks' findings, as `kind in place: why`.
    pub flags: Vec<String>,
}

impl Client {
    /// Reports `server`'s tools for `team`; an answer per tool, in their order.
    pub async fn check_tools(
        &self,
        team: &str,
        server: &str,
        tools: &[ToolDefinition],
    ) -> Result<Vec<PinCheck>, ClientError> {
        let request = pb::CheckToolsRequest {
            team_id: team.to_owned(),
            server: server.to_owned(),
            tools: tools
                .iter()
                .map(|t| pb::ToolDefinition {
                    name: t.name.clone(),
                    description: t.description.clone(),
                    input_schema: match &t.input_schema {
                        serde_json::Value::Object(map) => {
                            Some(toolgate_proto::json::object_to_pb(map))
                        }
                        _ => None,
                    },
                })
                .collect(),
        };
        let server_addr = self.config.server.clone();
        let deadline = self.config.deadline;
        let mut stub = self.pin_service();
        let answer = match tokio::time::timeout(deadline, stub.check_tools(request)).await {
            Err(_) => {
                return Err(ClientError::Timeout {
                    server: server_addr,
                    ms: deadline.as_millis(),
                });
            }
            Ok(Err(status)) => return Err(status_error(server_addr, status)),
            Ok(Ok(r)) => r.into_inner(),
        };
        if answer.checks.len() != tools.len() {
            return Err(ClientError::Malformed(format!(
                "CheckTools answered {} tools for the {} sent",
                answer.checks.len(),
                tools.len()
            )));
        }
        Ok(answer
            .checks
            .into_iter()
            .map(|c| PinCheck {
                status: match pb::PinState::try_from(c.state) {
                    Ok(pb::PinState::Pinned) => PinStatus::Pinned,
                    Ok(pb::PinState::Changed) => PinStatus::Changed,
                    // an unknown state shows nothing (fail closed)
                    _ => PinStatus::NotPinned,
                },
                shown: c.shown,
                flags: c
                    .flags
                    .into_iter()
                    .map(|f| format!("{} in {}: {}", f.kind, f.place, f.why))
                    .collect(),
                name: c.name,
            })
            .collect())
    }

    /// `WatchPins` for `team`'s `server`. Long-lived: the deadline bounds only its
    /// opening.
    pub async fn watch_pins(&self, team: &str, server: &str) -> Result<PinWatch, ClientError> {
        let mut request = tonic::Request::new(pb::WatchPinsRequest {
            team_id: team.to_owned(),
            server: server.to_owned(),
        });
        // no grpc-timeout: the server would end the stream at it
        request.set_timeout(Duration::from_secs(365 * 24 * 3600));
        let server_addr = self.config.server.clone();
        let deadline = self.config.deadline;
        let mut stub = self.pin_service();
        let stream = match tokio::time::timeout(deadline, stub.watch_pins(request)).await {
            Err(_) => {
                return Err(ClientError::Timeout {
                    server: server_addr,
                    ms: deadline.as_millis(),
                });
            }
            Ok(Err(status)) => return Err(status_error(server_addr, status)),
            Ok(Ok(r)) => r.into_inner(),
        };
        Ok(PinWatch {
            stream,
            server: server_addr,
        })
    }
}

/// An open `WatchPins` stream.
pub struct PinWatch {
    stream: tonic::Streaming<pb::WatchPinsResponse>,
    server: String,
}

impl PinWatch {
    /// The next event: `true` when the pins changed, `false` for a heartbeat; `None`
    /// when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<bool>, ClientError> {
        use pb::watch_pins_response::Event;
        loop {
            let Some(event) = self
                .stream
                .message()
                .await
                .map_err(|s| status_error(self.server.clone(), s))?
            else {
                return Ok(None);
            };
            return Ok(Some(match event.event {
                Some(Event::Heartbeat(_)) => false,
                Some(Event::Changed(_)) => true,
                // a kind this build does not know: checking again is harmless
                None => continue,
            }));
        }
    }
}
