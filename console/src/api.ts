// The HTTP API's client: the Connect protocol's JSON form (POST
// /toolgate.v1.<Service>/<Method>, canonical protobuf JSON, the bearer token in the
// Authorization header), on the console's own origin.

import { session } from "./session";
import type { AutoRunControls, Methods, TeamAdminSettings, UpdateTeamAdminSettingsResponse, UserSettings } from "./proto";

/** An error the server answered with: a Connect code, the server's own message and its field violations. */
export class ApiError extends Error {
  /** What the server refused, field by field (a refusal naming no field: one problem with the message). */
  readonly problems: Problem[];

  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    details?: ErrorDetail[],
  ) {
    super(message);
    this.problems = problemsOf(message, details);
  }
}

/** One problem of a refused write: the field it names (`mcp_tool_allowlist[2]`) and what is wrong. */
export interface Problem {
  field: string;
  text: string;
}

/** One of google.rpc.BadRequest's field violations, as the server's error JSON carries it. */
interface FieldViolation {
  field?: string;
  description?: string;
}

/** A detail of an error: its type, the encoded message, and the server's JSON of it. */
interface ErrorDetail {
  type?: string;
  debug?: { fieldViolations?: FieldViolation[] };
}

/** The field violations of a refused call, one problem each; the message alone when it has none. */
function problemsOf(message: string, details: ErrorDetail[] | undefined): Problem[] {
  const out: Problem[] = [];
  for (const d of details ?? []) {
    if (d.type !== "google.rpc.BadRequest") continue;
    for (const v of d.debug?.fieldViolations ?? []) {
      out.push({ field: v.field ?? "", text: v.description ?? "" });
    }
  }
  return out.length > 0 ? out : [{ field: "", text: message }];
}

function headers(contentType: string): Headers {
  const h = new Headers({ "Content-Type": contentType, "Connect-Protocol-Version": "1" });
  const token = session.token();
  if (token) h.set("Authorization", `Bearer ${token}`);
  return h;
}

async function errorOf(response: Response): Promise<ApiError> {
  let code = "unknown";
  let message = `${response.status} ${response.statusText}`;
  let details: ErrorDetail[] | undefined;
  try {
    const body = (await response.json()) as { code?: string; message?: string; details?: ErrorDetail[] };
    code = body.code ?? code;
    message = body.message ?? message;
    details = Array.isArray(body.details) ? body.details : undefined;
  } catch {
    // not JSON: the status line says what there is to say
  }
  if (response.status === 404 && code === "unknown") {
    code = "unimplemented";
    message = "this server does not offer that call";
  }
  return new ApiError(code, message, response.status, details);
}

/** The RPCs that answer once, and those that answer with a stream. */
type Unary = { [M in keyof Methods]: Methods[M]["stream"] extends false ? M : never }[keyof Methods];
type Streamed = { [M in keyof Methods]: Methods[M]["stream"] extends true ? M : never }[keyof Methods];

/** A unary call, by its path (`AdminService/GetTeamAdminSettings`). */
export async function call<M extends Unary>(method: M, request: Methods[M]["request"]): Promise<Methods[M]["response"]> {
  const response = await fetch(`/toolgate.v1.${method}`, {
    method: "POST",
    headers: headers("application/json"),
    body: JSON.stringify(request),
    credentials: "omit",
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as Methods[M]["response"];
}

function envelope(message: object): Uint8Array<ArrayBuffer> {
  const json = new TextEncoder().encode(JSON.stringify(message));
  const out = new Uint8Array(5 + json.length);
  new DataView(out.buffer).setUint32(1, json.length);
  out.set(json, 5);
  return out;
}

/**
 * A server stream: `onMessage` for each message until the stream ends, `signal` aborts
 * or the server ends it with an error (thrown).
 */
export async function stream<M extends Streamed>(
  method: M,
  request: Methods[M]["request"],
  onMessage: (message: Methods[M]["response"]) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(`/toolgate.v1.${method}`, {
    method: "POST",
    headers: headers("application/connect+json"),
    body: envelope(request),
    credentials: "omit",
    cache: "no-store",
    signal,
  });
  if (!response.ok || !response.body) throw await errorOf(response);
  const reader = response.body.getReader();
  let buffer = new Uint8Array(0);
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    const joined = new Uint8Array(buffer.length + value.length);
    joined.set(buffer);
    joined.set(value, buffer.length);
    buffer = joined;
    while (buffer.length >= 5) {
      const flags = buffer[0];
      const length = new DataView(buffer.buffer, buffer.byteOffset).getUint32(1);
      if (buffer.length < 5 + length) break;
      const body = JSON.parse(decoder.decode(buffer.subarray(5, 5 + length))) as Record<string, unknown>;
      buffer = buffer.slice(5 + length);
      if (flags & 2) {
        const error = body.error as { code?: string; message?: string; details?: ErrorDetail[] } | undefined;
        if (error) throw new ApiError(error.code ?? "unknown", error.message ?? "stream ended", 200, error.details);
        return;
      }
      onMessage(body as Methods[M]["response"]);
    }
  }
}

/** The team's admin settings as stored. */
export async function getTeamSettings(team: string): Promise<TeamAdminSettings> {
  const r = await call("AdminService/GetTeamAdminSettings", { teamId: team });
  return r.settings ?? {};
}

/** Replaces the team's controls if they are still at `revision`; the settings as stored, and what in them may not mean what the admin thinks. */
export async function putTeamSettings(
  team: string,
  controls: AutoRunControls,
  revision: number,
): Promise<TeamAdminSettings & Pick<UpdateTeamAdminSettingsResponse, "warnings">> {
  const r = await call("AdminService/UpdateTeamAdminSettings", {
    teamId: team,
    autoRunControls: controls,
    expectedRevision: String(revision),
  });
  return { ...(r.settings ?? {}), warnings: r.warnings };
}

export async function getUserSettings(team: string, user: string): Promise<UserSettings> {
  const r = await call("UserSettingsService/GetUserSettings", { teamId: team, userId: user });
  return r.settings ?? {};
}

/** Writes the fields of `settings` that `mask` names (JSON names, comma-separated). */
export async function patchUserSettings(settings: UserSettings, mask: string): Promise<UserSettings> {
  const r = await call("UserSettingsService/UpdateUserSettings", { settings, updateMask: mask });
  return r.settings ?? {};
}
