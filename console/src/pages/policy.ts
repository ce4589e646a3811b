// A team's policy: every AutoRunControls field, the changes against the stored
// revision, the impact preview, and apply with the expected revision.

import { ApiError, call, getTeamSettings, putTeamSettings } from "../api";
import { diff, renderDiff } from "../diff";
import { fill, h, showError, showOk, statusLine } from "../dom";
import { APPROVAL_FIELDS, CONTROL_FIELDS, USER_FIELDS } from "../fields";
import { settingsForm } from "../form";
import { cardTable, cell } from "../layout";
import { outcomeName, reasonName } from "../reasons";
import { session } from "../session";
import { getTeamView, managedNote } from "../team";
import type { AutoRunControls, Preview, TeamAdminSettings } from "../types";
import { num } from "../types";
import { describeCall } from "./decisions";

type Doc = Record<string, unknown>;

export async function policyPage(root: HTMLElement, team: string): Promise<void> {
  const view = await getTeamView(team);
  // a team a policy file manages is shown read only from the start, not refused after Apply
  const admin = session.isAdmin() && !view.managedBy;
  let base: TeamAdminSettings = view.settings;
  const status = statusLine();
  const summary = h("div", { class: "summary", role: "alert" });
  const changes = h("section", { "aria-label": "Changes" });
  const impact = h("section", { "aria-label": "Impact preview" });
  const conflict = h("section", { "aria-label": "Conflict" });
  const revisionLine = h("p", { class: "muted", id: "policy-revision" });

  const controls = settingsForm(CONTROL_FIELDS, base.autoRunControls as Doc, { readOnly: !admin, idPrefix: "ctl" });
  const approvals = settingsForm(APPROVAL_FIELDS, base.autoRunControls?.approvals as Doc, {
    readOnly: !admin,
    prefix: "approvals.",
    idPrefix: "appr",
  });
  const defaults = settingsForm(USER_FIELDS, base.autoRunControls?.defaultUserSettings as Doc, {
    readOnly: !admin,
    prefix: "default_user_settings.",
    idPrefix: "def",
  });

  const showRevision = () => {
    revisionLine.textContent = `Stored revision ${num(base.revision)}${base.updatedBy ? `, by ${base.updatedBy}` : ""}${base.updatedAt ? ` at ${new Date(base.updatedAt).toLocaleString()}` : ""}. Kill switch ${base.autoRunControls?.killSwitch ? "ON" : "off"}.`;
  };
  showRevision();

  /** The controls the form describes, on top of the stored ones (the kill switch kept). */
  const proposed = (): AutoRunControls => {
    const stored = (base.autoRunControls ?? {}) as Doc;
    const out = controls.read(stored);
    // a message the server may not know (approvals) is sent only when set or changed
    const approvalsBefore = stored.approvals as Doc | undefined;
    const approvalsAfter = approvals.read(approvalsBefore);
    if (approvalsBefore !== undefined || diff(APPROVAL_FIELDS, approvalsBefore, approvalsAfter).length > 0) {
      out.approvals = approvalsAfter;
    } else {
      delete out.approvals;
    }
    const defaultsBefore = stored.defaultUserSettings as Doc | undefined;
    const defaultsAfter = defaults.read(defaultsBefore);
    // unset stays unset (toolgate's defaults) unless a field was changed
    if (defaultsBefore !== undefined || diff(USER_FIELDS, defaultsBefore, defaultsAfter).length > 0) {
      out.defaultUserSettings = defaultsAfter;
    } else {
      delete out.defaultUserSettings;
    }
    return out as AutoRunControls;
  };

  const changesOf = (before: AutoRunControls | undefined, after: AutoRunControls | undefined) => [
    ...diff(CONTROL_FIELDS, before as Doc, after as Doc),
    ...diff(APPROVAL_FIELDS, before?.approvals as Doc, after?.approvals as Doc).map((c) => ({
      ...c,
      field: { ...c.field, label: `Approvals: ${c.field.label}`, proto: `approvals.${c.field.proto}` },
    })),
    ...diff(USER_FIELDS, before?.defaultUserSettings as Doc, after?.defaultUserSettings as Doc).map((c) => ({
      ...c,
      field: { ...c.field, label: `Default for users: ${c.field.label}`, proto: `default_user_settings.${c.field.proto}` },
    })),
  ];

  const clear = () => {
    controls.clearProblems();
    approvals.clearProblems();
    defaults.clearProblems();
    summary.replaceChildren();
  };

  const showChanges = () => {
    fill(changes, h("h3", {}, `Changes against revision ${num(base.revision)}`), renderDiff(changesOf(base.autoRunControls, proposed()), "No changes."));
  };

  const refused = (e: unknown, what: string) => {
    if (e instanceof ApiError && e.code === "invalid_argument") {
      const found = e.problems;
      const unclaimed = defaults.showProblems(approvals.showProblems(controls.showProblems(found)));
      fill(
        summary,
        h("p", { class: "error" }, `The server refused the policy: nothing was ${what}. Fix the fields marked below.`),
        h("ul", {}, found.map((p) => h("li", {}, p.field ? `${p.field}: ${p.text}` : p.text))),
        unclaimed.length ? h("p", { class: "muted" }, "Some problems name no field of this form; they are listed above.") : null,
      );
      showError(status, `Refused: ${e.message}`);
      const first = root.querySelector<HTMLElement>(".invalid textarea, .invalid input, .invalid select");
      first?.focus();
    } else {
      showError(status, e instanceof Error ? e.message : String(e));
    }
  };

  const apply = async () => {
    clear();
    conflict.replaceChildren();
    showOk(status, "Applying…");
    const doc = proposed();
    try {
      const applied = await putTeamSettings(team, doc, num(base.revision));
      base = applied;
      showRevision();
      changes.replaceChildren();
      showOk(status, `Applied: the team is at revision ${num(applied.revision)}.`);
      // valid, but maybe not what the admin means (a program whose effects are unknown)
      if (applied.warnings?.length) {
        fill(summary, h("p", {}, "Applied, with warnings:"), h("ul", {}, applied.warnings.map((w) => h("li", {}, `${w.field}: ${w.message}`))));
      }
    } catch (e) {
      if (e instanceof ApiError && e.code === "aborted") {
        const current = await getTeamSettings(team);
        fill(
          conflict,
          h("h3", {}, `Someone applied revision ${num(current.revision)} since you loaded revision ${num(base.revision)}`),
          h("p", {}, "Nothing was applied. What they changed:"),
          renderDiff(changesOf(base.autoRunControls, current.autoRunControls), "No field differs (only the revision)."),
          h("p", {}, "Your edits are still in the form. Apply again to put them on top of their revision, or reload the page to start from theirs."),
        );
        base = current;
        showRevision();
        showError(status, e.message);
      } else {
        refused(e, "applied");
      }
    }
  };

  const preview = async () => {
    clear();
    showOk(status, "Deciding the logged calls again…");
    try {
      const p = await call("DecisionLogService/PreviewTeamAdminSettings", { teamId: team, autoRunControls: proposed() });
      renderPreview(impact, p);
      showOk(status, "Impact preview ready.");
    } catch (e) {
      if (e instanceof ApiError && e.code === "unimplemented") {
        fill(impact, h("p", { class: "muted" }, "This server has no decision log to preview against."));
        status.textContent = "";
      } else {
        refused(e, "previewed");
      }
    }
  };

  fill(
    root,
    h("h2", {}, `Policy of team ${team}`),
    revisionLine,
    view.managedBy ? managedNote(team, view.managedBy) : admin ? null : h("p", { class: "note" }, "You may read this policy; only the team's admins may change it."),
    summary,
    h(
      "form",
      {
        id: "policy-form",
        "aria-label": "Team policy",
        onsubmit: (ev: Event) => {
          ev.preventDefault();
          if (admin) void apply();
        },
      },
      h("fieldset", {}, h("legend", {}, "Admin controls"), controls.element),
      h("fieldset", {}, h("legend", {}, "Central approvals"), approvals.element),
      h("fieldset", {}, h("legend", {}, "Defaults for users who set nothing themselves"), defaults.element),
      // the bar stays on screen while the long form scrolls, with the last result beside it
      admin
        ? h(
            "div",
            { class: "actions apply-bar", id: "apply-bar" },
            h("button", { type: "button", id: "show-changes", onclick: showChanges }, "Show changes"),
            h("button", { type: "button", id: "preview-impact", onclick: () => void preview() }, "Preview impact"),
            h("button", { type: "submit", id: "apply", class: "primary" }, "Apply"),
            status,
          )
        : null,
    ),
    admin ? null : status,
    conflict,
    changes,
    impact,
  );
}

