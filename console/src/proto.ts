// Generated from proto/toolgate/v1/ by tests/it/console_proto.rs: do not edit.
// Regenerate: UPDATE_CONSOLE=1 cargo test --test it console_proto::
//
// The API's messages as canonical protobuf JSON writes them: lowerCamelCase
// names, 64-bit integers as strings, enums by name, timestamps as RFC 3339
// text, fields at their default value left out (so every field is optional).

/** A 64-bit integer: JSON writes it as a string and reads a number too. */
export type U64 = string | number;

// toolgate/v1/settings.proto

/**
 * How the admin's MCP allowlist combines with a user's own list while admin
 * controls are enabled.
 */
export const ListMode = [
  "LIST_MODE_UNSPECIFIED",
  "LIST_MODE_REPLACE",
  "LIST_MODE_UNION",
] as const;
export type ListMode = (typeof ListMode)[number];

/** Which tools the admin lets exist at all, whatever the auto-run settings. */
export const McpAccessMode = [
  "MCP_ACCESS_MODE_UNSPECIFIED",
  "MCP_ACCESS_MODE_BLOCKLIST",
  "MCP_ACCESS_MODE_ALLOWLIST",
] as const;
export type McpAccessMode = (typeof McpAccessMode)[number];

/** Whose calls one rate counts. */
export const RateScope = [
  "RATE_SCOPE_UNSPECIFIED",
  "RATE_SCOPE_USER",
  "RATE_SCOPE_TEAM",
] as const;
export type RateScope = (typeof RateScope)[number];

/** What a call past its rate gets. */
export const RateExceeded = [
  "RATE_EXCEEDED_UNSPECIFIED",
  "RATE_EXCEEDED_ASK",
  "RATE_EXCEEDED_DENY",
] as const;
export type RateExceeded = (typeof RateExceeded)[number];

/** How a group's allowed lists meet the team's. */
export const GroupAllowMode = [
  "GROUP_ALLOW_MODE_UNSPECIFIED",
  "GROUP_ALLOW_MODE_ADD",
  "GROUP_ALLOW_MODE_REPLACE",
] as const;
export type GroupAllowMode = (typeof GroupAllowMode)[number];

/** When an ASK goes to central approval. */
export const ApprovalMode = [
  "APPROVAL_MODE_UNSPECIFIED",
  "APPROVAL_MODE_OFF",
  "APPROVAL_MODE_HEADLESS",
  "APPROVAL_MODE_ALWAYS",
] as const;
export type ApprovalMode = (typeof ApprovalMode)[number];

/** Who may approve besides the team's admins (who always may). */
export const ApproverRole = [
  "APPROVER_ROLE_UNSPECIFIED",
  "APPROVER_ROLE_ADMIN",
  "APPROVER_ROLE_MEMBER",
] as const;
export type ApproverRole = (typeof ApproverRole)[number];

/** Opaque to the decision: kept and returned as given. */
export type SandboxingControls = {
  enabled?: boolean;
};

/**
 * Team admin auto-run controls. Fields 1-9 keep the names and numbers of the
 * IDE's own auto-run controls message (wire-compatible); toolgate's extensions
 * start at 100.
 */
export type AutoRunControls = {
  enabled?: boolean;
  /** Shell command prefixes that may auto-run. */
  allowed?: string[];
  /** Shell command prefixes that never auto-run. */
  blocked?: string[];
  disableMcpAutoRun?: boolean;
  deleteFileProtection?: boolean;
  enableRunEverything?: boolean;
  /** Admin MCP allowlist, `server:tool` entries. */
  mcpToolAllowlist?: string[];
  sandboxingControls?: SandboxingControls;
  browserProtection?: boolean;
  /** MCP tools that are denied (and hidden from tools/list), enabled or not. */
  mcpToolBlocklist?: string[];
  /** Denies every call of the team while on. */
  killSwitch?: boolean;
  /**
   * Server ids whose tools are browser tools. Empty means the defaults
   * `cursor-browser-extension` and `cursor-ide-browser`.
   */
  browserServerIds?: string[];
  listMode?: ListMode;
  mcpAccessMode?: McpAccessMode;
  /** With MCP_ACCESS_MODE_ALLOWLIST: the only tools that may exist. */
  mcpAccessAllowlist?: string[];
  /**
   * Shell command prefixes that must never run: a command line with a part that
   * matches one (after wrappers, inside `bash -c`, `find -exec`, without case) is
   * denied with REASON_COMMAND_DENIED, whatever else is set.
   */
  denied?: string[];
  /**
   * The settings a user of the team has until they write their own (auto-run,
   * protections, lists); unset: toolgate's defaults (everything off, browser
   * protection on). Its team_id, user_id, revision and updated_* are ignored.
   */
  defaultUserSettings?: UserSettings;
  /**
   * Central approvals: who answers an ASK when the client cannot (or always).
   * Unset: off, the ASK goes back to the client as before.
   */
  approvals?: ApprovalSettings;
  /**
   * The roles document: tool categories, agent roles, allow-lists per
   * agent or role and context, with their restrictions. Its JSON is the
   * documented format (schemas/roles.schema.json). Unset or empty: roles are not
   * in use. Decides calls whose EvaluateRequest names an agent or a role.
   */
  roles?: RolesDocument;
  /**
   * Group policies by group name: what the members of each group get on top of
   * (or instead of) these controls. How they combine is documented in
   * docs/groups.md: deny lists are the union, allowed lists add or replace as
   * each group says, switches take the strictest, the kill switch stays the team's.
   */
  groups?: { [key: string]: GroupPolicy };
  /**
   * What the agent clients' own managed channels lock (`toolgate managed`,
   * `toolgate sync`); unset: no lock. Never read by the decision.
   */
  managed?: ManagedDelivery;
  /**
   * Calls per minute, with a burst, per user, per team and per tool (a
   * `server:tool` glob); unset: no limit. A call past a rate is ASK (or DENY)
   * with REASON_RATE_LIMITED, on Evaluate and so in `toolgate proxy`.
   */
  rates?: RateLimits;
};

/**
 * A team's rates: every rule counts the calls it matches, and a call past any
 * one rule's rate is limited.
 */
export type RateLimits = {
  rules?: RateRule[];
  /** What a call past its rate gets. */
  exceeded?: RateExceeded;
};

/**
 * One rate: calls per minute and a burst, for the whole team or for each user,
 * over every call or the calls of the tools `tools` matches.
 */
export type RateRule = {
  per?: RateScope;
  /**
   * An MCP entry (`github:*`, `*:delete_*`, `builtin:run_shell_command`); empty
   * counts every call.
   */
  tools?: string;
  /** 1 to 1,000,000. */
  callsPerMinute?: number;
  /** Calls that may be made at once after a quiet spell, 1 to 100,000. */
  burst?: number;
};

/** The locks a team's managed delivery sets in each client that has them. */
export type ManagedDelivery = {
  /** Claude Code refuses bypass-permissions mode. */
  disableBypassPermissionsMode?: boolean;
  /**
   * Users' and projects' own hooks run beside toolgate's managed hook (off: only
   * managed hooks run).
   */
  allowUserHooks?: boolean;
  /** Only the permission rules toolgate delivers apply. */
  managedPermissionRulesOnly?: boolean;
  /** The lowest Claude Code version that may start, e.g. "2.1.0"; empty: any. */
  claudeCodeMinimumVersion?: string;
  /**
   * With entries, only the MCP servers matching one may be configured (a stdio
   * server a command entry when there is one, a remote server a URL entry when
   * there is one, otherwise a name entry).
   */
  allowedMcpServers?: McpServerIdentity[];
  /** The MCP servers that may never be configured. */
  deniedMcpServers?: McpServerIdentity[];
};

