// A team's users and their settings, each field saved on its own (an update mask), so
// two people editing different fields never overwrite each other.

import { ApiError, call, getUserSettings, patchUserSettings } from "../api";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { USER_FIELDS, get, lines } from "../fields";
import { settingsForm } from "../form";
import { session } from "../session";
import { getTeamView, replacedText, replacedUserFields } from "../team";
import type { UserSettings } from "../types";
import { num } from "../types";

export async function usersPage(root: HTMLElement, team: string): Promise<void> {
  const p = session.principal();
  const member = p?.role === "PRINCIPAL_ROLE_MEMBER";
  const known = new Set<string>();
  if (p?.userId && p.teamId === team) known.add(p.userId);
  if (session.isAdmin()) {
    try {
      const tokens = await call("TokenService/ListTokens", { teamId: team });
      for (const t of tokens.tokens ?? []) if (t.userId) known.add(t.userId);
    } catch {
      // the list is a convenience: any user can still be opened by id
    }
  }
  // which of a user's lists the team's replace: said beside them and when one is saved
  const replaced = await getTeamView(team).then(
    (view) => replacedUserFields(view.settings.autoRunControls),
    () => new Set<string>(),
  );
  const detail = h("section", { id: "user-detail", "aria-label": "User settings" });
  const list = h(
    "ul",
    { class: "users", id: "user-list" },
    [...known].sort().map((u) => h("li", {}, h("button", { type: "button", class: "link", onclick: () => void openUser(detail, team, u, replaced) }, u))),
  );
  const open = h("input", { id: "open-user", type: "text", autocapitalize: "off", spellcheck: "false" });
  fill(
    root,
    h("h2", {}, `Users of team ${team}`),
    known.size === 0 ? h("p", { class: "muted" }, "No users known yet (users with tokens are listed).") : list,
    member
      ? null
      : h(
          "form",
          {
            class: "inline",
            "aria-label": "Open a user",
            onsubmit: (ev: Event) => {
              ev.preventDefault();
              if (open.value.trim()) void openUser(detail, team, open.value.trim(), replaced);
            },
          },
          h("label", { for: "open-user" }, "User id"),
          open,
          h("button", { type: "submit" }, "Open"),
        ),
    detail,
  );
  if (member && p?.userId) await openUser(detail, team, p.userId, replaced);
}

async function openUser(el: HTMLElement, team: string, user: string, replaced: Set<string>): Promise<void> {
  const status = statusLine();
  let settings: UserSettings;
  try {
    settings = await getUserSettings(team, user);
  } catch (e) {
    fill(el, h("p", { class: "status error" }, e instanceof Error ? e.message : String(e)));
    return;
  }
  const p = session.principal();
  const mayWrite = session.isAdmin() || (p?.role === "PRINCIPAL_ROLE_MEMBER" && p.userId === user);
  const revision = h("p", { class: "muted" });
  const showRevision = () => {
    revision.textContent = `Revision ${num(settings.revision)}${settings.updatedBy ? `, by ${settings.updatedBy}` : ""}${num(settings.revision) === 0 ? " (the team's defaults: never written)" : ""}.`;
  };
  showRevision();
  const form = settingsForm(USER_FIELDS, settings as Record<string, unknown>, { readOnly: !mayWrite, idPrefix: `user` });
  for (const key of replaced) form.row(key)?.append(h("p", { class: "note replaced" }, replacedText(team)));
  if (mayWrite) {
    for (const field of USER_FIELDS) {
      const row = form.row(field.key);
      row?.append(
        h(
          "button",
          {
            type: "button",
            class: "save-field",
            "aria-label": `Save ${field.label}`,
            onclick: async () => {
              form.clearProblems();
              const doc = form.read(settings as Record<string, unknown>);
              const value = field.kind === "list" ? lines(((get(doc, field.key) as string[]) ?? []).join("\n")) : get(doc, field.key);
              const changed: Record<string, unknown> = { teamId: team, userId: user };
              if (value !== undefined) changed[field.key] = value;
              try {
                settings = await patchUserSettings(changed, field.key);
                showRevision();
                const unused = replaced.has(field.key) ? ` ${replacedText(team)}` : "";
                showOk(status, `Saved ${field.label} at revision ${num(settings.revision)}.${unused}`);
              } catch (e) {
                if (e instanceof ApiError && e.code === "invalid_argument") form.showProblems(e.problems);
                showError(status, e instanceof Error ? e.message : String(e));
              }
            },
          },
          "Save",
        ),
      );
    }
  }
  fill(el, h("h3", {}, `Settings of ${user}`), revision, mayWrite ? null : h("p", { class: "note" }, "Read only."), form.element, status);
}
