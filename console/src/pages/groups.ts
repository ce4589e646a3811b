// Groups: the team's group policies, each shown and edited in the API's JSON form and
// written with the revision read (another admin's change in between is refused, not
// lost), and who signed in through the identity provider with the groups their
// token carried. The same page shows the organisation's group policies (the reserved
// team `*org`, which only operators may read or write) for operators.

import { ApiError, call, getTeamSettings, putTeamSettings } from "../api";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { cardTable, cell, labelled } from "../layout";
import { session } from "../session";
import { getTeamView, managedNote } from "../team";
import type { TeamAdminSettings } from "../types";
import { num } from "../types";
import { renderPreview } from "./policy";

type GroupPolicy = Record<string, unknown>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The reserved team holding the organisation's group policies. */
export const ORG_TEAM = "*org";

function groupsOf(s: TeamAdminSettings): Record<string, GroupPolicy> {
  return (s.autoRunControls?.groups ?? {}) as Record<string, GroupPolicy>;
}

export async function groupsPage(root: HTMLElement, team: string): Promise<void> {
  const org = team === ORG_TEAM;
  const view = await getTeamView(team);
  const editable = session.isAdmin() && !view.managedBy;
  let settings = view.settings;
  const status = statusLine();
  const list = h("div", { id: "group-list" });
  const revision = h("p", { class: "muted", id: "groups-revision" });
  const impact = h("section", { "aria-label": "Impact preview", id: "org-impact" });

  /** The organisation's document with `name`'s policy as edited, decided against every team it touches. */
  const preview = async (name: string, policy: GroupPolicy): Promise<void> => {
    const groups = { ...groupsOf(settings), [name]: policy };
    showOk(status, "Deciding the logged calls of every team again…");
    try {
      const p = await call("DecisionLogService/PreviewTeamAdminSettings", { teamId: team, autoRunControls: { ...(settings.autoRunControls ?? {}), groups } });
      renderPreview(impact, p);
      showOk(status, `Impact preview ready: ${(p.teams ?? []).length} team(s) touched.`);
    } catch (e) {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  const write = async (name: string, policy: GroupPolicy | null): Promise<boolean> => {
    const groups = { ...groupsOf(settings) };
    if (policy === null) delete groups[name];
    else groups[name] = policy;
    try {
      settings = await putTeamSettings(team, { ...(settings.autoRunControls ?? {}), groups }, num(settings.revision));
      show();
      showOk(status, `Group policy ${name} ${policy === null ? "deleted" : "saved"} at revision ${num(settings.revision)}.`);
      return true;
    } catch (e) {
      if (e instanceof ApiError && e.code === "aborted") {
        settings = await getTeamSettings(team);
        show();
      }
      showError(status, e instanceof Error ? e.message : String(e));
      return false;
    }
  };

  /** A group's policy as JSON in a text area, saved or deleted as one. */
  const editor = (name: string, policy: GroupPolicy): HTMLElement => {
    const id = `group-${name}`;
    const text = h("textarea", { id, rows: 6, spellcheck: "false", readonly: !editable }, JSON.stringify(policy, null, 2));
    const parsed = (): GroupPolicy | null => {
      try {
        const v: unknown = JSON.parse(text.value);
        if (v && typeof v === "object" && !Array.isArray(v)) return v as GroupPolicy;
      } catch {
        // said below
      }
      showError(status, `group ${name}: not a JSON object: write the policy as {"denied": ["git push"]}`);
      return null;
    };
    return h(
      "section",
      { class: "group", "aria-label": `Group ${name}` },
      h("h3", {}, h("label", { for: id }, `Group ${name}`)),
      text,
      editable
        ? h(
            "div",
            { class: "actions" },
            h("button", { type: "button", class: "primary", id: `${id}-save`, onclick: () => { const p = parsed(); if (p) void write(name, p); } }, "Save"),
            h("button", { type: "button", class: "danger", id: `${id}-delete`, onclick: () => void write(name, null) }, "Delete"),
            org ? h("button", { type: "button", id: `${id}-preview`, onclick: () => { const p = parsed(); if (p) void preview(name, p); } }, "Preview impact") : null,
          )
        : null,
    );
  };

  const show = () => {
    const groups = groupsOf(settings);
    const names = Object.keys(groups).sort();
    const at = num(settings.revision);
    fill(revision, at === 0 ? "Never written (revision 0)." : `At revision ${at}.`);
    fill(
      list,
      names.length === 0 ? h("p", { class: "muted", id: "no-groups" }, org ? "The organisation has no group policies." : `Team ${team} has no group policies.`) : null,
      names.map((n) => editor(n, groups[n])),
    );
  };

  const newName = h("input", { id: "new-group-name", type: "text", autocomplete: "off", autocapitalize: "off", spellcheck: "false" });
  const newPolicy = h("textarea", { id: "new-group-policy", rows: 4, spellcheck: "false" }, '{"denied": []}');
  const adding = h(
    "form",
    {
      "aria-label": "Add a group policy",
      id: "new-group",
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        const name = newName.value.trim();
        if (!NAME.test(name)) {
          showError(status, `group ${JSON.stringify(name)} is not a group name: use ASCII letters, digits, '.', '_' and '-', starting with a letter or digit`);
          return;
        }
        let policy: GroupPolicy;
        try {
          policy = JSON.parse(newPolicy.value) as GroupPolicy;
        } catch (e) {
          showError(status, `the policy is not JSON (${e instanceof Error ? e.message : String(e)}): write it as {"denied": ["git push"]}`);
          return;
        }
        if (await write(name, policy)) newName.value = "";
      },
    },
    h("h3", {}, "Add a group policy"),
    h("div", {}, labelled("Group name", newName)),
    h("div", {}, labelled("Policy (JSON: denied, blocked, allowed, mcpToolBlocklist, allowMode…)", newPolicy)),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", id: "new-group-save" }, "Add")),
  );

  const signIns = h("tbody", { id: "sign-in-rows" });
  const signInStatus = statusLine();
  show();
  if (org) {
    fill(
      root,
      h("h2", {}, "Organisation-wide group policies"),
      h(
        "p",
        { class: "help" },
        "What the members of each group get in every team, combined with the team's controls and the team's own policy of the same group: deny lists add up (a team cannot remove an organisation's deny), allowed lists add or replace, protections take the strictest. Only operators read and write them.",
      ),
      revision,
      status,
      list,
      impact,
      editable ? adding : null,
    );
    return;
  }
  fill(
    root,
    h("h2", {}, `Groups of team ${team}`),
    h("p", { class: "help" }, "What the members of each group get on top of, or instead of part of, the team's controls: deny lists add up, allowed lists add or replace, protections take the strictest."),
    view.managedBy ? managedNote(team, view.managedBy) : null,
    revision,
    status,
    list,
    editable ? adding : null,
    h(
      "section",
      { "aria-label": "Who signed in", id: "sign-ins" },
      h("h3", {}, "Who signed in"),
      signInStatus,
      cardTable("Users who signed in through the identity provider, the latest first", ["User", "Groups", "Last sign-in", "First", "Issuer"], signIns),
    ),
  );
  try {
    const r = await call("PrincipalService/ListSignIns", { teamId: team });
    const rows = r.signIns ?? [];
    fill(
      signIns,
      rows.length === 0
        ? h("tr", {}, h("td", { colspan: 5 }, "No one signed in through the identity provider yet."))
        : rows.map((s) =>
            h(
              "tr",
              {},
              cell("User", s.userId ?? ""),
              cell("Groups", (s.groups ?? []).join(", ") || "none"),
              cell("Last sign-in", s.lastAt ?? ""),
              cell("First", s.firstAt ?? ""),
              cell("Issuer", s.issuer ?? ""),
            ),
          ),
    );
  } catch (e) {
    showError(signInStatus, e instanceof Error ? e.message : String(e));
  }
}