/** One MCP server identity: exactly one of its name, its launch command or its URL. */
export type McpServerIdentity = {
  /** The server's configured name (letters, digits, - and _). */
  name?: string;
  /** The command launching a stdio server, as its words, matched exactly. */
  command?: CommandWords;
  /** A remote server's URL; `*` matches any run of characters. */
  url?: string;
};

/** A command as its words, the program first. */
export type CommandWords = {
  words?: string[];
};

/**
 * A list a group policy may leave unset (unset says nothing; set and empty is an
 * empty list, which in the replace mode takes the team's entries away).
 */
export type EntryList = {
  entries?: string[];
};

/**
 * The part of the admin controls a group may say. The kill switch, the roles,
 * the approvals and the users' defaults stay the team's.
 */
export type GroupPolicy = {
  allowMode?: GroupAllowMode;
  allowed?: EntryList;
  mcpToolAllowlist?: EntryList;
  mcpAccessAllowlist?: EntryList;
  /** Added to the team's. */
  blocked?: string[];
  denied?: string[];
  mcpToolBlocklist?: string[];
  browserServerIds?: string[];
  /** On anywhere is on. */
  enabled?: boolean;
  disableMcpAutoRun?: boolean;
  deleteFileProtection?: boolean;
  browserProtection?: boolean;
  /**
   * False turns the team's run-everything off for the members; true changes
   * nothing.
   */
  enableRunEverything?: boolean;
  /**
   * LIST_MODE_REPLACE makes the admin's list replace the users'; unspecified
   * says nothing.
   */
  listMode?: ListMode;
  /**
   * MCP_ACCESS_MODE_ALLOWLIST puts the members under the access allowlist;
   * unspecified says nothing.
   */
  mcpAccessMode?: McpAccessMode;
};

export type ApprovalSettings = {
  mode?: ApprovalMode;
  /**
   * How long a request waits for an answer before the call is refused:
   * 0 means 300 (5 minutes); at most 3600.
   */
  deadlineSeconds?: number;
  /** Users of the team who may approve, besides its admins. */
  approverUsers?: string[];
  approverRole?: ApproverRole;
  /** Whether a requester may answer their own request (default: no). */
  allowSelfApproval?: boolean;
  /**
   * Where each new request is posted as JSON (with a Slack-compatible `text`):
   * https, or http to a loopback address only. Empty: no webhook.
   */
  webhookUrl?: string;
  /**
   * The longest APPROVAL_SCOPE_DURATION grant: 0 means 86400 (a day); at most
   * 2592000 (30 days).
   */
  maxGrantSeconds?: number;
};

/**
 * The roles document. Field names and JSON names are the document format's own,
 * so a document written for the roles schema is this message's JSON.
 */
export type RolesDocument = {
  /** Named sets of operations; an operation belongs to at most one category. */
  toolCategories?: { [key: string]: ToolCategory };
  /** Roles by id. */
  agentRoles?: { [key: string]: AgentRole };
  /** Allow-lists by name: each for one agent or one role. */
  allowLists?: { [key: string]: AllowList };
  /** The context of a call that names none. */
  defaultContext?: string;
};

/** A named set of operations, allowed together. */
export type ToolCategory = {
  description?: string;
  /**
   * Operations (`CREATE_COMPONENT`), or tool names as calls carry them
   * (`github:create_issue`).
   */
  tools?: string[];
};

/** An agent role (a Claude Code subagent's type is its role). */
export type AgentRole = {
  /** Agents that have this role; an agent has at most one. */
  agentIds?: string[];
  description?: string;
  /** Descriptive: decisions read the allow-lists, not these. */
  baseCapabilities?: string[];
};

/** An allow-list for one agent (agent_id), or every agent of a role (role_id alone). */
export type AllowList = {
  agentId?: string;
  roleId?: string;
  /** The author's own version label; the team revision is the authoritative one. */
  version?: string;
  lastUpdated?: string;
  /** Per context type (`UI_SANDBOX`). */
  contexts?: { [key: string]: ContextAllowList };
};

/** What an agent may do in one context. */
export type ContextAllowList = {
  description?: string;
  /**
   * Allowed operations by category (each value a list of strings); every other
   * operation is denied.
   */
  allowedTools?: { [key: string]: unknown[] };
  restrictions?: Restrictions;
};

/**
 * A role's restrictions. A list that is unset places no limit; a list that is
 * set (even empty) is the only values allowed, hence ListValue (of strings) where
 * the two differ. Those the server cannot check come back with a decision as
 * obligations.
 */
export type Restrictions = {
  /** Denies when the call's component count is at least this. */
  maxComponentsPerSession?: number;
  forbiddenComponents?: string[];
  allowedComponentTypes?: unknown[];
  allowedFileTypes?: unknown[];
  allowedDirectories?: unknown[];
  forbiddenFiles?: string[];
  /** e.g. `10MB`. */
  maxFileSize?: string;
  allowedNetworkHosts?: unknown[];
  allowedEndpoints?: unknown[];
  allowedProtocols?: unknown[];
  allowedDatabases?: unknown[];
  allowedTables?: unknown[];
  forbiddenOperations?: string[];
  /** At most this many calls of an operation per session id. */
  sessionQuotas?: { [key: string]: number };
  /** Limits the caller applies itself (obligations). */
  maxComponentDepth?: number;
  sensitiveProperties?: unknown[];
  readOnlyProperties?: unknown[];
  allowedWCAGLevels?: unknown[];
  allowedContrastChecks?: unknown[];
  maxTestDuration?: string;
  maxQueryTime?: string;
  maxSchemaSize?: string;
  allowedSchemaVersions?: unknown[];
  allowedMessageTypes?: unknown[];
  maxMessageSize?: string;
  allowedTestTypes?: unknown[];
  /** Any other limit for the caller, by name. */
  obligations?: { [key: string]: unknown };
};

export type TeamAdminSettings = {
  teamId?: string;
  autoRunControls?: AutoRunControls;
  /** The team revision at which these settings last changed; 0 if never set. */
  revision?: U64;
  updatedAt?: string;
  updatedBy?: string;
};

/**
 * A user's own settings within a team (auto-run mode, their own lists and
 * protections).
 */
export type UserSettings = {
  teamId?: string;
  userId?: string;
  mcpAllowedTools?: string[];
  yoloMcpToolsDisabled?: boolean;
  /** Unset means true. */
  playwrightProtection?: boolean;
  useYoloMode?: boolean;
  yoloEnableRunEverything?: boolean;
  commandAllowlist?: string[];
  commandDenylist?: string[];
  /** The team revision at which these settings last changed; 0 if never set. */
  revision?: U64;
  updatedAt?: string;
  updatedBy?: string;
};

// toolgate/v1/service.proto

/** What an audit event records. Stable names: never renamed, only added to. */
export const AuditEventKind = [
  "AUDIT_EVENT_KIND_UNSPECIFIED",
  "AUDIT_EVENT_KIND_ADMIN_SETTINGS_UPDATED",
  "AUDIT_EVENT_KIND_USER_SETTINGS_UPDATED",
  "AUDIT_EVENT_KIND_DECISION_DENIED",
  "AUDIT_EVENT_KIND_TOKEN_CREATED",
  "AUDIT_EVENT_KIND_TOKEN_REVOKED",
  "AUDIT_EVENT_KIND_POLICY_FILE_RELOADED",
  "AUDIT_EVENT_KIND_POLICY_FILE_REJECTED",
  "AUDIT_EVENT_KIND_ALLOW_LIST_UPDATED",
  "AUDIT_EVENT_KIND_DECISION_MADE",
  "AUDIT_EVENT_KIND_APPROVAL_REQUESTED",
  "AUDIT_EVENT_KIND_APPROVAL_APPROVED",
  "AUDIT_EVENT_KIND_APPROVAL_DENIED",
  "AUDIT_EVENT_KIND_APPROVAL_EXPIRED",
  "AUDIT_EVENT_KIND_APPROVAL_ABANDONED",
  "AUDIT_EVENT_KIND_DECISIONS_SHED",
  "AUDIT_EVENT_KIND_TOOL_PINNED",
  "AUDIT_EVENT_KIND_TOOL_CHANGED",
  "AUDIT_EVENT_KIND_TOOL_REPINNED",
  "AUDIT_EVENT_KIND_PIN_SETTINGS_UPDATED",
  "AUDIT_EVENT_KIND_TAMPERING_DETECTED",
] as const;
export type AuditEventKind = (typeof AuditEventKind)[number];

