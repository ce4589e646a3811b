// Every field of a team's AutoRunControls and of a user's settings, with its label,
// its form and its protobuf name (the name the server's messages use).

export type Kind = "bool" | "list" | "enum" | "object" | "tri" | "number" | "text";

export interface Field {
  /** The JSON name. */
  key: string;
  /** The protobuf name, as the server's validation messages spell it. */
  proto: string;
  label: string;
  kind: Kind;
  help: string;
  options?: [string, string][];
}

export const CONTROL_FIELDS: Field[] = [
  { key: "enabled", proto: "enabled", label: "Admin controls enabled", kind: "bool", help: "While on, the team's lists and modes stand in for each user's own." },
  { key: "mcpToolAllowlist", proto: "mcp_tool_allowlist", label: "MCP tools that may auto-run", kind: "list", help: "One server:tool entry per line; * is a wildcard (github:*, *:read_file)." },
  { key: "listMode", proto: "list_mode", label: "How the team's MCP allowlist combines with a user's", kind: "enum", help: "Replace: the team's list alone counts. Union: both count, and users may add their own.", options: [["LIST_MODE_REPLACE", "replace"], ["LIST_MODE_UNION", "union"]] },
  { key: "mcpToolBlocklist", proto: "mcp_tool_blocklist", label: "MCP tools that are denied", kind: "list", help: "Denied and hidden from tools/list, whatever else is set." },
  { key: "mcpAccessMode", proto: "mcp_access_mode", label: "Which MCP tools exist at all", kind: "enum", help: "Blocklist: every tool but the blocked ones. Allowlist: only the tools listed below.", options: [["MCP_ACCESS_MODE_BLOCKLIST", "blocklist"], ["MCP_ACCESS_MODE_ALLOWLIST", "allowlist"]] },
  { key: "mcpAccessAllowlist", proto: "mcp_access_allowlist", label: "The only MCP tools that exist (allowlist mode)", kind: "list", help: "One server:tool entry per line." },
  { key: "allowed", proto: "allowed", label: "Shell command prefixes that may auto-run", kind: "list", help: "One prefix per line, matched word by word (git status matches git status -s); @readonly for read-only programs." },
  { key: "blocked", proto: "blocked", label: "Shell command prefixes that always ask", kind: "list", help: "One prefix per line; matched wherever the line runs the program." },
  { key: "denied", proto: "denied", label: "Shell command prefixes that never run", kind: "list", help: "One prefix per line; a hard deny, never softened." },
  { key: "disableMcpAutoRun", proto: "disable_mcp_auto_run", label: "MCP tools always ask", kind: "bool", help: "Protection on for MCP tools." },
  { key: "deleteFileProtection", proto: "delete_file_protection", label: "File deletions always ask", kind: "bool", help: "" },
  { key: "enableRunEverything", proto: "enable_run_everything", label: "Users may run everything", kind: "bool", help: "A user's run-everything mode counts while admin controls are enabled." },
  { key: "browserProtection", proto: "browser_protection", label: "Browser tools always ask", kind: "bool", help: "" },
  { key: "browserServerIds", proto: "browser_server_ids", label: "Servers whose tools are browser tools", kind: "list", help: "Empty means cursor-browser-extension and cursor-ide-browser." },
  { key: "sandboxingControls.enabled", proto: "sandboxing_controls", label: "Sandboxing enabled", kind: "bool", help: "Kept for the clients that read it; no decision depends on it." },
  { key: "roles", proto: "roles", label: "Agent roles document (JSON)", kind: "object", help: "Tool categories, roles, allow-lists per agent and context, restrictions, as the roles schema describes them. Empty: roles are not in use." },
];

