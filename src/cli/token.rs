//! `token create|list|revoke`: tokens for developers and agents, issued through the API.

use super::args::TokenCommand;
use super::client::{Clients, rpc_error};
use super::output::Render;
use super::usage;
use crate::proto::v1 as pb;
use serde::Serialize;

pub(super) async fn token(c: &Clients, cmd: TokenCommand) -> anyhow::Result<i32> {
    match cmd {
        TokenCommand::Create {
            team,
            user,
            role,
            expires,
            secret_file,
            groups,
        } => {
            // checked before the token exists: a token nobody can read is wasted
            if let Some(file) = secret_file.as_ref().filter(|f| f.exists()) {
                return Err(usage(format!(
                    "--secret-file {}: the file exists: nothing issued; give a new file's path",
                    file.display()
                )));
            }
            let ttl = humantime::parse_duration(&expires).map_err(|e| {
                usage(format!(
                    "--expires {expires:?}: {e}: give a duration such as 90d or 12h"
                ))
            })?;
            let role = match role.as_str() {
                "admin" => pb::TokenRole::Admin,
                "service" => pb::TokenRole::Service,
                _ => pb::TokenRole::Member,
            };
            let r = c
                .tokens()
                .create_token(pb::CreateTokenRequest {
                    team_id: team,
                    user_id: user,
                    role: role.into(),
                    expires_in_seconds: ttl.as_secs().max(1),
                    groups,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            let secret = match &secret_file {
                Some(file) => {
                    toolgate_files::write_atomic(
                        file,
                        toolgate_files::Mode::Exactly(0o600),
                        format!("{}\n", r.secret).as_bytes(),
                    )
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "--secret-file {}: {e}: the token was issued but not saved; revoke it with `toolgate token revoke {}`",
                            file.display(),
                            r.token.as_ref().map_or("", |t| t.token_id.as_str())
                        )
                    })?;
                    Secret::InFile(file.display().to_string())
                }
                None => Secret::Shown(r.secret),
            };
            c.out.print(&Created {
                token: r.token.map(TokenRow::from),
                secret,
            });
        }
        TokenCommand::List { team, all } => {
            let r = c
                .tokens()
                .list_tokens(pb::ListTokensRequest {
                    team_id: team.unwrap_or_default(),
                    include_inactive: all,
                })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Listed {
                tokens: r.tokens.into_iter().map(TokenRow::from).collect(),
            });
        }
        TokenCommand::Revoke { token_id } => {
            let r = c
                .tokens()
                .revoke_token(pb::RevokeTokenRequest { token_id })
                .await
                .map_err(rpc_error)?
                .into_inner();
            c.out.print(&Revoked {
                token: r.token.map(TokenRow::from),
                revoked: r.revoked,
            });
        }
    }
    Ok(0)
}

fn rfc3339(t: Option<prost_types::Timestamp>) -> Option<String> {
    let t = t?;
    let secs = u64::try_from(t.seconds).ok()?;
    Some(
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
        )
        .to_string(),
    )
}

/// One token as listed: never its secret.
#[derive(Debug, Serialize)]
pub struct TokenRow {
    pub token_id: String,
    pub team: String,
    pub user: String,
    pub role: String,
    pub created_by: String,
    pub created_at: Option<String>,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

impl From<pb::IssuedToken> for TokenRow {
    fn from(t: pb::IssuedToken) -> Self {
        let role = match t.role() {
            pb::TokenRole::Admin => "admin",
            pb::TokenRole::Service => "service",
            _ => "member",
        };
        Self {
            token_id: t.token_id,
            team: t.team_id,
            user: t.user_id,
            role: role.into(),
            created_by: t.created_by,
            created_at: rfc3339(t.created_at),
            expires_at: rfc3339(t.expires_at),
            revoked_at: rfc3339(t.revoked_at),
            groups: t.groups,
        }
    }
}

impl TokenRow {
    fn line(&self) -> String {
        let state = match &self.revoked_at {
            Some(at) => format!("revoked {at}"),
            None => format!("expires {}", self.expires_at.as_deref().unwrap_or("?")),
        };
        let groups = if self.groups.is_empty() {
            String::new()
        } else {
            format!("  groups {}", self.groups.join(", "))
        };
        format!(
            "{}  {}/{}  {}{groups}  {}  (by {})\n",
            self.token_id, self.team, self.user, self.role, state, self.created_by
        )
    }
}

/// The new token's secret: printed, or where it was written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "snake_case")]
enum Secret {
    #[serde(rename = "secret")]
    Shown(String),
    #[serde(rename = "secret_file")]
    InFile(String),
}

#[derive(Debug, Serialize)]
struct Created {
    token: Option<TokenRow>,
    #[serde(flatten)]
    secret: Secret,
}

impl Render for Created {
    fn human(&self) -> String {
        let mut out = self.token.as_ref().map(TokenRow::line).unwrap_or_default();
        match &self.secret {
            Secret::Shown(secret) => out.push_str(&format!(
                "{secret}\nthis token is shown once: give it to its user now (e.g. in a file only they can read, for --token-file)\n"
            )),
            Secret::InFile(file) => out.push_str(&format!(
                "the token is in {file} (mode 0600), for --token-file; it is not stored and cannot be shown again\n"
            )),
        }
        out
    }
}

#[derive(Debug, Serialize)]
struct Listed {
    tokens: Vec<TokenRow>,
}

impl Render for Listed {
    fn human(&self) -> String {
        if self.tokens.is_empty() {
            return "no tokens\n".into();
        }
        self.tokens.iter().map(TokenRow::line).collect()
    }
}

#[derive(Debug, Serialize)]
struct Revoked {
    token: Option<TokenRow>,
    revoked: bool,
}

impl Render for Revoked {
    fn human(&self) -> String {
        let id = self.token.as_ref().map_or("", |t| t.token_id.as_str());
        if self.revoked {
            format!("revoked {id}: it is refused from the next call on\n")
        } else {
            format!("{id} was already revoked\n")
        }
    }
}