/** A client's managed file that toolgate keeps. */
export const ManagedFile = [
  "MANAGED_FILE_UNSPECIFIED",
  "MANAGED_FILE_CODEX_REQUIREMENTS",
  "MANAGED_FILE_GEMINI_POLICY",
  "MANAGED_FILE_CURSOR_HOOKS",
  "MANAGED_FILE_GEMINI_SETTINGS",
] as const;
export type ManagedFile = (typeof ManagedFile)[number];

export const Outcome = [
  "OUTCOME_UNSPECIFIED",
  "OUTCOME_ALLOW",
  "OUTCOME_ASK",
  "OUTCOME_DENY",
] as const;
export type Outcome = (typeof Outcome)[number];

/** Stable names: never renamed, only added to. */
export const Reason = [
  "REASON_UNSPECIFIED",
  "REASON_KILL_SWITCH",
  "REASON_INVALID_NAME",
  "REASON_BLOCKED_BY_ADMIN",
  "REASON_NOT_IN_ACCESS_ALLOWLIST",
  "REASON_ADMIN_DISABLED",
  "REASON_PROTECTION_ON",
  "REASON_BROWSER_UNPROTECTED",
  "REASON_RUN_EVERYTHING",
  "REASON_AUTO_RUN_OFF",
  "REASON_ALLOWLISTED",
  "REASON_NOT_IN_ADMIN_ALLOWLIST",
  "REASON_NOT_ALLOWLISTED",
  "REASON_COMMAND_ALLOWED",
  "REASON_COMMAND_BLOCKED",
  "REASON_COMMAND_NOT_ALLOWLISTED",
  "REASON_DELETE_PROTECTED",
  "REASON_AUTO_RUN_ON",
  "REASON_NOT_IN_FILE_ALLOWLIST",
  "REASON_NO_ROLE_ALLOWLIST",
  "REASON_NOT_IN_ROLE_ALLOWLIST",
  "REASON_RESTRICTED",
  "REASON_COMMAND_DENIED",
  "REASON_APPROVED",
  "REASON_APPROVAL_DENIED",
  "REASON_APPROVAL_EXPIRED",
  "REASON_RATE_LIMITED",
] as const;
export type Reason = (typeof Reason)[number];

export const SignInFlow = [
  "SIGN_IN_FLOW_UNSPECIFIED",
  "SIGN_IN_FLOW_DEVICE",
  "SIGN_IN_FLOW_BROWSER",
] as const;
export type SignInFlow = (typeof SignInFlow)[number];

export const SignInBearer = [
  "SIGN_IN_BEARER_UNSPECIFIED",
  "SIGN_IN_BEARER_ID_TOKEN",
  "SIGN_IN_BEARER_ACCESS_TOKEN",
] as const;
export type SignInBearer = (typeof SignInBearer)[number];

export type GetTeamAdminSettingsRequest = {
  teamId?: string;
};

export type GetTeamAdminSettingsResponse = {
  settings?: TeamAdminSettings;
  /**
   * The policy file that manages the team, when one does: the API refuses every
   * write of its admin settings (edit the file instead). Empty otherwise.
   */
  managedBy?: string;
};

export type UpdateTeamAdminSettingsRequest = {
  teamId?: string;
  autoRunControls?: AutoRunControls;
  expectedRevision?: U64;
};

export type UpdateTeamAdminSettingsResponse = {
  /** The settings as stored, with their new revision. */
  settings?: TeamAdminSettings;
  /**
   * What in the settings written may not mean what the admin thinks (an allowed
   * prefix naming a code runner or a program toolgate has no knowledge of, whose
   * effects are unknown); the settings were written all the same.
   */
  warnings?: PolicyWarning[];
};

/** A valid setting that may not mean what its admin thinks. */
export type PolicyWarning = {
  /** The field it is about, under auto_run_controls (`allowed[2]`). */
  field?: string;
  /** What it allows and how to narrow it. */
  message?: string;
};

export type ValidateTeamAdminSettingsRequest = {
  teamId?: string;
  autoRunControls?: AutoRunControls;
  expectedRevision?: U64;
};

export type ValidateTeamAdminSettingsResponse = {
  /** The settings in force, unchanged, with their revision. */
  settings?: TeamAdminSettings;
  /** As UpdateTeamAdminSettings would answer for the settings checked. */
  warnings?: PolicyWarning[];
};

export type ListAuditEventsRequest = {
  teamId?: string;
  /** Only events with an id greater than this (for paging and tailing). */
  afterId?: U64;
  /** At most this many events (default 100, at most 1000). */
  limit?: number;
  /** Only events of this kind, when set. */
  kind?: AuditEventKind;
  /** Only events by this actor, when set. */
  actor?: string;
  /**
   * Only events at or after this time, when set. Must lie within years 1 to
   * 9999 with nanos in 0..999999999: else INVALID_ARGUMENT naming `since`.
   */
  since?: string;
};

export type AuditEvent = {
  id?: U64;
  teamId?: string;
  /** The team revision the event belongs to (the revision seen, for decisions). */
  revision?: U64;
  actor?: string;
  kind?: AuditEventKind;
  at?: string;
  /** What changed or what was denied. */
  detail?: { [key: string]: unknown };
};

export type ListAuditEventsResponse = {
  events?: AuditEvent[];
  /** The id to pass as after_id for the next page; 0 when there is none. */
  nextAfterId?: U64;
};

export type GetUserSettingsRequest = {
  teamId?: string;
  userId?: string;
};

export type GetUserSettingsResponse = {
  settings?: UserSettings;
};

export type UpdateUserSettingsRequest = {
  settings?: UserSettings;
  expectedRevision?: U64;
  /**
   * The fields of `settings` to change: mcp_allowed_tools,
   * yolo_mcp_tools_disabled, playwright_protection, use_yolo_mode,
   * yolo_enable_run_everything, command_allowlist, command_denylist. Any other
   * path is INVALID_ARGUMENT naming it. Empty: the whole document is replaced
   * (clients written before masks existed keep working).
   */
  updateMask?: string;
};

export type UpdateUserSettingsResponse = {
  /** The settings as stored, with their new revision. */
  settings?: UserSettings;
};

export type AddToAllowlistRequest = {
  teamId?: string;
  userId?: string;
  server?: string;
  tool?: string;
};

export type RemoveFromAllowlistRequest = {
  teamId?: string;
  userId?: string;
  /** The entry as stored, e.g. `github:create_issue`. */
  entry?: string;
};

export type AddToAllowlistResponse = {
  settings?: UserSettings;
  /** False when the list was left as it was. */
  changed?: boolean;
  /** Why it was left as it was (already present, covered by a wildcard). */
  detail?: string;
  /**
   * When the entry was added but changes no decision now (the team's allowlist
   * replaces the user's, auto-run is off, run-everything already allows
   * everything, the admin blocks it, …): why, and what would make it count.
   */
  note?: string;
};

export type RemoveFromAllowlistResponse = {
  settings?: UserSettings;
  /** False when the list was left as it was. */
  changed?: boolean;
  /** Why it was left as it was (the entry was absent). */
  detail?: string;
};

export type ReportTamperingRequest = {
  /** Empty: the token's own. */
  teamId?: string;
  /** Empty: the token's own. A member may name only itself. */
  userId?: string;
  file?: ManagedFile;
  /**
   * The file's absolute path on the machine (at most 1024 bytes, no control
   * characters).
   */
  path?: string;
  /** The machine's host name (at most 253 bytes: letters, digits, `.`, `-`, `_`). */
  host?: string;
  /** The hex SHA-256 of what was found; empty when the file was gone. */
  foundSha256?: string;
  /** Whether toolgate's content was written back. */
  restored?: boolean;
};

