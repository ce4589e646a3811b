// "Shed by principal": who went past the decision log's budget, and what it lost, from
// the team's `decisions_shed` audit events.

import { call } from "../api";
import { fill, h, showError, statusLine } from "../dom";
import { cardTable, cell } from "../layout";
import type { AuditEvent } from "../types";
import { num } from "../types";

/** One principal's shedding, summed over its events. */
interface Shed {
  principal: string;
  records: number;
  bytes: number;
  coalesced: number;
  summarised: number;
  last: number;
}

function field(e: AuditEvent, key: string): number {
  const d = (e.detail ?? {}) as Record<string, unknown>;
  const v = d[key];
  return typeof v === "number" ? v : Number(v ?? 0) || 0;
}

/** Sums the events per principal, the most shed first. */
export function shedByPrincipal(events: AuditEvent[]): Shed[] {
  const by = new Map<string, Shed>();
  for (const e of events) {
    const principal = e.actor ?? "";
    const s = by.get(principal) ?? { principal, records: 0, bytes: 0, coalesced: 0, summarised: 0, last: 0 };
    s.records += field(e, "records");
    s.bytes += field(e, "bytes");
    s.coalesced += field(e, "denies_coalesced");
    s.summarised += field(e, "denies_summarised");
    s.last = Math.max(s.last, field(e, "last_at_ms"));
    by.set(principal, s);
  }
  return [...by.values()].sort((a, b) => b.records + b.coalesced + b.summarised - (a.records + a.coalesced + a.summarised));
}

/** The panel: the last day's events of the team, summed per principal. */
export function shedPanel(team: string): HTMLElement {
  const status = statusLine();
  const tbody = h("tbody", { id: "shed-rows" });
  const panel = h(
    "section",
    { "aria-label": "Shed by principal", id: "shed-panel" },
    h("h3", {}, "Shed by principal (last 24 hours)"),
    status,
    // a card per principal at phone width, like the audit trail's rows
    cardTable("Principals past their decision-log budget", ["Principal", "Records shed", "Bytes shed", "DENYs counted", "DENYs summarised", "Last"], tbody),
  );
  void (async () => {
    try {
      const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
      const events: AuditEvent[] = [];
      let after = 0;
      for (let pages = 0; pages < 5; pages++) {
        const page = await call("AdminService/ListAuditEvents", {
          teamId: team,
          afterId: String(after),
          limit: 1000,
          kind: "AUDIT_EVENT_KIND_DECISIONS_SHED",
          since,
        });
        events.push(...(page.events ?? []));
        after = num(page.nextAfterId);
        if (after === 0) break;
      }
      const rows = shedByPrincipal(events);
      fill(
        tbody,
        rows.map((s) =>
          h(
            "tr",
            {},
            cell("Principal", h("code", {}, s.principal)),
            cell("Records shed", String(s.records)),
            cell("Bytes shed", String(s.bytes)),
            cell("DENYs counted", String(s.coalesced)),
            cell("DENYs summarised", String(s.summarised)),
            cell("Last", s.last ? new Date(s.last).toLocaleString() : ""),
          ),
        ),
      );
      status.textContent = rows.length ? `${rows.length} principals went past their budget.` : "No principal went past its budget.";
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  })();
  return panel;
}
