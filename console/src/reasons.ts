// What each decision reason means, in words, for the decision log's explanations.
// Keyed by the proto's Reason (./proto.ts), so a reason without its words fails the
// type check; tests/it/console.rs checks the same against the server's reasons.

import type { Reason } from "./proto";

export const REASONS: Record<Exclude<Reason, "REASON_UNSPECIFIED">, string> = {
  REASON_KILL_SWITCH: "The team's kill switch is on: every call is denied.",
  REASON_INVALID_NAME: "The server or tool name is not a valid name, so a person decides.",
  REASON_BLOCKED_BY_ADMIN: "An admin blocklist entry matches the tool.",
  REASON_NOT_IN_ACCESS_ALLOWLIST: "The team lets only listed MCP tools exist, and this one is not listed.",
  REASON_ADMIN_DISABLED: "Admin controls are on with no allowlist and no run-everything: everything asks.",
  REASON_PROTECTION_ON: "Protection is on for this kind of tool: it always asks.",
  REASON_BROWSER_UNPROTECTED: "A browser tool, with browser protection off.",
  REASON_RUN_EVERYTHING: "Run-everything is on for the user (and permitted by the team).",
  REASON_AUTO_RUN_OFF: "The user's auto-run is off: every call asks.",
  REASON_ALLOWLISTED: "An allowlist entry matches the tool.",
  REASON_NOT_IN_ADMIN_ALLOWLIST: "The team's allowlist stands in for the user's, and it does not list the tool.",
  REASON_NOT_ALLOWLISTED: "No allowlist entry matches the tool; it can be added.",
  REASON_COMMAND_ALLOWED: "Every part of the command line matches an allowed prefix, with all its effects allowed.",
  REASON_COMMAND_BLOCKED: "A part of the command line matches a blocked prefix, or could not be read with certainty.",
  REASON_COMMAND_NOT_ALLOWLISTED: "A part of the command line matches no allowed prefix.",
  REASON_DELETE_PROTECTED: "The team protects file deletions: they always ask.",
  REASON_AUTO_RUN_ON: "Auto-run is on for the user.",
  REASON_NOT_IN_FILE_ALLOWLIST: "The server's policy file does not list this tool action for the MCP server.",
  REASON_NO_ROLE_ALLOWLIST: "No allow-list exists for the agent (or its role) in its context.",
  REASON_NOT_IN_ROLE_ALLOWLIST: "The operation is not in the agent's allow-list for its category.",
  REASON_RESTRICTED: "A restriction on what the call touches failed or could not be checked.",
  REASON_COMMAND_DENIED: "A part of the command line matches a denied prefix: it never runs.",
  REASON_APPROVED: "A person approved the call, or a grant of theirs for the session or a time covers it.",
  REASON_APPROVAL_DENIED: "An approver denied the call; their reason is in the message.",
  REASON_APPROVAL_EXPIRED: "Nobody answered the approval request before its deadline, so the call was refused.",
  REASON_RATE_LIMITED: "The call is past one of the team's rates (calls per minute): it asks, or is refused if the team says so.",
};

export function reasonName(reason: string | undefined): string {
  return (reason ?? "REASON_UNSPECIFIED").replace(/^REASON_/, "");
}

export function outcomeName(outcome: string | undefined): string {
  return (outcome ?? "OUTCOME_UNSPECIFIED").replace(/^OUTCOME_/, "");
}

export function explain(reason: string | undefined): string {
  const known: Record<string, string> = REASONS;
  return known[reason ?? ""] ?? "No explanation is known for this reason.";
}