export type ReportTamperingResponse = {
  /**
   * False when the principal was past its bound: the report is counted into its
   * next recorded one (detail `reports_suppressed`).
   */
  recorded?: boolean;
};

export type McpCall = {
  server?: string;
  tool?: string;
  /**
   * The tool's action or mode, for servers whose tools take one (a browser
   * server's `interact({action: "navigate"})`): the policy file's lists match the
   * qualified name `tool.action`, or `tool` alone when this is empty.
   */
  action?: string;
};

/**
 * An internal tool name (`mcp_<server>_<tool>` or `mcp__<server>__<tool>`),
 * split into server and tool; a plain name belongs to fallback_server.
 */
export type McpInternalCall = {
  name?: string;
  fallbackServer?: string;
};

export type ToolCall = {
  mcp?: McpCall;
  mcpInternal?: McpInternalCall;
  /** A shell command line. */
  shell?: string;
  /** The path of a file to delete. */
  deleteFile?: string;
  /** What the call touches, read when the request names an agent. */
  arguments?: CallArguments;
};

export type EvaluateRequest = {
  teamId?: string;
  userId?: string;
  call?: ToolCall;
  /** Include the ordered list of checks made. */
  explain?: boolean;
  /**
   * Who makes the call, for the team's roles; unset (or naming neither an agent
   * nor a role), the call is decided as if roles did not exist.
   */
  agent?: AgentContext;
  /**
   * The agent client making the call, for the decision log (claude-code, codex,
   * gemini-cli, cursor, mcp-proxy…): lowercase letters, digits and `-`, at most
   * 32 bytes; empty when unknown. `hook-check` marks `toolgate hook check`'s
   * sample call: its ALLOW or ASK is not written to the decision log (a DENY is).
   */
  client?: string;
  /**
   * What the caller can do with an ASK that goes to central approval; unset,
   * the ASK is returned as it is (the caller cannot wait).
   */
  approval?: ApprovalCapability;
  /**
   * The client's own id for this call (Claude Code's `tool_use_id`), kept in the
   * decision log so the client's telemetry about the call joins its record:
   * printable ASCII without spaces, at most 256 bytes; empty when unknown.
   */
  toolUseId?: string;
};

/** A caller's side of central approvals. */
export type ApprovalCapability = {
  /**
   * The caller will wait for the answer (AwaitApproval) when the team sends
   * the ASK to its approvers: the decision then carries `approval`.
   */
  canWait?: boolean;
  /**
   * Whether a person at the client can answer the ASK; false: nobody there
   * (headless). Unset: unknown, taken as a person there.
   */
  interactive?: boolean;
  /** The client (claude-code, codex, cursor, gemini, proxy), shown to approvers. */
  client?: string;
  /** The client's session, which "for the session" grants are bound to. */
  sessionId?: string;
};

/** Where an ASK went to central approval: wait for it with AwaitApproval. */
export type ApprovalTicket = {
  requestId?: string;
  /** The call is refused if nobody answers before this. */
  deadline?: string;
};

/** The context of a call, for roles: the agent, its role, the context type. */
export type AgentContext = {
  agentId?: string;
  /**
   * The role the agent claims (a Claude Code subagent's agent_type). An agent
   * a role names keeps that role whatever it claims.
   */
  role?: string;
  /** The context type; empty means the roles document's defaultContext. */
  contextType?: string;
  /** What per-session quotas count by. */
  sessionId?: string;
};

/** What a call touches, for the roles' restrictions (all optional). */
export type CallArguments = {
  /**
   * The operation (CREATE_COMPONENT, FILE_READ); empty: the tool's own
   * (a built-in tool's FILE_READ, FILE_WRITE, PROCESS_EXECUTE, NETWORK_REQUEST;
   * an MCP tool's `server:tool`).
   */
  operation?: string;
  filePath?: string;
  componentType?: string;
  componentCount?: U64;
  /**
   * The call's arguments as the client sends them (Claude Code's tool_input):
   * file_path, url, command, content… are read from it.
   */
  toolInput?: { [key: string]: unknown };
  /** The working directory relative paths resolve against (absolute). */
  cwd?: string;
};

/** A limit the caller must apply itself (a role's maxQueryTime…). */
export type Obligation = {
  name?: string;
  /** The limit as written (`5s`), or JSON for a list or a number. */
  value?: string;
};

export type EvaluateResponse = {
  decision?: Decision;
};

export type AllowlistCandidate = {
  server?: string;
  tool?: string;
};

export type Check = {
  /** The check, e.g. `kill_switch`, `admin_blocklist`, `allowlist`. */
  name?: string;
  /** What it found. */
  result?: string;
};

export type Decision = {
  outcome?: Outcome;
  /** True unless the outcome is ALLOW. */
  needApproval?: boolean;
  reason?: Reason;
  /** A sentence for people. */
  message?: string;
  /** The allowlist or blocklist entry that decided, as written. */
  matchedEntry?: string;
  candidatesForAllowlist?: AllowlistCandidate[];
  /** For shell calls: the simple commands no allowed prefix covers. */
  commandCandidates?: string[];
  /** The team revision the decision saw. */
  revision?: U64;
  explanation?: Check[];
  /**
   * With REASON_NOT_IN_FILE_ALLOWLIST: the `tool.action` patterns the policy
   * file allows for the call's server.
   */
  allowedTools?: string[];
  /**
   * Limits the caller must apply itself (a role's restrictions the server
   * cannot enforce), when the call named an agent.
   */
  obligations?: Obligation[];
  /**
   * With ALLOW only (empty otherwise): the programs an allowed prefix names whose
   * effects are unknown (no row of the program table, or a code runner such as
   * `python` or `make`): what they run, write or delete was not checked. The
   * message says "effects unknown" too.
   */
  effectsUnknown?: string[];
  /**
   * With ALLOW only (empty otherwise): paths the call writes or deletes inside
   * its working directory (absolute when the request gave `cwd`, else relative to
   * it). The ALLOW holds only if each, once symbolic links are resolved, stays
   * inside the working directory and out of protected places (`.git/`, agent and
   * shell configuration), and no directory on the way is a repository's metadata
   * (`config`, `HEAD` and `objects/`). The server cannot see the files: a client
   * that runs the call checks this where they are, and treats the ALLOW as ASK
   * when a path fails.
   */
  pathsStayInside?: string[];
  /**
   * Who wrote the entry or the setting that decided: `team`, `user`, or the
   * team and the groups that gave it (`group contractors`, `team, group pii`).
   * Empty when no entry or admin setting decided.
   */
  origin?: string;
  /** Set when this ASK went to central approval: the request to wait for. */
  approval?: ApprovalTicket;
};

export type EvaluateBatchRequest = {
  teamId?: string;
  userId?: string;
  calls?: ToolCall[];
  explain?: boolean;
  /** Who makes every call of the batch, as in EvaluateRequest. */
  agent?: AgentContext;
  /** As in EvaluateRequest. */
  client?: string;
};

export type EvaluateBatchResponse = {
  /** One decision per call, in order, all at the same revision. */
  decisions?: Decision[];
  revision?: U64;
};

export type FilterToolsRequest = {
  teamId?: string;
  userId?: string;
  /** The MCP server whose tools/list result this is. */
  server?: string;
  /** The tools/list result: `{"tools": [...]}` or the bare array. */
  tools?: unknown;
  /** As in EvaluateRequest. */
  client?: string;
};

export type FilterToolsResponse = {
  /** The same shape as given, with denied and malformed tools removed. */
  tools?: unknown;
  removed?: string[];
  malformedSkipped?: number;
  revision?: U64;
};

