// The JSON shapes of the API's messages (canonical protobuf JSON: lowerCamelCase
// names, 64-bit integers as strings, enums by name, default values left out).

export type U64 = string | number;

export interface Principal {
  name?: string;
  role?: string;
  teamId?: string;
  userId?: string;
  teamIds?: string[];
  groups?: string[];
}

export interface UserSettings {
  teamId?: string;
  userId?: string;
  mcpAllowedTools?: string[];
  yoloMcpToolsDisabled?: boolean;
  playwrightProtection?: boolean;
  useYoloMode?: boolean;
  yoloEnableRunEverything?: boolean;
  commandAllowlist?: string[];
  commandDenylist?: string[];
  revision?: U64;
  updatedAt?: string;
  updatedBy?: string;
}

export interface AutoRunControls {
  enabled?: boolean;
  allowed?: string[];
  blocked?: string[];
  disableMcpAutoRun?: boolean;
  deleteFileProtection?: boolean;
  enableRunEverything?: boolean;
  mcpToolAllowlist?: string[];
  sandboxingControls?: { enabled?: boolean };
  browserProtection?: boolean;
  mcpToolBlocklist?: string[];
  killSwitch?: boolean;
  browserServerIds?: string[];
  listMode?: string;
  mcpAccessMode?: string;
  mcpAccessAllowlist?: string[];
  roles?: Record<string, unknown>;
  denied?: string[];
  defaultUserSettings?: UserSettings;
  approvals?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface TeamAdminSettings {
  teamId?: string;
  autoRunControls?: AutoRunControls;
  revision?: U64;
  updatedAt?: string;
  updatedBy?: string;
}

export interface AuditEvent {
  id?: U64;
  teamId?: string;
  revision?: U64;
  actor?: string;
  kind?: string;
  at?: string;
  detailJson?: string;
  detail?: unknown;
}

export interface McpCall {
  server?: string;
  tool?: string;
  action?: string;
}

export interface DecidedCall {
  mcp?: McpCall;
  shellExcerpt?: string;
  deleteFileExcerpt?: string;
  commandBytes?: U64;
  commandSha256?: string;
}

export interface DecisionRecord {
  id?: string;
  at?: string;
  principal?: string;
  teamId?: string;
  userId?: string;
  agentId?: string;
  role?: string;
  client?: string;
  source?: string;
  call?: DecidedCall;
  outcome?: string;
  reason?: string;
  matchedEntry?: string;
  revision?: U64;
  /** Identical DENYs the record stands for (its principal was past its budget). */
  count?: U64;
  firstAt?: string;
  /** The groups whose policies the call was decided under. */
  groups?: string[];
  /** The programs an ALLOW rested on whose effects toolgate does not know. */
  effectsUnknown?: string[];
  /** The client's own id for the call (Claude Code's tool_use_id). */
  toolUseId?: string;
  /** What the client did with the call, from its own telemetry. */
  clientDecision?: ClientDecision;
}

export interface ClientDecision {
  /** accept or reject. */
  decision?: string;
  /** config, hook, user_permanent, user_temporary or user_reject. */
  source?: string;
  toolName?: string;
  at?: string;
}

/** A client's report as WatchDecisions sends it, with the call it is about. */
export interface ClientDecisionReport {
  teamId?: string;
  userId?: string;
  toolUseId?: string;
  decision?: ClientDecision;
}

export interface DecisionFilter {
  teamId?: string;
  userId?: string;
  agentId?: string;
  outcome?: string;
  reason?: string;
  toolPrefix?: string;
  commandPrefix?: string;
  since?: string;
}

export interface ImpactExample {
  record?: DecisionRecord;
  newReason?: string;
  newMatchedEntry?: string;
}

export interface ImpactGroup {
  from?: string;
  to?: string;
  key?: string;
  count?: U64;
  examples?: ImpactExample[];
}

export interface Preview {
  decided?: U64;
  unchanged?: U64;
  changed?: U64;
  unknown?: U64;
  transitions?: ImpactGroup[];
  groups?: ImpactGroup[];
  revision?: U64;
  truncated?: boolean;
  cutShort?: string;
  /** A preview of the organisation's group policies: each team it touches. */
  teams?: { teamId?: string; impact?: Preview }[];
}

export interface IssuedToken {
  tokenId?: string;
  teamId?: string;
  userId?: string;
  role?: string;
}

export function num(v: U64 | undefined): number {
  return v === undefined ? 0 : Number(v);
}

export interface Decision {
  outcome?: string;
  reason?: string;
  message?: string;
  matchedEntry?: string;
}

export interface Approval {
  requestId?: string;
  teamId?: string;
  userId?: string;
  principal?: string;
  agentId?: string;
  client?: string;
  sessionId?: string;
  summary?: string;
  decision?: Decision;
  createdAt?: string;
  deadline?: string;
  state?: string;
  answeredBy?: string;
  answeredAt?: string;
  scope?: string;
  grantExpiresAt?: string;
  answerReason?: string;
  allowlistEntry?: string;
}
