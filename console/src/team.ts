// What a team's stored settings mean for the console's pages: whether a policy file
// manages the team (then nothing of its controls is editable here), who may answer
// its approval requests, and which of a user's lists the team's own lists replace.

import { call } from "./api";
import { h } from "./dom";
import type { AutoRunControls, Principal, TeamAdminSettings } from "./types";

export interface TeamView {
  settings: TeamAdminSettings;
  /** The policy file that manages the team; empty when the API may write it. */
  managedBy: string;
}

export async function getTeamView(team: string): Promise<TeamView> {
  const r = await call("AdminService/GetTeamAdminSettings", { teamId: team });
  return { settings: r.settings ?? {}, managedBy: r.managedBy ?? "" };
}

/** Said up front on a page whose controls a policy file owns, instead of a refusal after Apply. */
export function managedNote(team: string, managedBy: string): HTMLElement {
  return h(
    "p",
    { class: "note", id: "managed-note" },
    `Team ${team} is managed by the policy file ${managedBy}: its controls are read only here. Edit that file (the server reloads it), or remove the team from it to manage the team here.`,
  );
}

/** Whether the principal may list and answer the team's approval requests (as the server decides it). */
export function mayApprove(p: Principal | null, controls: AutoRunControls | undefined): boolean {
  if (!p) return false;
  if (p.role === "PRINCIPAL_ROLE_ADMIN" || p.role === "PRINCIPAL_ROLE_OPERATOR") return true;
  if (p.role !== "PRINCIPAL_ROLE_MEMBER" || !p.userId) return false;
  const approvals = (controls?.approvals ?? {}) as { approverRole?: string; approverUsers?: string[] };
  return approvals.approverRole === "APPROVER_ROLE_MEMBER" || (approvals.approverUsers ?? []).includes(p.userId);
}

/**
 * The user-settings fields (JSON names) that decide nothing while the team's admin
 * controls are on in replace mode: the team's allowlists stand in for them.
 */
export function replacedUserFields(controls: AutoRunControls | undefined): Set<string> {
  const replaced = Boolean(controls?.enabled) && controls?.listMode !== "LIST_MODE_UNION";
  return new Set(replaced ? ["mcpAllowedTools", "commandAllowlist"] : []);
}

/** Why saving a replaced field changes no decision, in words. */
export function replacedText(team: string): string {
  return `It changes no decision while team ${team}'s admin controls are on in replace mode: the team's allowlist stands in for this one (union mode would count both).`;
}