export type GetEffectivePolicyRequest = {
  teamId?: string;
  userId?: string;
};

export type GetEffectivePolicyResponse = {
  policy?: EffectivePolicy;
};

export type EffectivePolicy = {
  admin?: TeamAdminSettings;
  user?: UserSettings;
  /** The team revision this policy is at. */
  revision?: U64;
  /**
   * The server's file-managed `tool.action` lists (the same for every team).
   * They carry no team revision: when the policy file changes them, every
   * WatchPolicy stream is sent a snapshot with resync set.
   */
  fileAllowlists?: ToolActionAllowlist[];
  /**
   * The caller's groups whose policies are combined into `admin`, by name: for a
   * member of such a group, `admin` holds the team's controls combined with them
   * (exactly what its calls are decided by) and no group policies of its own.
   * Empty: `admin` is the team's document as stored.
   */
  groups?: string[];
};

/**
 * The `tool.action` names one MCP server's calls may use, from the
 * server's policy file. `*`, `tool.*` or an exact name, matched
 * case-insensitively; an empty list allows everything.
 */
export type ToolActionAllowlist = {
  server?: string;
  allowedTools?: string[];
};

export type WatchPolicyRequest = {
  teamId?: string;
  userId?: string;
  /**
   * Resume after this revision: only the changes after it are sent, or a
   * resync snapshot when it is older than the retained history or newer than
   * the team's revision (a client from before a backup was restored).
   */
  afterRevision?: U64;
};

export type PolicySnapshot = {
  policy?: EffectivePolicy;
  /**
   * True when sent because the history no longer reaches the revision asked
   * for, because the team never reached it, or because the subscriber fell
   * behind.
   */
  resync?: boolean;
};

export type Heartbeat = {
  at?: string;
};

/** One message of the WatchPolicy stream. */
export type WatchPolicyResponse = {
  revision?: U64;
  snapshot?: PolicySnapshot;
  adminSettings?: TeamAdminSettings;
  userSettings?: UserSettings;
  heartbeat?: Heartbeat;
};

export type GetSignInRequest = {
};

export type GetSignInResponse = {
  /** Unset when the server takes no sign-in through an identity provider. */
  signIn?: SignIn;
};

/**
 * What `toolgate login --sso` needs: it finds the rest by OpenID discovery at
 * ISSUER/.well-known/openid-configuration.
 */
export type SignIn = {
  /** The issuer: https, or plain http on loopback when allow_loopback_http says so. */
  issuer?: string;
  /** The public OAuth client (no secret) toolgate signs in as. */
  clientId?: string;
  scopes?: string[];
  flows?: SignInFlow[];
  /** Which of the issuer's tokens the client sends to toolgate. */
  bearer?: SignInBearer;
  /** The issuer is a test provider on plain http on this machine. */
  allowLoopbackHttp?: boolean;
};

export type GetServerConfigRequest = {
};

export type GetServerConfigResponse = {
  /** The server's version, as `toolgate --version` prints it. */
  version?: string;
  /** The effective configuration, credentials redacted (see GetServerConfig). */
  config?: { [key: string]: unknown };
  /**
   * The commit the server's binary was built from (git's short hash), or
   * "unknown" for a build outside a git checkout.
   */
  commit?: string;
};

// toolgate/v1/tokens.proto

export const TokenRole = [
  "TOKEN_ROLE_UNSPECIFIED",
  "TOKEN_ROLE_MEMBER",
  "TOKEN_ROLE_ADMIN",
  "TOKEN_ROLE_SERVICE",
] as const;
export type TokenRole = (typeof TokenRole)[number];

export type CreateTokenRequest = {
  teamId?: string;
  /** The user (or agent, for a service token) the token speaks for. */
  userId?: string;
  role?: TokenRole;
  /** How long the token is valid; 0 means 90 days, at most 366 days. */
  expiresInSeconds?: U64;
  /**
   * The groups its holder is in (docs/groups.md): the team's group policies of
   * these apply to the holder's own calls. Group names, at most 64.
   */
  groups?: string[];
};

export type IssuedToken = {
  /** Names the token in lists, revocations and the audit trail; not a secret. */
  tokenId?: string;
  teamId?: string;
  userId?: string;
  role?: TokenRole;
  createdAt?: string;
  createdBy?: string;
  expiresAt?: string;
  /** Set once revoked. */
  revokedAt?: string;
  revokedBy?: string;
  /** The groups its holder is in, by name. */
  groups?: string[];
};

export type CreateTokenResponse = {
  token?: IssuedToken;
  /** The bearer token: shown this once, never stored or returned again. */
  secret?: string;
};

export type ListTokensRequest = {
  /**
   * The team whose tokens to list; empty: the caller's own team (every team for
   * an operator).
   */
  teamId?: string;
  /** Revoked and expired tokens too. */
  includeInactive?: boolean;
};

export type ListTokensResponse = {
  /** Newest first, at most 1000. */
  tokens?: IssuedToken[];
};

export type RevokeTokenRequest = {
  tokenId?: string;
};

export type RevokeTokenResponse = {
  token?: IssuedToken;
  /** False when the token was already revoked. */
  revoked?: boolean;
};

// toolgate/v1/decisions.proto

/** Where a decision was asked for. */
export const DecisionSource = [
  "DECISION_SOURCE_UNSPECIFIED",
  "DECISION_SOURCE_EVALUATE",
  "DECISION_SOURCE_EVALUATE_BATCH",
  "DECISION_SOURCE_FILTER_TOOLS",
  "DECISION_SOURCE_APPROVAL",
] as const;
export type DecisionSource = (typeof DecisionSource)[number];

/** Why an impact preview answered before deciding every record of its window. */
export const PreviewCutShort = [
  "PREVIEW_CUT_SHORT_UNSPECIFIED",
  "PREVIEW_CUT_SHORT_RECORDS",
  "PREVIEW_CUT_SHORT_TIME",
] as const;
export type PreviewCutShort = (typeof PreviewCutShort)[number];

/** What the filters select; every set field must match. */
export type DecisionFilter = {
  /** Empty: the caller's own team (an operator must name one). */
  teamId?: string;
  userId?: string;
  agentId?: string;
  outcome?: Outcome;
  reason?: Reason;
  /** An MCP call's `server:tool` (or `server:` for a whole server) starts with this. */
  toolPrefix?: string;
  /** A shell command line (or a deleted path) starts with this. */
  commandPrefix?: string;
  /** At or after this time, when set. */
  since?: string;
  /** Before this time, when set. */
  until?: string;
};

/** The call that was decided. */
export type DecidedCall = {
  mcp?: McpCall;
  /** A shell command line: its first bytes, see command_bytes/command_sha256. */
  shellExcerpt?: string;
  /** The path of a file to delete: its first bytes, as for a command. */
  deleteFileExcerpt?: string;
  /** The full length in bytes of the command line or path. */
  commandBytes?: U64;
  /** The SHA-256 of the full command line or path, hex. */
  commandSha256?: string;
};

export type DecisionRecord = {
  /** Opaque, unique, increasing with the time of writing within one replica. */
  id?: string;
  at?: string;
  /** The credential's name that asked. */
  principal?: string;
  teamId?: string;
  userId?: string;
  agentId?: string;
  role?: string;
  /**
   * The agent client when the caller said (claude-code, codex, gemini-cli,
   * cursor, mcp-proxy, …); empty when unknown.
   */
  client?: string;
  source?: DecisionSource;
  call?: DecidedCall;
  outcome?: Outcome;
  reason?: Reason;
  matchedEntry?: string;
  /** The team revision the decision saw. */
  revision?: U64;
  /**
   * Identical DENYs this record stands for: more than 1 when the principal was
   * past its decision-log budget and repeated the same call; `at` is then the
   * last of them and `first_at` the first. 0 or 1: one decision.
   */
  count?: U64;
  /** The first of `count` identical DENYs; unset when `count` is at most 1. */
  firstAt?: string;
  /**
   * The groups whose policies the call was decided under, by name: the caller's
   * own groups when it decided its own call (docs/groups.md); empty for none.
   */
  groups?: string[];
  /**
   * The programs an ALLOW of a command line rested on whose effects toolgate does
   * not know (no row of its program table, or code the line does not show): what
   * they ran, wrote or deleted was not checked. Empty for every other decision.
   */
  effectsUnknown?: string[];
  /**
   * The client's own id for the call (Claude Code's `tool_use_id`) when it sent
   * one with the call; empty otherwise.
   */
  toolUseId?: string;
  /**
   * What the client itself did with the call, from its own telemetry
   * (docs/client-telemetry.md), joined by `tool_use_id`; unset when none arrived.
   */
  clientDecision?: ClientDecision;
};

