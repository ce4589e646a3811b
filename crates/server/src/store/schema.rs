//! The schema, once for both dialects, and the migrations a database still needs.

use super::StoreError;

/// The schema, for every dialect: `{int}` is the dialect's 64-bit integer, `{id}` its
/// auto-incrementing key and `{json_array}` its function that makes a JSON array of
/// its arguments. Entry `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE teams (
    team_id TEXT PRIMARY KEY,
    revision {int} NOT NULL,
    history_floor {int} NOT NULL DEFAULT 0
);
CREATE TABLE admin_settings (
    team_id TEXT PRIMARY KEY,
    doc TEXT NOT NULL,
    revision {int} NOT NULL,
    updated_at {int} NOT NULL,
    updated_by TEXT NOT NULL
);
CREATE TABLE user_settings (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    doc TEXT NOT NULL,
    revision {int} NOT NULL,
    updated_at {int} NOT NULL,
    updated_by TEXT NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE TABLE changes (
    team_id TEXT NOT NULL,
    revision {int} NOT NULL,
    doc TEXT NOT NULL,
    at {int} NOT NULL,
    actor TEXT NOT NULL,
    PRIMARY KEY (team_id, revision)
);
CREATE TABLE audit (
    {id},
    team_id TEXT NOT NULL,
    revision {int} NOT NULL,
    actor TEXT NOT NULL,
    kind TEXT NOT NULL,
    at {int} NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX audit_team_id ON audit (team_id, id);
",
    // seed 004's per-session quotas, counted where every replica sees them
    r"
CREATE TABLE session_quotas (
    team_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    used {int} NOT NULL,
    updated_at {int} NOT NULL,
    PRIMARY KEY (team_id, session_id, operation)
);
",
    // quotas counted per user too (a user reusing another's session_id spent theirs).
    // The old counts cannot be told apart by user, so they are not carried over: the
    // sessions running across the upgrade count afresh.
    r"
DROP TABLE session_quotas;
CREATE TABLE session_quotas (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    used {int} NOT NULL,
    updated_at {int} NOT NULL,
    PRIMARY KEY (team_id, user_id, session_id, operation)
);
",
    // tokens issued through the API: only their SHA-256 is kept
    r"
CREATE TABLE issued_tokens (
    token_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL,
    created_at {int} NOT NULL,
    created_by TEXT NOT NULL,
    expires_at {int} NOT NULL,
    revoked_at {int},
    revoked_by TEXT
);
CREATE INDEX issued_tokens_team ON issued_tokens (team_id, created_at);
",
    // the decision log: one row per decision, kept by age and count per team
    // (store/decisions/); `subject` is `server:tool`, a command line or a path
    r"
CREATE TABLE decisions (
    {id},
    at {int} NOT NULL,
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    role TEXT NOT NULL,
    client TEXT NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT NOT NULL,
    subject_bytes {int} NOT NULL,
    subject_sha256 TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    matched_entry TEXT NOT NULL,
    revision {int} NOT NULL
);
CREATE INDEX decisions_team_at ON decisions (team_id, at, id);
CREATE INDEX decisions_at ON decisions (at);
",
    // central approvals: the requests and the grants their answers leave (the
    // allocation calls this migration 6: the decision log's comes before it)
    r"
CREATE TABLE approvals (
    request_id TEXT PRIMARY KEY,
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    client TEXT NOT NULL,
    session_id TEXT NOT NULL,
    call TEXT NOT NULL,
    call_key TEXT NOT NULL,
    summary TEXT NOT NULL,
    decision TEXT NOT NULL,
    created_at {int} NOT NULL,
    deadline {int} NOT NULL,
    state TEXT NOT NULL,
    answered_by TEXT,
    answered_at {int},
    scope TEXT,
    grant_expires_at {int},
    answer_reason TEXT,
    allowlist_entry TEXT,
    allowlist_revision {int}
);
CREATE INDEX approvals_team ON approvals (team_id, created_at);
CREATE TABLE approval_grants (
    request_id TEXT PRIMARY KEY,
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT,
    call_key TEXT NOT NULL,
    expires_at {int} NOT NULL,
    created_by TEXT NOT NULL,
    created_at {int} NOT NULL
);
CREATE INDEX approval_grants_call ON approval_grants (team_id, user_id, call_key);
",
    // every decision-log insert kept an index on time alone, only for retention,
    // which goes team by team through (team_id, at, id) instead
    r"
DROP INDEX decisions_at;
",
    // The decision log as blocks: a row per team and batch, its records one JSON
    // array (store/decisions/), where a row per record cost more to insert than the
    // decision it recorded. Ids go on from the last given. A record moved here keeps
    // its id, in a block of its own.
    r"
CREATE TABLE decision_blocks (
    id {int} PRIMARY KEY,
    max_id {int} NOT NULL,
    team_id TEXT NOT NULL,
    min_at {int} NOT NULL,
    max_at {int} NOT NULL,
    records {int} NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX decision_blocks_team ON decision_blocks (team_id, max_at, id);
CREATE INDEX decision_blocks_max_at ON decision_blocks (max_at, id);
CREATE INDEX decision_blocks_min_at ON decision_blocks (min_at);
CREATE TABLE decision_ids (next_id {int} NOT NULL);
INSERT INTO decision_ids (next_id) SELECT COALESCE(MAX(id), 0) + 1 FROM decisions;
INSERT INTO decision_blocks (id, max_id, team_id, min_at, max_at, records, body)
SELECT id, id, team_id, at, at, 1, '[' || {json_array}(id, at, team_id, user_id, principal,
    agent_id, role, client, source, kind, server, tool, action, subject, subject_sha256,
    outcome, reason, matched_entry, subject_bytes, revision) || ']'
FROM decisions;
DROP TABLE decisions;
",
    // DENY records in blocks of their own, kept by a retention of their own (0: ALLOW
    // and ASK records, 1: DENY records, 2: both, a block written before), and the
    // audit trail's decision records pruned by time
    r"
ALTER TABLE decision_blocks ADD COLUMN deny {int} NOT NULL DEFAULT 2;
CREATE INDEX IF NOT EXISTS decision_blocks_deny ON decision_blocks (deny, max_at);
CREATE INDEX IF NOT EXISTS audit_kind_at ON audit (kind, at);
",
    // tool pins (store/pins.rs): per team, MCP server and tool, the pinned definition
    // and the changed one a gateway saw since; and each team's pin settings
    r"
CREATE TABLE tool_pins (
    team_id TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    definition TEXT NOT NULL,
    reviewed {int} NOT NULL,
    pinned_at {int} NOT NULL,
    pinned_by TEXT NOT NULL,
    changed_sha256 TEXT,
    changed_definition TEXT,
    changed_at {int},
    changed_by TEXT,
    PRIMARY KEY (team_id, server, tool)
);
CREATE TABLE pin_settings (
    team_id TEXT PRIMARY KEY,
    members_pin_first {int} NOT NULL,
    hide_flagged {int} NOT NULL,
    updated_at {int} NOT NULL,
    updated_by TEXT NOT NULL
);
",
    // the groups an issued token carries (names joined by `,`; empty for none), and
    // the sign-ins through the identity provider: a row per team and user
    r"
ALTER TABLE issued_tokens ADD COLUMN group_names TEXT NOT NULL DEFAULT '';
CREATE TABLE sign_ins (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    issuer TEXT NOT NULL,
    group_names TEXT NOT NULL,
    first_at {int} NOT NULL,
    last_at {int} NOT NULL,
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX sign_ins_last_at ON sign_ins (last_at);
",
    // the agent clients' own decisions from their telemetry, joined to the decision
    // log's records by the client's id for the call
    r"
CREATE TABLE client_decisions (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    tool_use_id TEXT NOT NULL,
    decision TEXT NOT NULL,
    source TEXT NOT NULL,
    tool_name TEXT NOT NULL,
    at {int} NOT NULL,
    PRIMARY KEY (team_id, tool_use_id, user_id)
);
CREATE INDEX client_decisions_at ON client_decisions (at);
",
];

/// A dialect's words for the schema's placeholders.
pub(super) struct Dialect {
    pub int: &'static str,
    pub id: &'static str,
    pub json_array: &'static str,
}

pub(super) const SQLITE: Dialect = Dialect {
    int: "INTEGER",
    id: "id INTEGER PRIMARY KEY AUTOINCREMENT",
    json_array: "json_array",
};

pub(super) const POSTGRES: Dialect = Dialect {
    int: "BIGINT",
    id: "id BIGSERIAL PRIMARY KEY",
    json_array: "json_build_array",
};

/// The migrations a schema at `version` still needs, each with the version it sets,
/// in a dialect's words; an error if the schema is newer than this build.
pub(super) fn pending_migrations(
    version: usize,
    dialect: &Dialect,
) -> Result<Vec<(usize, String)>, StoreError> {
    if version > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "database schema version {version} is newer than this toolgate knows ({}); upgrade toolgate",
            MIGRATIONS.len()
        )));
    }
    Ok((version..MIGRATIONS.len())
        .map(|i| {
            (
                i + 1,
                MIGRATIONS[i]
                    .replace("{int}", dialect.int)
                    .replace("{id}", dialect.id)
                    .replace("{json_array}", dialect.json_array),
            )
        })
        .collect())
}
