// The decision log: filters, each decision with its explanation, new ones as they are
// made (WatchDecisions), and the charts.

import { ApiError, call, stream } from "../api";
import { callKey, timeChart, topChart } from "../charts";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { labelled } from "../layout";
import { explain, outcomeName, reasonName } from "../reasons";
import type { Outcome } from "../proto";
import type { DecidedCall, DecisionFilter, DecisionRecord } from "../types";
import { num } from "../types";

const MAX_KEPT = 1000;

/** A call in one line: `server:tool`, the command's excerpt, or the deleted path. */
export function describeCall(c: DecidedCall | undefined): string {
  if (!c) return "(unknown call)";
  if (c.mcp) return `${c.mcp.server ?? ""}:${c.mcp.tool ?? ""}${c.mcp.action ? ` (${c.mcp.action})` : ""}`;
  if (c.shellExcerpt !== undefined) {
    const cut = num(c.commandBytes) > new TextEncoder().encode(c.shellExcerpt).length;
    return `$ ${c.shellExcerpt}${cut ? "…" : ""}`;
  }
  if (c.deleteFileExcerpt !== undefined) return `delete ${c.deleteFileExcerpt}`;
  return "(unknown call)";
}

/** What the client did with toolgate's answer, from its telemetry: `accept by user_temporary`. */
export function clientSide(r: DecisionRecord): string {
  const c = r.clientDecision;
  if (!c) return "";
  return `${c.decision ?? ""} by ${c.source ?? ""}`;
}

function row(r: DecisionRecord, fresh: boolean): HTMLElement {
  const outcome = outcomeName(r.outcome);
  const client = clientSide(r);
  return h(
    "tr",
    { class: fresh ? "new" : "", "data-id": r.id ?? "" },
    h("td", {}, r.at ? new Date(r.at).toLocaleString() : ""),
    h(
      "td",
      {},
      h("span", { class: `badge ${outcome.toLowerCase()}` }, outcome),
      // the client's own decision next to toolgate's
      client ? h("span", { class: "client-decision", title: "what the client did, from its telemetry" }, ` client: ${client}`) : "",
    ),
    h("td", { class: "call" }, h("code", {}, describeCall(r.call)), num(r.count) > 1 ? ` ×${num(r.count)}` : ""),
    h("td", {}, r.userId ?? ""),
    h(
      "td",
      {},
      h(
        "details",
        { class: "why" },
        h("summary", {}, reasonName(r.reason)),
        h("p", { class: "explanation" }, explain(r.reason)),
        h(
          "dl",
          {},
          r.matchedEntry ? [h("dt", {}, "Matched entry"), h("dd", {}, h("code", {}, r.matchedEntry))] : null,
          h("dt", {}, "Policy revision"),
          h("dd", {}, String(num(r.revision))),
          h("dt", {}, "Asked by"),
          h("dd", {}, `${r.principal ?? ""}${r.client ? ` through ${r.client}` : ""}${r.agentId ? `, agent ${r.agentId}` : ""}${r.role ? ` (${r.role})` : ""}`),
          r.effectsUnknown?.length
            ? [h("dt", {}, "Effects unknown"), h("dd", { class: "effects-unknown" }, `${r.effectsUnknown.join(", ")}: what they ran, wrote or deleted was not checked`)]
            : null,
          r.toolUseId ? [h("dt", {}, "Client's call id"), h("dd", {}, h("code", {}, r.toolUseId))] : null,
          client ? [h("dt", {}, "The client's decision"), h("dd", {}, `${client}${r.clientDecision?.toolName ? ` (${r.clientDecision.toolName})` : ""}`)] : null,
          r.call?.commandSha256 ? [h("dt", {}, "Command"), h("dd", {}, `${num(r.call.commandBytes)} bytes, SHA-256 ${r.call.commandSha256}`)] : null,
        ),
      ),
    ),
  );
}