/**
 * A client's own decision about a call, as its telemetry reported it (Claude
 * Code's `claude_code.tool_decision` event).
 */
export type ClientDecision = {
  /** As the client named it: `accept` or `reject`. */
  decision?: string;
  /**
   * What decided it, as the client named it: `config`, `hook`, `user_permanent`,
   * `user_temporary`, `user_reject`.
   */
  source?: string;
  /** When toolgate received it. */
  at?: string;
  /** The tool's name as the client named it. */
  toolName?: string;
};

export type ListDecisionsRequest = {
  filter?: DecisionFilter;
  /** At most this many records (default 100, at most 1000). */
  pageSize?: number;
  /**
   * From a previous response's next_page_token; empty for the first page. A token
   * is bound to the filter it was made with.
   */
  pageToken?: string;
};

export type ListDecisionsResponse = {
  /** Newest first. */
  decisions?: DecisionRecord[];
  /**
   * Empty when there is no further page. Paging is stable under concurrent writes:
   * records written after the first page do not shift later pages.
   */
  nextPageToken?: string;
};

export type WatchDecisionsRequest = {
  filter?: DecisionFilter;
};

export type WatchDecisionsResponse = {
  decision?: DecisionRecord;
  /**
   * This many records were not sent because the subscriber fell behind, or
   * because another replica's could not be read (0: how many is not known, as
   * after the connection that carries other replicas' notices was lost); list
   * them with ListDecisions.
   */
  lagged?: U64;
  /**
   * A client reported what it did with one of its calls (docs/client-telemetry.md),
   * usually after the call's record was sent: join it by team, user and
   * tool_use_id. Only this replica's reports are sent; ListDecisions joins all.
   */
  clientDecision?: ClientDecisionReport;
};

/** A client's decision as it arrived, with the call it is about. */
export type ClientDecisionReport = {
  teamId?: string;
  userId?: string;
  toolUseId?: string;
  decision?: ClientDecision;
};

export type PreviewTeamAdminSettingsRequest = {
  teamId?: string;
  /** The proposed controls, as for UpdateTeamAdminSettings. */
  autoRunControls?: AutoRunControls;
  /**
   * The window of logged calls to decide again, ending now (default 7 days, at
   * most 90 days).
   */
  windowSeconds?: U64;
  /** Examples kept per group (default 3, at most 20). */
  examplesPerGroup?: number;
};

/** Calls whose outcome changes from `from` to `to`, in one group. */
export type ImpactGroup = {
  from?: Outcome;
  to?: Outcome;
  /**
   * `server:tool` for an MCP call, the first word(s) of a command line, or
   * `delete_file`; empty for the from→to total.
   */
  key?: string;
  count?: U64;
  /**
   * Some of the calls (a record each, with the reason of the new decision in
   * new_reason).
   */
  examples?: ImpactExample[];
};

export type ImpactExample = {
  record?: DecisionRecord;
  newReason?: Reason;
  newMatchedEntry?: string;
};

export type PreviewTeamAdminSettingsResponse = {
  /** Logged calls in the window. */
  decided?: U64;
  /** Those whose outcome does not change. */
  unchanged?: U64;
  /** Those whose outcome changes. */
  changed?: U64;
  /**
   * Those that cannot be decided again: the log keeps a command line (or path)
   * only up to decision_log.max_stored_command_bytes.
   */
  unknown?: U64;
  /** One group per from→to (key empty), biggest first. */
  transitions?: ImpactGroup[];
  /** One group per from→to and tool or command prefix, biggest first. */
  groups?: ImpactGroup[];
  /** The revision the team's current controls are at. */
  revision?: U64;
  windowStart?: string;
  windowEnd?: string;
  /**
   * The preview stopped before the window's oldest record (see cut_short): only
   * the newest were decided again.
   */
  truncated?: boolean;
  /** Why the preview stopped early, when it did. */
  cutShort?: PreviewCutShort;
  /**
   * Calls the proposal would ALLOW that rest on programs whose effects toolgate
   * does not know (no row of its program table, or a code runner): what they
   * run, write or delete would not be checked.
   */
  effectsUnknown?: U64;
  /**
   * A preview of the organisation's group policies (team_id "*org", operators
   * only): each team with logged calls of a member of a group whose policy the
   * proposal changes, with its own impact; the fields above are their sums (and
   * count only those calls). Empty for a team's preview.
   */
  teams?: TeamImpact[];
};

/** One team's part of a preview of the organisation's group policies. */
export type TeamImpact = {
  teamId?: string;
  /**
   * The team's logged calls by members of a changed group, decided again under
   * the team's controls with the organisation's policies in force and proposed;
   * revision is the team's.
   */
  impact?: PreviewTeamAdminSettingsResponse;
};

// toolgate/v1/principal.proto

export const PrincipalRole = [
  "PRINCIPAL_ROLE_UNSPECIFIED",
  "PRINCIPAL_ROLE_MEMBER",
  "PRINCIPAL_ROLE_ADMIN",
  "PRINCIPAL_ROLE_SERVICE",
  "PRINCIPAL_ROLE_OPERATOR",
] as const;
export type PrincipalRole = (typeof PrincipalRole)[number];

export type GetPrincipalRequest = {
};

export type GetPrincipalResponse = {
  /** The credential's name (a configured token's name, `jwt:TEAM/USER@ISSUER`, …). */
  name?: string;
  role?: PrincipalRole;
  /** The principal's team; empty for an operator. */
  teamId?: string;
  /**
   * The user the principal acts as (whose settings a member may write); empty
   * when its credential names none.
   */
  userId?: string;
  /**
   * The teams the principal may read: its own, or for an operator every team with
   * stored policy (at most 1000, in name order).
   */
  teamIds?: string[];
  /** The principal's groups (docs/groups.md), by name. */
  groups?: string[];
};

export type ListSignInsRequest = {
  /**
   * The team whose users to list; empty: the caller's own team (every team for an
   * operator).
   */
  teamId?: string;
};

/**
 * A user's last sign-in through the identity provider: recorded at the first call
 * with each new token (a sign-in or a refresh), one per team and user.
 */
export type SignInRecord = {
  teamId?: string;
  userId?: string;
  /** The principal it authenticated as (`jwt:TEAM/USER@ISSUER`). */
  principal?: string;
  /** The identity provider's issuer. */
  issuer?: string;
  /** The groups its token carried, as the server read them. */
  groups?: string[];
  firstAt?: string;
  lastAt?: string;
};

export type ListSignInsResponse = {
  /** The latest first, at most 1000. */
  signIns?: SignInRecord[];
};

// toolgate/v1/approvals.proto

export const ApprovalState = [
  "APPROVAL_STATE_UNSPECIFIED",
  "APPROVAL_STATE_PENDING",
  "APPROVAL_STATE_APPROVED",
  "APPROVAL_STATE_DENIED",
  "APPROVAL_STATE_EXPIRED",
  "APPROVAL_STATE_ABANDONED",
] as const;
export type ApprovalState = (typeof ApprovalState)[number];

