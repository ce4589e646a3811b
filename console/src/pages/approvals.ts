// The approvals inbox: pending requests, answered once, for the session, for a time,
// by adding the entry to the allowlist, or denied with a reason; updated live
// (WatchApprovals), so an answer given elsewhere leaves the inbox at once.

import { ApiError, call, stream } from "../api";
import { fill, h, showError, showOk, statusLine, uid } from "../dom";
import { reasonName } from "../reasons";
import { cardTable, cell } from "../layout";
import type { ApproveRequestRequest } from "../proto";
import type { Approval } from "../types";

const DURATIONS: [number, string][] = [
  [900, "15 minutes"],
  [3600, "1 hour"],
  [8 * 3600, "8 hours"],
  [86400, "1 day"],
];

function when(t: string | undefined): string {
  return t ? new Date(t).toLocaleString() : "";
}

function stateName(a: Approval): string {
  return (a.state ?? "APPROVAL_STATE_UNSPECIFIED").replace(/^APPROVAL_STATE_/, "").toLowerCase();
}

export async function approvalsPage(root: HTMLElement, team: string, signal: AbortSignal): Promise<void> {
  const status = statusLine();
  const live = h("p", { class: "live", id: "approvals-live", "aria-live": "polite" }, "Not following");
  const pendingList = h("div", { id: "approvals-pending" });
  const answeredBody = h("tbody", { id: "approvals-answered" });
  const requests = new Map<string, Approval>();

  let listed: { approvals?: Approval[] };
  try {
    listed = await call("ApprovalService/ListApprovals", { teamId: team, limit: 200 });
  } catch (e) {
    if (e instanceof ApiError && e.code === "unimplemented") {
      fill(root, h("h2", {}, `Approvals of team ${team}`), h("p", { class: "muted", id: "approvals-unavailable" }, "This server does not offer approvals."));
      return;
    }
    if (e instanceof ApiError && e.code === "permission_denied") {
      // a member who is no approver: say who answers, rather than show the refusal
      fill(
        root,
        h("h2", {}, `Approvals of team ${team}`),
        h("p", { class: "note", id: "approvals-not-approver" }, `Requests of team ${team} are answered by its admins and the approvers its policy names; you are not one of them. A call of yours that waits for an answer says so in your agent, and ends when an approver answers or its time runs out.`),
      );
      return;
    }
    throw e;
  }
  for (const a of listed.approvals ?? []) if (a.requestId) requests.set(a.requestId, a);

  const approve = (a: Approval, answer: Omit<ApproveRequestRequest, "requestId">) => call("ApprovalService/ApproveRequest", { requestId: a.requestId, ...answer });
  const answer = async (sent: Promise<{ approval?: Approval }>, done: string) => {
    try {
      const r = await sent;
      if (r.approval?.requestId) requests.set(r.approval.requestId, r.approval);
      render();
      showOk(status, done);
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  const card = (a: Approval): HTMLElement => {
    const reasonId = uid("deny-reason");
    const durationId = uid("duration");
    const reason = h("input", { id: reasonId, type: "text", required: true, class: "deny-reason" });
    const duration = h("select", { id: durationId }, DURATIONS.map(([secs, label]) => h("option", { value: String(secs) }, label)));
    return h(
      "article",
      { class: "approval", "data-request": a.requestId ?? "", "aria-label": `Request ${a.summary ?? a.requestId ?? ""}` },
      h("h3", {}, h("code", {}, a.summary ?? a.requestId ?? "")),
      h(
        "dl",
        {},
        h("dt", {}, "For"),
        h("dd", {}, `${a.userId ?? ""}${a.client ? ` through ${a.client}` : ""}${a.agentId ? `, agent ${a.agentId}` : ""}`),
        h("dt", {}, "Why it asks"),
        h("dd", {}, `${reasonName(a.decision?.reason)}: ${a.decision?.message ?? ""}`),
        h("dt", {}, "Asked at"),
        h("dd", {}, when(a.createdAt)),
        h("dt", {}, "Answer before"),
        h("dd", {}, when(a.deadline)),
      ),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "primary approve-once", onclick: () => void answer(approve(a, { scope: "APPROVAL_SCOPE_ONCE" }), "Approved once.") }, "Approve once"),
        a.sessionId
          ? h("button", { type: "button", class: "approve-session", onclick: () => void answer(approve(a, { scope: "APPROVAL_SCOPE_SESSION" }), "Approved for the session.") }, "Approve for this session")
          : null,
        h("button", { type: "button", class: "approve-allowlist", onclick: () => void answer(approve(a, { scope: "APPROVAL_SCOPE_ALLOWLIST" }), "Approved, and the entry added to the allowlist.") }, "Approve and add to the allowlist"),
      ),
      h(
        "form",
        {
          class: "inline",
          "aria-label": "Approve for a time",
          onsubmit: (ev: Event) => {
            ev.preventDefault();
            void answer(approve(a, { scope: "APPROVAL_SCOPE_DURATION", durationSeconds: duration.value }), `Approved for ${duration.selectedOptions[0]?.textContent ?? "a time"}.`);
          },
        },
        h("label", { for: durationId }, "Approve for"),
        duration,
        h("button", { type: "submit", class: "approve-duration" }, "Approve for this time"),
      ),
      h(
        "form",
        {
          class: "inline",
          "aria-label": "Deny",
          onsubmit: (ev: Event) => {
            ev.preventDefault();
            if (!reason.value.trim()) {
              showError(status, "Say why: the reason reaches the agent.");
              reason.focus();
              return;
            }
            void answer(call("ApprovalService/DenyRequest", { requestId: a.requestId, reason: reason.value.trim() }), "Denied.");
          },
        },
        h("label", { for: reasonId }, "Reason"),
        reason,
        h("button", { type: "submit", class: "danger deny" }, "Deny"),
      ),
    );
  };

  const render = () => {
    const all = [...requests.values()].sort((x, y) => (y.createdAt ?? "").localeCompare(x.createdAt ?? ""));
    const pending = all.filter((a) => a.state === "APPROVAL_STATE_PENDING");
    fill(pendingList, pending.length === 0 ? h("p", { class: "muted" }, "Nothing is waiting for an answer.") : pending.map(card));
    fill(
      answeredBody,
      all
        .filter((a) => a.state !== "APPROVAL_STATE_PENDING")
        .slice(0, 100)
        .map((a) =>
          h(
            "tr",
            {},
            cell("When", when(a.answeredAt ?? a.deadline)),
            cell("Call", h("code", {}, a.summary ?? "")),
            cell("User", a.userId ?? ""),
            cell("State", stateName(a)),
            cell("By", `${a.answeredBy ?? ""}${a.scope ? ` (${a.scope.replace(/^APPROVAL_SCOPE_/, "").toLowerCase()})` : ""}${a.answerReason ? `: ${a.answerReason}` : ""}${a.allowlistEntry ? `, added ${a.allowlistEntry}` : ""}`),
          ),
        ),
    );
  };

  const follow = async () => {
    let wait = 1000;
    while (!signal.aborted) {
      try {
        live.textContent = "Live: requests appear and leave as they are made and answered";
        live.className = "live on";
        await stream("ApprovalService/WatchApprovals",
          { teamId: team },
          (m) => {
            wait = 1000;
            if (m.snapshot) {
              for (const [id, a] of requests) if (a.state === "APPROVAL_STATE_PENDING") requests.delete(id);
              for (const a of m.snapshot.pending ?? []) if (a.requestId) requests.set(a.requestId, a);
              render();
            } else if (m.approval?.requestId) {
              requests.set(m.approval.requestId, m.approval);
              render();
            }
          },
          signal,
        );
      } catch (e) {
        if (signal.aborted) return;
        live.className = "live off";
        live.textContent = `Not live: ${e instanceof Error ? e.message : String(e)}; retrying`;
        if (e instanceof ApiError && (e.code === "permission_denied" || e.code === "unauthenticated")) return;
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 30000);
    }
  };

  render();
  fill(
    root,
    h("h2", {}, `Approvals of team ${team}`),
    live,
    status,
    h("section", { "aria-label": "Waiting for an answer" }, h("h3", {}, "Waiting for an answer"), pendingList),
    cardTable("Answered and expired, newest first", ["When", "Call", "User", "State", "By"], answeredBody),
  );
  void follow();
}