/** Central approvals (`AutoRunControls.approvals`): who answers an ASK the client cannot. */
export const APPROVAL_FIELDS: Field[] = [
  { key: "mode", proto: "mode", label: "When an ASK goes to the team's approvers", kind: "enum", help: "Off: the client asks its own person. Headless: only when nobody is at the client. Always: every ASK of a client that can wait.", options: [["APPROVAL_MODE_OFF", "off"], ["APPROVAL_MODE_HEADLESS", "headless clients"], ["APPROVAL_MODE_ALWAYS", "always"]] },
  { key: "deadlineSeconds", proto: "deadline_seconds", label: "Seconds a request waits for an answer", kind: "number", help: "0 means 300; at most 3600. Unanswered, the call is refused." },
  { key: "approverRole", proto: "approver_role", label: "Who approves besides the admins", kind: "enum", help: "", options: [["APPROVER_ROLE_ADMIN", "admins and the users named below"], ["APPROVER_ROLE_MEMBER", "every member"]] },
  { key: "approverUsers", proto: "approver_users", label: "Users who may approve", kind: "list", help: "One user id per line." },
  { key: "allowSelfApproval", proto: "allow_self_approval", label: "Requesters may approve their own requests", kind: "bool", help: "" },
  { key: "webhookUrl", proto: "webhook_url", label: "Webhook for new requests", kind: "text", help: "https, or http to a loopback address; empty: none." },
  { key: "maxGrantSeconds", proto: "max_grant_seconds", label: "Longest approval for a time, in seconds", kind: "number", help: "0 means a day; at most 30 days." },
];

export const USER_FIELDS: Field[] = [
  { key: "useYoloMode", proto: "use_yolo_mode", label: "Auto-run", kind: "bool", help: "Allowed calls run without asking." },
  { key: "yoloEnableRunEverything", proto: "yolo_enable_run_everything", label: "Run everything", kind: "bool", help: "With auto-run: every call runs unless blocked." },
  { key: "yoloMcpToolsDisabled", proto: "yolo_mcp_tools_disabled", label: "MCP tools always ask", kind: "bool", help: "" },
  { key: "playwrightProtection", proto: "playwright_protection", label: "Browser tools always ask", kind: "tri", help: "Unset means on." },
  { key: "mcpAllowedTools", proto: "mcp_allowed_tools", label: "MCP tools that may auto-run", kind: "list", help: "One server:tool entry per line." },
  { key: "commandAllowlist", proto: "command_allowlist", label: "Shell command prefixes that may auto-run", kind: "list", help: "One prefix per line." },
  { key: "commandDenylist", proto: "command_denylist", label: "Shell command prefixes that always ask", kind: "list", help: "One prefix per line." },
];

/** The value at a dotted JSON path (`sandboxingControls.enabled`). */
export function get(doc: Record<string, unknown> | undefined, key: string): unknown {
  let v: unknown = doc;
  for (const part of key.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** Sets the value at a dotted JSON path, making the objects on the way. */
export function set(doc: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split(".");
  let o = doc;
  for (const part of parts.slice(0, -1)) {
    if (typeof o[part] !== "object" || o[part] === null) o[part] = {};
    o = o[part] as Record<string, unknown>;
  }
  o[parts[parts.length - 1]] = value;
}

/** A field's value in a comparable form: lists as arrays, flags as booleans, the rest as strings. */
export function normal(field: Field, value: unknown): string[] | boolean | string {
  switch (field.kind) {
    case "list":
      return Array.isArray(value) ? value.map(String) : [];
    case "bool":
      return Boolean(value);
    case "tri":
      return value === undefined || value === null ? "" : String(Boolean(value));
    case "enum":
      return typeof value === "string" && value !== "" && !value.endsWith("_UNSPECIFIED") ? value : field.options?.[0][0] ?? "";
    case "object":
      if (value === undefined || value === null || (typeof value === "object" && Object.keys(value).length === 0)) return "";
      return typeof value === "string" ? value : JSON.stringify(value, null, 2);
    case "text":
      return typeof value === "string" ? value : "";
    case "number":
      return String(Number(value ?? 0));
  }
}

/** The lines of a list text area: trimmed, blank lines dropped. */
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}
