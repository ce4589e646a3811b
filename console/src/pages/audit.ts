// The audit trail: every settings change and every denial, with who, when and the revision.

import { call } from "../api";
import { fill, h, showError, statusLine } from "../dom";
import { AUDIT_KINDS } from "../kinds";
import { cardTable, cell, labelled } from "../layout";
import type { AuditEventKind } from "../proto";
import type { AuditEvent } from "../types";
import { num } from "../types";
import { shedPanel } from "./shed";


/** `AUDIT_EVENT_KIND_ADMIN_SETTINGS_UPDATED` → `admin_settings_updated` (older servers sent the latter). */
function kindName(kind: unknown): string {
  return String(kind ?? "").replace(/^AUDIT_EVENT_KIND_/, "").toLowerCase();
}

function detail(e: AuditEvent): string {
  return e.detail === undefined ? "" : JSON.stringify(e.detail, null, 2);
}

export async function auditPage(root: HTMLElement, team: string): Promise<void> {
  const status = statusLine();
  const tbody = h("tbody", { id: "audit-rows" });
  const kind = h("select", { id: "a-kind" }, h("option", { value: "" }, "any"), AUDIT_KINDS.map((k) => h("option", { value: `AUDIT_EVENT_KIND_${k}` }, k.toLowerCase().replace(/_/g, " "))));
  const actor = h("input", { id: "a-actor", type: "text", autocapitalize: "off", spellcheck: "false" });
  let after = 0;
  let events: AuditEvent[] = [];

  // the API pages forward (after_id): up to 20 pages of 1000 are read, shown newest first
  const load = async () => {
    events = [];
    after = 0;
    try {
      for (let pages = 0; pages < 20; pages++) {
        const page = await call("AdminService/ListAuditEvents", {
          teamId: team,
          afterId: String(after),
          limit: 1000,
          ...(kind.value ? { kind: kind.value as AuditEventKind } : {}),
          actor: actor.value.trim(),
        });
        events.push(...(page.events ?? []));
        after = num(page.nextAfterId);
        if (after === 0) break;
      }
      events.reverse();
      fill(
        tbody,
        events.map((e) =>
          h(
            "tr",
            {},
            cell("Time", e.at ? new Date(e.at).toLocaleString() : ""),
            cell("Kind", h("code", {}, kindName(e.kind))),
            cell("Actor", e.actor ?? ""),
            cell("Revision", String(num(e.revision))),
            cell("Detail", h("details", {}, h("summary", {}, "Detail"), h("pre", {}, detail(e)))),
          ),
        ),
      );
      status.textContent = `${events.length} events, newest first.`;
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  fill(
    root,
    h("h2", {}, `Audit trail of team ${team}`),
    h(
      "form",
      {
        class: "filters",
        "aria-label": "Filter audit events",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          void load();
        },
      },
      labelled("Kind", kind),
      labelled("Actor", actor),
      h("button", { type: "submit" }, "Apply filters"),
    ),
    status,
    cardTable("Audit events, newest first", ["Time", "Kind", "Actor", "Revision", "Detail"], tbody),
    shedPanel(team),
  );
  await load();
}
