// The HTTP API's client: the Connect protocol's JSON form (POST
// /toolgate.v1.<Service>/<Method>, canonical protobuf JSON, the bearer token in the
// Authorization header), on the console's own origin.

import { session } from "./session";
import type { AutoRunControls, TeamAdminSettings, UserSettings } from "./types";

/** An error the server answered with: a Connect code and the server's own message. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** One problem of a refused write: the field it names (`mcp_tool_allowlist[2]`) and what is wrong. */
export interface Problem {
  field: string;
  /** The list the field names, without an index or a message prefix (`mcp_tool_allowlist`). */
  list: string;
  text: string;
}

const FIELD = /^((?:[a-z_]+\.)*([a-z_]+))(\[\d+\])?: (.*)$/s;

/** The problems of an INVALID_ARGUMENT message: `field: why; field: why`. */
export function problems(message: string): Problem[] {
  const out: Problem[] = [];
  for (const part of message.split("; ")) {
    const m = FIELD.exec(part.trim());
    if (m) {
      out.push({ field: m[1] + (m[3] ?? ""), list: m[2], text: m[4] });
    } else if (out.length > 0) {
      // a message that itself held "; ": part of the previous problem
      out[out.length - 1].text += `; ${part}`;
    } else {
      out.push({ field: "", list: "", text: part });
    }
  }
  return out;
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
  try {
    const body = (await response.json()) as { code?: string; message?: string };
    code = body.code ?? code;
    message = body.message ?? message;
  } catch {
    // not JSON: the status line says what there is to say
  }
  if (response.status === 404 && code === "unknown") {
    code = "unimplemented";
    message = "this server does not offer that call";
  }
  return new ApiError(code, message, response.status);
}

/** A unary call. */
export async function call<T>(service: string, method: string, request: object): Promise<T> {
  const response = await fetch(`/toolgate.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/json"),
    body: JSON.stringify(request),
    credentials: "omit",
    cache: "no-store",
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
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
export async function stream<T>(
  service: string,
  method: string,
  request: object,
  onMessage: (message: T) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(`/toolgate.v1.${service}/${method}`, {
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
        const error = body.error as { code?: string; message?: string } | undefined;
        if (error) throw new ApiError(error.code ?? "unknown", error.message ?? "stream ended", 200);
        return;
      }
      onMessage(body as T);
    }
  }
}

/** The team's admin settings as stored. */
export async function getTeamSettings(team: string): Promise<TeamAdminSettings> {
  const r = await call<{ settings?: TeamAdminSettings }>("AdminService", "GetTeamAdminSettings", { teamId: team });
  return r.settings ?? {};
}

/** Replaces the team's controls if they are still at `revision`; the settings as stored, and what in them may not mean what the admin thinks. */
export async function putTeamSettings(
  team: string,
  controls: AutoRunControls,
  revision: number,
): Promise<TeamAdminSettings & { warnings?: { field?: string; message?: string }[] }> {
  const r = await call<{ settings?: TeamAdminSettings; warnings?: { field?: string; message?: string }[] }>("AdminService", "UpdateTeamAdminSettings", {
    teamId: team,
    autoRunControls: controls,
    expectedRevision: String(revision),
  });
  return { ...(r.settings ?? {}), warnings: r.warnings };
}

export async function getUserSettings(team: string, user: string): Promise<UserSettings> {
  const r = await call<{ settings?: UserSettings }>("UserSettingsService", "GetUserSettings", { teamId: team, userId: user });
  return r.settings ?? {};
}

/** Writes the fields of `settings` that `mask` names (JSON names, comma-separated). */
export async function patchUserSettings(settings: UserSettings, mask: string): Promise<UserSettings> {
  const r = await call<{ settings?: UserSettings }>("UserSettingsService", "UpdateUserSettings", { settings, updateMask: mask });
  return r.settings ?? {};
}