export async function decisionsPage(root: HTMLElement, team: string, signal: AbortSignal): Promise<void> {
  const status = statusLine();
  const live = h("p", { class: "live", id: "live-state", "aria-live": "polite" }, "Not following");
  const tbody = h("tbody", { id: "decision-rows" });
  const charts = h("div", { class: "charts" });
  let records: DecisionRecord[] = [];
  let following: AbortController | null = null;

  const outcome = h("select", { id: "f-outcome" }, [["", "any"], ["OUTCOME_ALLOW", "ALLOW"], ["OUTCOME_ASK", "ASK"], ["OUTCOME_DENY", "DENY"]].map(([v, l]) => h("option", { value: v }, l)));
  const user = h("input", { id: "f-user", type: "text", autocapitalize: "off", spellcheck: "false" });
  const tool = h("input", { id: "f-tool", type: "text", placeholder: "github:", autocapitalize: "off", spellcheck: "false" });
  const command = h("input", { id: "f-command", type: "text", placeholder: "git push", autocapitalize: "off", spellcheck: "false" });
  const since = h("input", { id: "f-since", type: "datetime-local" });

  const filter = (): DecisionFilter => {
    const f: DecisionFilter = { teamId: team };
    if (outcome.value) f.outcome = outcome.value as Outcome;
    if (user.value.trim()) f.userId = user.value.trim();
    if (tool.value.trim()) f.toolPrefix = tool.value.trim();
    if (command.value.trim()) f.commandPrefix = command.value.trim();
    if (since.value) f.since = new Date(since.value).toISOString();
    return f;
  };

  const redraw = () => {
    fill(
      charts,
      timeChart(records),
      h("div", { class: "tops" }, topChart(records, "OUTCOME_ASK", "Most asked"), topChart(records, "OUTCOME_DENY", "Most denied")),
    );
  };

  const follow = (f: DecisionFilter) => {
    following?.abort();
    const mine = new AbortController();
    following = mine;
    signal.addEventListener("abort", () => mine.abort(), { once: true });
    void (async () => {
      let wait = 1000;
      while (!mine.signal.aborted) {
        try {
          live.textContent = "Live: new decisions appear as they are made";
          live.className = "live on";
          await stream("DecisionLogService/WatchDecisions",
            { filter: f },
            (m) => {
              wait = 1000;
              if (m.decision) {
                records.unshift(m.decision);
                records = records.slice(0, MAX_KEPT);
                tbody.prepend(row(m.decision, true));
                while (tbody.rows.length > MAX_KEPT) tbody.deleteRow(-1);
                status.textContent = `${records.length} decisions, newest first.`;
                redraw();
              } else if (m.clientDecision) {
                // the client's report of a call shown here: its row shows it too
                const c = m.clientDecision;
                const r = records.find((r) => r.toolUseId === c.toolUseId && r.userId === c.userId && r.teamId === c.teamId);
                if (r) {
                  r.clientDecision = c.decision;
                  tbody.querySelector(`tr[data-id="${CSS.escape(r.id ?? "")}"]`)?.replaceWith(row(r, true));
                }
              } else if (m.lagged) {
                showError(status, `${m.lagged} decisions were not shown because the page fell behind: reload to list them.`);
              }
            },
            mine.signal,
          );
        } catch (e) {
          if (mine.signal.aborted) return;
          live.className = "live off";
          live.textContent = `Not live: ${e instanceof Error ? e.message : String(e)}; retrying`;
          if (e instanceof ApiError && (e.code === "permission_denied" || e.code === "unauthenticated" || e.code === "unimplemented")) return;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
        wait = Math.min(wait * 2, 30000);
      }
    })();
  };

  const load = async () => {
    const f = filter();
    showOk(status, "Loading…");
    try {
      const page = await call("DecisionLogService/ListDecisions", { filter: f, pageSize: 500 });
      records = page.decisions ?? [];
      fill(tbody, records.map((r) => row(r, false)));
      redraw();
      status.textContent = `${records.length} decisions, newest first.`;
      follow(f);
    } catch (e) {
      showError(status, e instanceof ApiError && e.code === "unimplemented" ? "This server keeps no decision log." : e instanceof Error ? e.message : String(e));
    }
  };

  fill(
    root,
    h("h2", {}, `Decisions of team ${team}`),
    h(
      "form",
      {
        class: "filters",
        "aria-label": "Filter decisions",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void load();
        },
      },
      labelled("Outcome", outcome),
      labelled("User", user),
      labelled("Tool starts with", tool),
      labelled("Command starts with", command),
      labelled("Since", since),
      h("button", { type: "submit" }, "Apply filters"),
    ),
    live,
    status,
    charts,
    h(
      "table",
      { class: "decisions" },
      h("caption", {}, "Decisions, newest first; open a reason for its explanation"),
      h("thead", {}, h("tr", {}, ["Time", "Outcome", "Call", "User", "Why"].map((c) => h("th", { scope: "col" }, c)))),
      tbody,
    ),
  );
  await load();
}

export { callKey };
