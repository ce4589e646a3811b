//! `toolgate sign-ins list`: who signed in through the identity provider, with
//! their groups, when and through which issuer.

use super::args::SignInsCommand;
use super::client::{Clients, rpc_error};
use super::output::Render;
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn sign_ins(c: &Clients, cmd: SignInsCommand) -> anyhow::Result<i32> {
    match cmd {
        SignInsCommand::List { team } => {
            let r = c
                .principals()
                .list_sign_ins(pb::ListSignInsRequest {
                    team_id: team.unwrap_or_default(),
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Listed {
                sign_ins: r.sign_ins.into_iter().map(Row::from).collect(),
            });
        }
    }
    Ok(0)
}

fn rfc3339(t: Option<prost_types::Timestamp>) -> String {
    t.and_then(|t| std::time::SystemTime::try_from(t).ok())
        .map(|when| humantime::format_rfc3339_seconds(when).to_string())
        .unwrap_or_default()
}

/// One user's last sign-in.
#[derive(Debug, Serialize)]
struct Row {
    team: String,
    user: String,
    groups: Vec<String>,
    issuer: String,
    principal: String,
    first_at: String,
    last_at: String,
}

impl From<pb::SignInRecord> for Row {
    fn from(s: pb::SignInRecord) -> Self {
        Self {
            team: s.team_id,
            user: s.user_id,
            groups: s.groups,
            issuer: s.issuer,
            principal: s.principal,
            first_at: rfc3339(s.first_at),
            last_at: rfc3339(s.last_at),
        }
    }
}

#[derive(Debug, Serialize)]
struct Listed {
    sign_ins: Vec<Row>,
}

impl Render for Listed {
    fn human(&self) -> String {
        if self.sign_ins.is_empty() {
            return "no one signed in through the identity provider\n".into();
        }
        self.sign_ins
            .iter()
            .map(|s| {
                let groups = if s.groups.is_empty() {
                    "no groups".to_owned()
                } else {
                    format!("groups {}", s.groups.join(", "))
                };
                format!(
                    "{}  {}/{}  {groups}  via {}\n",
                    s.last_at, s.team, s.user, s.issuer
                )
            })
            .collect()
    }
}
