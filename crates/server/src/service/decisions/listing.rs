//! Listing the decision log within the caller's scope: the filter checked and
//! scoped, pages newest first behind a keyset token bound to the filter, and records
//! handed out with a command line or path as an excerpt only.

use super::origin::outcome_name;
use crate::auth::{Action, Principal, Role, authorize};
use crate::policy::{Outcome, Reason};
use crate::service::decision_log::record::excerpt;
use crate::service::{Service, ServiceError, check_id};
use crate::store::{DecisionQuery, StoredDecision};

/// Records one page holds when the caller names no size, and at most.
pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE: u32 = 1000;
/// The longest tool or command prefix a filter may give.
pub const MAX_PREFIX_BYTES: usize = 1024;

/// What a filter selects, before the caller's scope is applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecisionFilter {
    pub team_id: String,
    pub user_id: String,
    pub agent_id: String,
    pub outcome: Option<Outcome>,
    pub reason: Option<Reason>,
    pub tool_prefix: String,
    pub command_prefix: String,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
}

/// One page of records and the token of the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionPage {
    pub decisions: Vec<StoredDecision>,
    /// What the clients reported doing with the calls, by record id (their own
    /// telemetry, joined by the client's id for the call).
    pub client_decisions: std::collections::HashMap<u64, crate::store::ClientDecision>,
    /// Empty when there is no further page.
    pub next_page_token: String,
}

impl Service {
    /// The team and user a listing or a watch may see, checked: a member only its own
    /// calls, an admin its team, an operator the team it names.
    pub(super) fn decision_scope(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
    ) -> Result<DecisionQuery, ServiceError> {
        let team = match (filter.team_id.as_str(), p.team.as_deref()) {
            ("", Some(own)) => own.to_owned(),
            ("", None) => {
                return Err(ServiceError::invalid(
                    "filter.team_id",
                    "must be set for an operator: name the team whose decisions to list",
                ));
            }
            (team, _) => team.to_owned(),
        };
        let team = check_id("filter.team_id", &team)?.into_owned();
        let mut user = (!filter.user_id.is_empty())
            .then(|| check_id("filter.user_id", &filter.user_id).map(|u| u.into_owned()))
            .transpose()?;
        if p.role == Role::Member && user.is_none() {
            // a member's listing is of its own calls
            user = p.user.clone();
        }
        authorize(p, &team, Action::ReadDecisions(user.as_deref()))?;
        let agent = (!filter.agent_id.is_empty())
            .then(|| check_id("filter.agent_id", &filter.agent_id).map(|a| a.into_owned()))
            .transpose()?;
        for (field, prefix) in [
            ("filter.tool_prefix", &filter.tool_prefix),
            ("filter.command_prefix", &filter.command_prefix),
        ] {
            if prefix.len() > MAX_PREFIX_BYTES {
                return Err(ServiceError::invalid(
                    field,
                    format!(
                        "is {} bytes, more than the limit of {MAX_PREFIX_BYTES}: give a shorter prefix",
                        prefix.len()
                    ),
                ));
            }
        }
        if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms)
            && since >= until
        {
            return Err(ServiceError::invalid(
                "filter.until",
                "is not after filter.since: give a time range that is not empty",
            ));
        }
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Ok(DecisionQuery {
            team_id: Some(team),
            user_id: user,
            agent_id: agent,
            outcome: filter.outcome.map(|o| outcome_name(o).to_owned()),
            reason: filter.reason.map(|r| r.as_str().to_owned()),
            tool_prefix: non_empty(&filter.tool_prefix),
            command_prefix: non_empty(&filter.command_prefix),
            since_ms: filter.since_ms,
            until_ms: filter.until_ms,
            before: None,
            limit: 0,
        })
    }

    /// One page of the log, newest first. The page token is a keyset on (time, id)
    /// bound to the filter, so records written meanwhile never shift later pages.
    pub async fn list_decisions(
        &self,
        p: &Principal,
        filter: &DecisionFilter,
        page_size: u32,
        page_token: &str,
    ) -> Result<DecisionPage, ServiceError> {
        let mut query = self.decision_scope(p, filter)?;
        if page_size > MAX_PAGE {
            return Err(ServiceError::invalid(
                "page_size",
                format!("{page_size} is more than {MAX_PAGE}: ask for fewer and page"),
            ));
        }
        let size = if page_size == 0 {
            DEFAULT_PAGE
        } else {
            page_size
        };
        let fingerprint = fingerprint(&query);
        if !page_token.is_empty() {
            query.before = Some(parse_token(page_token, &fingerprint)?);
        }
        query.limit = size + 1;
        let mut records = self.store.list_decisions(&query).await?;
        let more = records.len() > size as usize;
        records.truncate(size as usize);
        let next_page_token = match (more, records.last()) {
            (true, Some(last)) => make_token(last.decision.at_ms, last.id, &fingerprint),
            _ => String::new(),
        };
        let client_decisions = self.joined_client_decisions(&records).await?;
        Ok(DecisionPage {
            decisions: records.iter().map(handed_out).collect(),
            client_decisions,
            next_page_token,
        })
    }
}

/// A record as the API hands it out: a command line or path as an excerpt only.
pub(super) fn handed_out(record: &StoredDecision) -> StoredDecision {
    let mut out = record.clone();
    if out.decision.kind != "mcp" {
        out.decision.subject = excerpt(&out.decision.subject);
    }
    out
}

/// What a page token is bound to: the scoped filter, without the keyset and size.
fn fingerprint(q: &DecisionQuery) -> String {
    use sha2::Digest as _;
    let mut q = q.clone();
    q.before = None;
    q.limit = 0;
    hex::encode(&sha2::Sha256::digest(format!("{q:?}").as_bytes())[..8])
}

pub(super) fn make_token(at_ms: i64, id: u64, fingerprint: &str) -> String {
    hex::encode(format!("{at_ms}.{id}.{fingerprint}"))
}

pub(super) fn parse_token(token: &str, fingerprint: &str) -> Result<(i64, u64), ServiceError> {
    let bad = |why: &str| {
        ServiceError::invalid(
            "page_token",
            format!(
                "{why}: pass the next_page_token of the previous page with the same filter, or none to start again"
            ),
        )
    };
    let text = hex::decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| bad("is not a page token"))?;
    let mut parts = text.split('.');
    let (Some(at), Some(id), Some(fp), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("is not a page token"));
    };
    if fp != fingerprint {
        return Err(bad("was made for another filter"));
    }
    match (at.parse(), id.parse()) {
        (Ok(at), Ok(id)) => Ok((at, id)),
        _ => Err(bad("is not a page token")),
    }
}
