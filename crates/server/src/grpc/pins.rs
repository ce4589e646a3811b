//! `PinService`: tool pins over the service's pin methods, and the conversions of a
//! pin and a tool definition.

use super::{Api, principal};
use crate::proto::v1 as pb;
use crate::service::{
    DefinitionView, PinSettings, PinState, PinView, PinsEvent, ServiceError, ToolSeen,
};
use futures::{Stream, StreamExt as _};
use pb::pin_service_server::PinService;
use std::pin::Pin;
use tonic::{Request, Response, Status};
use toolgate_core::pins::Finding;
use toolgate_proto::convert::timestamp;
use toolgate_proto::json::{object_from_pb, object_to_pb};

pub use pb::pin_service_server::PinServiceServer;

fn tools_from_pb(tools: Vec<pb::ToolDefinition>) -> Result<Vec<ToolSeen>, ServiceError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let input_schema = match &t.input_schema {
                Some(s) => serde_json::Value::Object(object_from_pb(
                    s,
                    &format!("tools[{i}].input_schema"),
                )?),
                None => serde_json::Value::Null,
            };
            Ok(ToolSeen {
                name: t.name,
                description: t.description,
                input_schema,
            })
        })
        .collect()
}

fn flags_to_pb(flags: &[Finding]) -> Vec<pb::DescriptionFlag> {
    flags
        .iter()
        .map(|f| pb::DescriptionFlag {
            kind: f.kind.clone(),
            place: f.place.clone(),
            why: f.why.clone(),
        })
        .collect()
}

fn definition_to_pb(d: DefinitionView) -> pb::PinnedDefinition {
    let definition = match &d.definition {
        serde_json::Value::Object(map) => Some(object_to_pb(map)),
        _ => None,
    };
    pb::PinnedDefinition {
        flags: flags_to_pb(&d.flags),
        sha256: d.sha256,
        definition,
        at: timestamp(d.at_ms),
        by: d.by,
    }
}

fn pin_to_pb(v: PinView) -> pb::ToolPin {
    pb::ToolPin {
        server: v.server,
        tool: v.tool,
        pinned: Some(definition_to_pb(v.pinned)),
        changed: v.changed.map(definition_to_pb),
        diff: v.diff,
    }
}

fn settings_to_pb(s: PinSettings) -> pb::PinSettings {
    pb::PinSettings {
        members_pin_first: s.members_pin_first,
        hide_flagged: s.hide_flagged,
    }
}

type PinEvents = Pin<Box<dyn Stream<Item = Result<pb::WatchPinsResponse, Status>> + Send>>;

#[tonic::async_trait]
impl PinService for Api {
    async fn check_tools(
        &self,
        req: Request<pb::CheckToolsRequest>,
    ) -> Result<Response<pb::CheckToolsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let tools = tools_from_pb(r.tools)?;
        let checks = self
            .service
            .check_tools(&p, &r.team_id, &r.server, tools)
            .await?;
        Ok(Response::new(pb::CheckToolsResponse {
            checks: checks
                .into_iter()
                .map(|c| pb::ToolCheck {
                    state: match c.state {
                        PinState::Pinned => pb::PinState::Pinned,
                        PinState::Changed => pb::PinState::Changed,
                        PinState::NotPinned => pb::PinState::NotPinned,
                    } as i32,
                    flags: flags_to_pb(&c.flags),
                    name: c.name,
                    sha256: c.sha256,
                    shown: c.shown,
                })
                .collect(),
        }))
    }

    async fn list_pins(
        &self,
        req: Request<pb::ListPinsRequest>,
    ) -> Result<Response<pb::ListPinsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let pins = self
            .service
            .list_pins(&p, &r.team_id, &r.server, r.changed_only)
            .await?;
        Ok(Response::new(pb::ListPinsResponse {
            pins: pins.into_iter().map(pin_to_pb).collect(),
        }))
    }

    async fn accept_pin(
        &self,
        req: Request<pb::AcceptPinRequest>,
    ) -> Result<Response<pb::AcceptPinResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let pin = self
            .service
            .accept_pin(&p, &r.team_id, &r.server, &r.tool, &r.sha256)
            .await?;
        Ok(Response::new(pb::AcceptPinResponse {
            pin: Some(pin_to_pb(pin)),
        }))
    }

    async fn set_pins(
        &self,
        req: Request<pb::SetPinsRequest>,
    ) -> Result<Response<pb::SetPinsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let tools = tools_from_pb(r.tools)?;
        let pins = self
            .service
            .set_pins(&p, &r.team_id, &r.server, tools)
            .await?;
        Ok(Response::new(pb::SetPinsResponse {
            pins: pins.into_iter().map(pin_to_pb).collect(),
        }))
    }

    async fn get_pin_settings(
        &self,
        req: Request<pb::GetPinSettingsRequest>,
    ) -> Result<Response<pb::GetPinSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let settings = self.service.pin_settings(&p, &r.team_id).await?;
        Ok(Response::new(pb::GetPinSettingsResponse {
            settings: Some(settings_to_pb(settings)),
        }))
    }

    async fn update_pin_settings(
        &self,
        req: Request<pb::UpdatePinSettingsRequest>,
    ) -> Result<Response<pb::UpdatePinSettingsResponse>, Status> {
        let p = principal(&req)?;
        let r = req.into_inner();
        let Some(s) = r.settings else {
            return Err(ServiceError::InvalidArgument {
                field: "settings".into(),
                message: "missing: give the whole settings (members_pin_first, hide_flagged)"
                    .into(),
            }
            .into());
        };
        let settings = PinSettings {
            members_pin_first: s.members_pin_first,
            hide_flagged: s.hide_flagged,
        };
        let settings = self
            .service
            .update_pin_settings(&p, &r.team_id, settings)
            .await?;
        Ok(Response::new(pb::UpdatePinSettingsResponse {
            settings: Some(settings_to_pb(settings)),
        }))
    }

    type WatchPinsStream = PinEvents;

    async fn watch_pins(
        &self,
        req: Request<pb::WatchPinsRequest>,
    ) -> Result<Response<Self::WatchPinsStream>, Status> {
        use pb::watch_pins_response::Event;
        let p = principal(&req)?;
        let r = req.into_inner();
        // counted with the principal's other streams while open
        let slot = self.open_stream(&p)?;
        let stream = self.service.watch_pins(&p, &r.team_id, &r.server)?;
        let stream = stream.map(move |e| {
            let _held = &slot;
            let event = match e? {
                PinsEvent::Changed(server) => Event::Changed(pb::PinsChanged { server }),
                PinsEvent::Heartbeat => Event::Heartbeat(pb::Heartbeat {
                    at: Some(std::time::SystemTime::now().into()),
                }),
            };
            Ok(pb::WatchPinsResponse { event: Some(event) })
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
