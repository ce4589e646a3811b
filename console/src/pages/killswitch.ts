// The kill switch: denies every call of the team while on. Turning it either way
// asks for the team's id to be typed, so a slip of the finger cannot do it.

import { ApiError, getTeamSettings, putTeamSettings } from "../api";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { session } from "../session";
import { getTeamView, managedNote } from "../team";
import { num } from "../types";

export async function killSwitchPage(root: HTMLElement, team: string): Promise<void> {
  const view = await getTeamView(team);
  // a policy file's team: the file turns its kill switch, so no button here
  const admin = session.isAdmin() && !view.managedBy;
  const status = statusLine();
  let settings = view.settings;
  const state = h("p", { id: "kill-state", class: "big" });
  const confirmBox = h("div", { class: "confirm", hidden: true });
  const toggle = h("button", { type: "button", id: "kill-toggle", class: "danger" });

  const show = () => {
    const on = Boolean(settings.autoRunControls?.killSwitch);
    state.textContent = on ? `The kill switch is ON: every call of team ${team} is denied.` : `The kill switch is off for team ${team}.`;
    state.className = on ? "big kill-on" : "big";
    toggle.textContent = on ? "Turn the kill switch off…" : "Turn the kill switch on…";
  };

  const ask = () => {
    const on = !settings.autoRunControls?.killSwitch;
    const typed = h("input", { id: "kill-confirm-team", type: "text", autocomplete: "off", autocapitalize: "off", spellcheck: "false" });
    const go = h("button", { type: "submit", id: "kill-confirm", class: "danger", disabled: true }, on ? `Deny every call of ${team}` : `Let ${team}'s calls be decided again`);
    typed.addEventListener("input", () => {
      go.disabled = typed.value !== team;
    });
    fill(
      confirmBox,
      h(
        "form",
        {
          "aria-label": "Confirm the kill switch",
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            if (typed.value !== team) return;
            try {
              settings = await putTeamSettings(team, { ...(settings.autoRunControls ?? {}), killSwitch: on }, num(settings.revision));
              confirmBox.hidden = true;
              show();
              showOk(status, `Done at revision ${num(settings.revision)}.`);
              toggle.focus();
            } catch (e) {
              if (e instanceof ApiError && e.code === "aborted") {
                settings = await getTeamSettings(team);
                show();
              }
              showError(status, e instanceof Error ? e.message : String(e));
            }
          },
        },
        h("p", {}, on ? `This denies every tool call, command and deletion of team ${team} until it is turned off.` : `Calls of team ${team} will be decided by its policy again.`),
        h("label", { for: "kill-confirm-team" }, `Type the team id, ${team}, to confirm`),
        typed,
        h("div", { class: "actions" }, go, h("button", { type: "button", onclick: () => ((confirmBox.hidden = true), toggle.focus()) }, "Cancel")),
      ),
    );
    confirmBox.hidden = false;
    typed.focus();
  };
  toggle.addEventListener("click", ask);
  show();
  fill(root, h("h2", {}, `Kill switch of team ${team}`), state, admin ? toggle : view.managedBy ? managedNote(team, view.managedBy) : h("p", { class: "note" }, "Only the team's admins may turn it."), confirmBox, status);
}
