// Tool pins: each MCP tool's definition as the team's gateways pinned it, a changed
// one with its flags and diff, and (for admins) accepting exactly what was shown.

import { call } from "../api";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { cardTable, cell } from "../layout";
import { session } from "../session";

import type { PinnedDefinition as Definition, ToolPin } from "../proto";

function flagList(d: Definition | undefined): HTMLElement | null {
  const flags = d?.flags ?? [];
  if (flags.length === 0) return null;
  return h(
    "ul",
    { class: "flags" },
    flags.map((f) => h("li", {}, h("code", {}, f.kind ?? ""), ` in ${f.place ?? ""}: ${f.why ?? ""}`)),
  );
}

export async function pinsPage(root: HTMLElement, team: string): Promise<void> {
  const admin = session.isAdmin();
  const status = statusLine();
  const tbody = h("tbody", { id: "pin-rows" });
  const membersPinFirst = h("input", { id: "pin-members-first", type: "checkbox", disabled: !admin });
  const hideFlagged = h("input", { id: "pin-hide-flagged", type: "checkbox", disabled: !admin });

  const accept = async (pin: ToolPin, sha256: string) => {
    try {
      await call("PinService/AcceptPin", { teamId: team, server: pin.server, tool: pin.tool, sha256 });
      showOk(status, `Accepted ${pin.server}:${pin.tool}: gateways show it again.`);
      await load();
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  const load = async () => {
    try {
      const r = await call("PinService/ListPins", { teamId: team });
      const s = await call("PinService/GetPinSettings", { teamId: team });
      membersPinFirst.checked = Boolean(s.settings?.membersPinFirst);
      hideFlagged.checked = Boolean(s.settings?.hideFlagged);
      const pins = r.pins ?? [];
      // changed tools first: they are what waits for someone
      pins.sort((a, b) => Number(Boolean(b.changed)) - Number(Boolean(a.changed)));
      fill(
        tbody,
        pins.map((pin) => {
          const changed = pin.changed;
          const shown = changed ?? pin.pinned;
          const sha = shown?.sha256 ?? "";
          return h(
            "tr",
            { class: changed ? "changed" : "" },
            cell("Tool", h("code", {}, `${pin.server}:${pin.tool}`)),
            cell("State", changed ? "Changed: hidden, its calls ask" : `Pinned by ${pin.pinned?.by ?? ""}`),
            cell("Hash", h("code", {}, sha.slice(0, 12))),
            cell("Flags", flagList(shown) ?? "none"),
            cell(
              "Change",
              changed ? h("details", {}, h("summary", {}, "Diff"), h("pre", { class: "diff" }, (pin.diff ?? []).join("\n"))) : "",
            ),
            cell(
              "",
              admin && (changed || (shown?.flags ?? []).length > 0)
                ? h("button", { type: "button", class: "accept", "aria-label": `Accept ${pin.server}:${pin.tool}`, onclick: () => accept(pin, sha) }, changed ? "Accept the change" : "Mark reviewed")
                : "",
            ),
          );
        }),
      );
      status.textContent = pins.length ? `${pins.length} pinned tools.` : "No tool is pinned yet: a gateway pins what it sees first.";
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  const saveSettings = async () => {
    try {
      await call("PinService/UpdatePinSettings", {
        teamId: team,
        settings: { membersPinFirst: membersPinFirst.checked, hideFlagged: hideFlagged.checked },
      });
      showOk(status, "Pin settings saved.");
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };
  membersPinFirst.addEventListener("change", saveSettings);
  hideFlagged.addEventListener("change", saveSettings);

  fill(
    root,
    h("h2", {}, `Tool pins of team ${team}`),
    h(
      "fieldset",
      { class: "pin-settings" },
      h("legend", {}, "Pin settings"),
      h("div", {}, membersPinFirst, h("label", { for: "pin-members-first" }, " Members' gateways pin tools they see first")),
      h("div", {}, hideFlagged, h("label", { for: "pin-hide-flagged" }, " Hide tools whose description was flagged, until an admin reviews them")),
    ),
    status,
    cardTable("Pinned tools", ["Tool", "State", "Hash", "Flags", "Change", ""], tbody, { id: "pins" }),
  );
  await load();
}
