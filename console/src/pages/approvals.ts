// The approvals inbox: pending requests, answered once, for a time, by adding the
// entry to the allowlist, or denied with a reason; updated live.

import { fill, h } from "../dom";

export async function approvalsPage(root: HTMLElement, team: string, _signal: AbortSignal): Promise<void> {
  fill(root, h("h2", {}, `Approvals of team ${team}`), h("p", { class: "muted", id: "approvals-unavailable" }, "This server does not offer approvals yet."));
}
