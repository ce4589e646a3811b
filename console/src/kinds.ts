// Every audit event kind the server records, by its protobuf name without the
// `AUDIT_EVENT_KIND_` prefix. tests/it/console.rs compares this list with the API's
// enum, so a kind added to the server fails the tests until it is listed here.

export const AUDIT_KINDS: string[] = [
  "ADMIN_SETTINGS_UPDATED",
  "USER_SETTINGS_UPDATED",
  "DECISION_DENIED",
  "TOKEN_CREATED",
  "TOKEN_REVOKED",
  "POLICY_FILE_RELOADED",
  "POLICY_FILE_REJECTED",
  "ALLOW_LIST_UPDATED",
  "DECISION_MADE",
  "APPROVAL_REQUESTED",
  "APPROVAL_APPROVED",
  "APPROVAL_DENIED",
  "APPROVAL_EXPIRED",
  "APPROVAL_ABANDONED",
  "DECISIONS_SHED",
  "TOOL_PINNED",
  "TOOL_CHANGED",
  "TOOL_REPINNED",
  "PIN_SETTINGS_UPDATED",
  "TAMPERING_DETECTED",
];