/** How far an approval reaches. */
export const ApprovalScope = [
  "APPROVAL_SCOPE_UNSPECIFIED",
  "APPROVAL_SCOPE_ONCE",
  "APPROVAL_SCOPE_SESSION",
  "APPROVAL_SCOPE_DURATION",
  "APPROVAL_SCOPE_ALLOWLIST",
] as const;
export type ApprovalScope = (typeof ApprovalScope)[number];

/** One approval request. */
export type Approval = {
  requestId?: string;
  teamId?: string;
  /** The user the call was made for. */
  userId?: string;
  /** The principal that evaluated the call (the user's token, or a service). */
  principal?: string;
  /** The agent that made the call, when the request named one. */
  agentId?: string;
  /** The client that made the call (claude-code, codex, gemini, cursor, proxy). */
  client?: string;
  /** The client's session, which APPROVAL_SCOPE_SESSION grants are bound to. */
  sessionId?: string;
  call?: ToolCall;
  /** One line saying what the call does (`shell: rm -rf build`). */
  summary?: string;
  /** The ASK that created the request, with its reason and message. */
  decision?: Decision;
  createdAt?: string;
  /** After this the request can no longer be answered, and the call is refused. */
  deadline?: string;
  state?: ApprovalState;
  /** Who answered (the principal), when answered. */
  answeredBy?: string;
  answeredAt?: string;
  scope?: ApprovalScope;
  /** With APPROVAL_SCOPE_DURATION: when the grant ends. */
  grantExpiresAt?: string;
  /** The denial's reason, or the approver's note. */
  answerReason?: string;
  /**
   * Once no longer pending: what the waiting call gets, ALLOW (REASON_APPROVED)
   * or DENY (REASON_APPROVAL_DENIED, REASON_APPROVAL_EXPIRED), with who decided
   * and why in its message.
   */
  answer?: Decision;
  /**
   * With APPROVAL_SCOPE_ALLOWLIST: the entry added and the settings revision
   * that added it.
   */
  allowlistEntry?: string;
  allowlistRevision?: U64;
};

export type ListApprovalsRequest = {
  /** Empty: the caller's own team. */
  teamId?: string;
  /** Only requests still waiting for an answer. */
  pendingOnly?: boolean;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
};

export type ListApprovalsResponse = {
  /** Newest first. */
  approvals?: Approval[];
};

export type WatchApprovalsRequest = {
  /** Empty: the caller's own team. */
  teamId?: string;
};

export type WatchApprovalsResponse = {
  /**
   * The pending requests when the stream opened (and again after the server
   * may have missed changes: replace what you hold).
   */
  snapshot?: ApprovalSnapshot;
  /** A request created, answered or expired. */
  approval?: Approval;
  heartbeat?: Heartbeat;
};

export type ApprovalSnapshot = {
  pending?: Approval[];
};

export type GetApprovalRequest = {
  requestId?: string;
};

export type GetApprovalResponse = {
  approval?: Approval;
};

export type AwaitApprovalRequest = {
  requestId?: string;
};

export type AwaitApprovalResponse = {
  /** The request as it stands; the last one sent has `answer` set. */
  approval?: Approval;
  heartbeat?: Heartbeat;
};

export type ApproveRequestRequest = {
  requestId?: string;
  scope?: ApprovalScope;
  /**
   * With APPROVAL_SCOPE_DURATION: how long the grant lasts (at most the
   * team's approvals.max_grant_seconds).
   */
  durationSeconds?: U64;
  /** An optional note kept with the answer. */
  note?: string;
  /**
   * With APPROVAL_SCOPE_ALLOWLIST: the revision of the settings the entry is
   * added to, as read; unset, the current one (with a retry on a race).
   */
  expectedRevision?: U64;
};

export type ApproveRequestResponse = {
  approval?: Approval;
};

export type DenyRequestRequest = {
  requestId?: string;
  /** Why: required, and what the agent is told. */
  reason?: string;
};

export type DenyRequestResponse = {
  approval?: Approval;
};

// toolgate/v1/pins.proto

export const PinState = [
  "PIN_STATE_UNSPECIFIED",
  "PIN_STATE_PINNED",
  "PIN_STATE_CHANGED",
  "PIN_STATE_NOT_PINNED",
] as const;
export type PinState = (typeof PinState)[number];

/** A tool as an MCP server lists it. */
export type ToolDefinition = {
  name?: string;
  /** Unset: the tool has no description. */
  description?: string;
  inputSchema?: { [key: string]: unknown };
};

/** One finding of the description checks. */
export type DescriptionFlag = {
  /** too-long, invisible-character, bidirectional-character, or a rule's kind. */
  kind?: string;
  /** `description`, or the JSON pointer of a text in the input schema. */
  place?: string;
  why?: string;
};

export type ToolCheck = {
  name?: string;
  state?: PinState;
  /** The hex SHA-256 of the definition as reported. */
  sha256?: string;
  flags?: DescriptionFlag[];
  /**
   * Whether the gateway shows the tool: pinned and, when the team hides
   * flagged tools, not flagged (or flagged but accepted by an admin).
   */
  shown?: boolean;
};

export type CheckToolsRequest = {
  teamId?: string;
  /** The MCP server id the tools belong to in policy entries. */
  server?: string;
  /** At most 1000 tools, each definition at most 64 KiB. */
  tools?: ToolDefinition[];
};

export type CheckToolsResponse = {
  /** In the order of the request. */
  checks?: ToolCheck[];
};

/** A definition as recorded: the canonical JSON (name, description, inputSchema). */
export type PinnedDefinition = {
  sha256?: string;
  definition?: { [key: string]: unknown };
  flags?: DescriptionFlag[];
  at?: string;
  by?: string;
};

export type ToolPin = {
  server?: string;
  tool?: string;
  pinned?: PinnedDefinition;
  /** The different definition a gateway saw since, if any. */
  changed?: PinnedDefinition;
  /** Changed lines first `-` (pinned) then `+` (changed); empty without a change. */
  diff?: string[];
};

export type ListPinsRequest = {
  teamId?: string;
  /** Empty: every server's. */
  server?: string;
  /** Only tools whose definition changed. */
  changedOnly?: boolean;
};

export type ListPinsResponse = {
  pins?: ToolPin[];
};

export type AcceptPinRequest = {
  teamId?: string;
  server?: string;
  tool?: string;
  /**
   * The hash of the changed definition the admin reviewed (ListPins'
   * `changed.sha256`): a definition that changed again since is not accepted.
   */
  sha256?: string;
};

export type AcceptPinResponse = {
  pin?: ToolPin;
};

export type SetPinsRequest = {
  teamId?: string;
  server?: string;
  /** Pinned as given, replacing any pin of the same tool. At most 1000. */
  tools?: ToolDefinition[];
};

export type SetPinsResponse = {
  pins?: ToolPin[];
};

export type PinSettings = {
  /**
   * A member's (or a service's) gateway may pin a tool seen first; otherwise
   * only admins' gateways and SetPins pin, and other tools stay hidden.
   */
  membersPinFirst?: boolean;
  /**
   * Tools the description checks flag are hidden until an admin pins them
   * with SetPins or AcceptPin.
   */
  hideFlagged?: boolean;
};

export type GetPinSettingsRequest = {
  teamId?: string;
};

export type GetPinSettingsResponse = {
  settings?: PinSettings;
};

export type UpdatePinSettingsRequest = {
  teamId?: string;
  settings?: PinSettings;
};

export type UpdatePinSettingsResponse = {
  settings?: PinSettings;
};

export type WatchPinsRequest = {
  teamId?: string;
  /** Empty: every server's. */
  server?: string;
};

export type PinsChanged = {
  server?: string;
};

export type WatchPinsResponse = {
  changed?: PinsChanged;
  heartbeat?: Heartbeat;
};

/** Every RPC by its path under `/toolgate.v1.`: its request, its response, and
 * whether the response is a stream of them. */
