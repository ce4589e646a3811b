//! Who is calling and with what credential: roles, principals, token digests and
//! the rules for names. A leaf: the configuration, the JWT verifier and the issued
//! tokens all speak it, and it imports none of them.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use toolgate_core::policy::group_set::GroupSet;

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Acts on its own user within its team; reads its team's admin settings.
    Member,
    /// Reads and writes everything of its team.
    Admin,
    /// Evaluates, filters and reads for its team; writes nothing.
    Service,
    /// Everything, across teams (hosting).
    Operator,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub role: Role,
    /// None only for operators.
    pub team: Option<String>,
    /// The user a member acts as.
    pub user: Option<String>,
    /// The groups the credential says the caller is in (a JWT claim, an issued
    /// token, the configuration): checked, sorted, each once
    /// ([`toolgate_core::policy::groups::normalise_groups`]). Their policies in the
    /// team apply to the caller's own calls.
    pub groups: GroupSet,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("{0}")]
    Unauthenticated(&'static str),
    #[error("{0}")]
    PermissionDenied(String),
}

/// The SHA-256 of a token: the only form in which tokens are kept.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// [`token_digest`] as hex, the form the configuration takes.
pub fn hash_token(token: &str) -> String {
    hex::encode(token_digest(token))
}

/// A fresh random token: 32 bytes, hex, prefixed so it is recognisable in a leak scan.
pub fn generate_token() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("tg_{}", hex::encode(bytes))
}

/// What a client certificate is recognised by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertMatch {
    /// The subject's common name (a subject with several is refused outright).
    SubjectCn(String),
    /// A subject alternative name of one type: a DNS SAN holding `spiffe://…` is
    /// not the URI SAN `spiffe://…`.
    San(SanKind, String),
}

/// The types of subject alternative name a mapping can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanKind {
    Dns,
    Uri,
    Email,
}

impl CertMatch {
    /// A mapping's `san`: `dns:NAME`, `uri:URI` or `email:ADDRESS`. The type is
    /// required: an untyped value would match a SAN of another type holding the
    /// same text.
    pub fn san(text: &str) -> Result<Self, String> {
        let typed = [
            ("dns:", SanKind::Dns),
            ("uri:", SanKind::Uri),
            ("email:", SanKind::Email),
        ]
        .into_iter()
        .find_map(|(prefix, kind)| {
            text.get(..prefix.len())
                .filter(|p| p.eq_ignore_ascii_case(prefix))
                .map(|_| (kind, text[prefix.len()..].trim()))
        });
        match typed {
            Some((_, "")) => Err(format!(
                "{text:?} names no value after its type: write e.g. dns:client.example"
            )),
            Some((kind, value)) => Ok(Self::San(kind, value.to_owned())),
            None => Err(format!(
                "{text:?} does not say which type of name it is: write uri:{text}, dns:{text} or email:{text} (a certificate's names are matched by type)"
            )),
        }
    }
}

/// The principal-name prefix of JWT principals: static tokens and certificates may
/// not take a name in it, so no configured name can pose as (or share the stream
/// slots of) a JWT principal.
pub const JWT_NAME_PREFIX: &str = "jwt:";

/// Names the server gives principals and audit actors itself, each with what it
/// is: a configured name may not start with one of the prefixes (`file:` is the
/// policy file's actor in the audit trail) nor be one of the names.
const RESERVED_NAME_PREFIXES: &[(&str, &str)] = &[
    (JWT_NAME_PREFIX, "principals from JWTs"),
    ("file:", "the policy file's changes in the audit trail"),
];
const RESERVED_NAMES: &[(&str, &str)] = &[
    ("anonymous", "calls without a token"),
    (
        "bootstrap-operator",
        "the token written when none is configured",
    ),
];

/// Whether a name configured for a static token or a certificate stays out of the
/// names the server gives principals and audit actors itself.
pub fn check_principal_name(name: &str) -> Result<(), String> {
    let trimmed = name.trim();
    for (prefix, what) in RESERVED_NAME_PREFIXES {
        if trimmed
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        {
            return Err(format!(
                "{name:?} starts with {prefix:?}, which is reserved for {what}: choose another name"
            ));
        }
    }
    for (reserved, what) in RESERVED_NAMES {
        if trimmed.eq_ignore_ascii_case(reserved) {
            return Err(format!(
                "{name:?} is reserved for {what}: choose another name"
            ));
        }
    }
    Ok(())
}

/// Whether a team id is one no credential may name: `*` is the server-wide audit
/// bucket (and everywhere else reads as "any"), so any id holding a `*` is reserved.
pub fn is_reserved_team(team: &str) -> bool {
    team.contains('*')
}

/// The reserved team whose admin document holds the organisation's group policies
/// (its `groups` and nothing else): kept once, applied in every team. Only an
/// operator reads or writes it (`authorize`); nothing is decided in it.
pub const ORG_TEAM: &str = "*org";

/// The error for a credential naming a reserved team, the one wording for the
/// configuration and for JWT claims.
pub fn reserved_team_problem(team: &str) -> String {
    format!(
        "{team:?} is reserved (`*` stands for every team and the server-wide audit): name the credential's own team"
    )
}