/** Why a preview stopped before the window's oldest call, in people's words. */
function cutShortText(why: string | undefined): string {
  switch (why) {
    case "PREVIEW_CUT_SHORT_TIME":
      return "Cut short: the preview ran out of time (decision_log.preview_max_ms), so only the newest calls were decided again.";
    case "PREVIEW_CUT_SHORT_RECORDS":
      return "Cut short: the window holds more calls than one preview decides (decision_log.preview_max_records), so only the newest were decided again.";
    default:
      return "Cut short: only the newest calls of the window were decided again.";
  }
}

export function renderPreview(el: HTMLElement, p: Preview): void {
  fill(
    el,
    h("h3", {}, "Impact preview"),
    h(
      "p",
      { id: "impact-summary" },
      `${num(p.decided)} logged calls decided again: ${num(p.changed)} would change outcome, ${num(p.unchanged)} would not, ${num(p.unknown)} cannot be decided again.`,
    ),
    p.truncated ? h("p", { id: "impact-cut-short", class: "muted" }, cutShortText(p.cutShort)) : null,
    (p.groups ?? []).length === 0
      ? null
      : cardTable(
          "Calls whose outcome changes, by tool or command",
          ["From", "To", "Tool or command", "Calls", "Examples"],
          h(
            "tbody",
            {},
            (p.groups ?? []).map((g) =>
              h(
                "tr",
                {},
                cell("From", outcomeName(g.from)),
                cell("To", outcomeName(g.to)),
                cell("Tool or command", h("code", {}, g.key ?? "")),
                cell("Calls", String(num(g.count))),
                cell("Examples", (g.examples ?? []).map((x) => h("div", {}, `${describeCall(x.record?.call)} (${x.record?.userId ?? ""}) → ${reasonName(x.newReason)}`))),
              ),
            ),
          ),
        ),
    (p.teams ?? []).length === 0
      ? null
      : cardTable(
          "Teams the change touches (their calls by members of a changed group)",
          ["Team", "Revision", "Decided again", "Would change"],
          h(
            "tbody",
            { id: "impact-teams" },
            (p.teams ?? []).map((t) =>
              h(
                "tr",
                { id: `impact-team-${t.teamId ?? ""}` },
                cell("Team", t.teamId ?? ""),
                cell("Revision", String(num(t.impact?.revision))),
                cell("Decided again", String(num(t.impact?.decided))),
                cell("Would change", String(num(t.impact?.changed))),
              ),
            ),
          ),
        ),
  );
}