export type Methods = {
  "AdminService/GetTeamAdminSettings": { request: GetTeamAdminSettingsRequest; response: GetTeamAdminSettingsResponse; stream: false };
  /**
   * Replaces the team's controls. With expected_revision set, fails with
   * ABORTED (changing nothing) unless the settings are still at that revision.
   */
  "AdminService/UpdateTeamAdminSettings": { request: UpdateTeamAdminSettingsRequest; response: UpdateTeamAdminSettingsResponse; stream: false };
  /**
   * Checks controls exactly as UpdateTeamAdminSettings would (the caller's right to
   * write them, the team not managed by the policy file, every entry and category,
   * the expected revision) and writes nothing: for dry runs and diffs. A separate
   * RPC, not a flag, so a server that lacks it answers UNIMPLEMENTED instead of
   * applying what was meant as a dry run.
   */
  "AdminService/ValidateTeamAdminSettings": { request: ValidateTeamAdminSettingsRequest; response: ValidateTeamAdminSettingsResponse; stream: false };
  "AdminService/ListAuditEvents": { request: ListAuditEventsRequest; response: ListAuditEventsResponse; stream: false };
  /**
   * The user's settings; a user who never wrote any gets the team's default
   * user settings (revision 0), or toolgate's defaults.
   */
  "UserSettingsService/GetUserSettings": { request: GetUserSettingsRequest; response: GetUserSettingsResponse; stream: false };
  /**
   * With update_mask: changes only the fields it names (paths are UserSettings
   * field names, e.g. `use_yolo_mode`), on top of the settings in effect.
   * Without: replaces the whole document, as before.
   */
  "UserSettingsService/UpdateUserSettings": { request: UpdateUserSettingsRequest; response: UpdateUserSettingsResponse; stream: false };
  /**
   * Adds `server:tool` to the user's MCP allowlist by the add-entry rules: no
   * duplicate, nothing a `server:*` entry already covers.
   */
  "UserSettingsService/AddToAllowlist": { request: AddToAllowlistRequest; response: AddToAllowlistResponse; stream: false };
  "UserSettingsService/RemoveFromAllowlist": { request: RemoveFromAllowlistRequest; response: RemoveFromAllowlistResponse; stream: false };
  "PolicyService/Evaluate": { request: EvaluateRequest; response: EvaluateResponse; stream: false };
  "PolicyService/EvaluateBatch": { request: EvaluateBatchRequest; response: EvaluateBatchResponse; stream: false };
  /** Keeps only the tools of a tools/list result that are not denied. */
  "PolicyService/FilterTools": { request: FilterToolsRequest; response: FilterToolsResponse; stream: false };
  "PolicyService/GetEffectivePolicy": { request: GetEffectivePolicyRequest; response: GetEffectivePolicyResponse; stream: false };
  /**
   * A snapshot of the effective policy, then one event per committed change
   * that affects it, in revision order, with heartbeats in between.
   */
  "PolicyService/WatchPolicy": { request: WatchPolicyRequest; response: WatchPolicyResponse; stream: true };
  /**
   * A managed file toolgate keeps for a client (`toolgate sync`) was found changed
   * or removed by someone else: written to the audit trail as TAMPERING_DETECTED.
   * A member reports only for itself. Each principal's reports are bounded (a few
   * a minute): past the bound one is counted into the next report recorded.
   */
  "PolicyService/ReportTampering": { request: ReportTamperingRequest; response: ReportTamperingResponse; stream: false };
  /**
   * The configuration in force, every credential redacted. Operators see the
   * principals (`auth`, without token hashes) and the store's and collector's
   * addresses; everyone else sees neither.
   */
  "ServerInfoService/GetServerConfig": { request: GetServerConfigRequest; response: GetServerConfigResponse; stream: false };
  /**
   * How developers sign in with the organisation's identity provider. Answered
   * without a token (who has none asks it first), so it says nothing secret.
   */
  "ServerInfoService/GetSignIn": { request: GetSignInRequest; response: GetSignInResponse; stream: false };
  "TokenService/CreateToken": { request: CreateTokenRequest; response: CreateTokenResponse; stream: false };
  "TokenService/ListTokens": { request: ListTokensRequest; response: ListTokensResponse; stream: false };
  "TokenService/RevokeToken": { request: RevokeTokenRequest; response: RevokeTokenResponse; stream: false };
  /** One page of records, newest first. */
  "DecisionLogService/ListDecisions": { request: ListDecisionsRequest; response: ListDecisionsResponse; stream: false };
  /**
   * Records as they are written, with the same filters. A subscriber that does
   * not keep up is sent a `lagged` message with the count it missed rather than
   * slowing anyone down.
   */
  "DecisionLogService/WatchDecisions": { request: WatchDecisionsRequest; response: WatchDecisionsResponse; stream: true };
  /**
   * Decides the team's logged calls of a window again under proposed controls and
   * says which change outcome. Admins (and operators) only. Changes nothing.
   */
  "DecisionLogService/PreviewTeamAdminSettings": { request: PreviewTeamAdminSettingsRequest; response: PreviewTeamAdminSettingsResponse; stream: false };
  "PrincipalService/GetPrincipal": { request: GetPrincipalRequest; response: GetPrincipalResponse; stream: false };
  /** Who signed in through the identity provider: a team's admins and operators. */
  "PrincipalService/ListSignIns": { request: ListSignInsRequest; response: ListSignInsResponse; stream: false };
  /** The team's requests, newest first (pending ones only, when asked). */
  "ApprovalService/ListApprovals": { request: ListApprovalsRequest; response: ListApprovalsResponse; stream: false };
  /**
   * The team's pending requests as a snapshot, then each request as it is
   * created, answered or expires, committed on any replica; heartbeats between.
   */
  "ApprovalService/WatchApprovals": { request: WatchApprovalsRequest; response: WatchApprovalsResponse; stream: true };
  "ApprovalService/GetApproval": { request: GetApprovalRequest; response: GetApprovalResponse; stream: false };
  /**
   * Waits for one request's answer: the request as it stands, then (once it is
   * approved, denied or past its deadline) its final state with `answer` set,
   * and the stream ends. Heartbeats keep an idle stream alive. A caller that
   * loses the stream calls again with the same id: the wait resumes, and an
   * answer given meanwhile is sent at once. Open to the requester (its user,
   * or the service that evaluated for it) and to approvers.
   */
  "ApprovalService/AwaitApproval": { request: AwaitApprovalRequest; response: AwaitApprovalResponse; stream: true };
  /**
   * Approves a pending request: once, for the session, for a duration, or by
   * adding the entry the call would need to the allowlist (a settings write
   * with its expected revision, audited and streamed like any other).
   */
  "ApprovalService/ApproveRequest": { request: ApproveRequestRequest; response: ApproveRequestResponse; stream: false };
  /** Denies a pending request; the reason is required and reaches the agent. */
  "ApprovalService/DenyRequest": { request: DenyRequestRequest; response: DenyRequestResponse; stream: false };
  "PinService/CheckTools": { request: CheckToolsRequest; response: CheckToolsResponse; stream: false };
  "PinService/ListPins": { request: ListPinsRequest; response: ListPinsResponse; stream: false };
  "PinService/AcceptPin": { request: AcceptPinRequest; response: AcceptPinResponse; stream: false };
  "PinService/SetPins": { request: SetPinsRequest; response: SetPinsResponse; stream: false };
  "PinService/GetPinSettings": { request: GetPinSettingsRequest; response: GetPinSettingsResponse; stream: false };
  "PinService/UpdatePinSettings": { request: UpdatePinSettingsRequest; response: UpdatePinSettingsResponse; stream: false };
  /**
   * An event each time the team's pins of the server change on any replica,
   * heartbeats between; a gateway checks its tools again on each.
   */
  "PinService/WatchPins": { request: WatchPinsRequest; response: WatchPinsResponse; stream: true };
};
