// The console's shell: sign-in, the header with the team and the pages, and the
// routes (`#/policy`, …) that say which page shows; the credential never enters a URL.

import { ApiError, call } from "./api";
import { fill, h, showError } from "./dom";
import { approvalsPage } from "./pages/approvals";
import { auditPage } from "./pages/audit";
import { decisionsPage } from "./pages/decisions";
import { ORG_TEAM, groupsPage } from "./pages/groups";
import { killSwitchPage } from "./pages/killswitch";
import { pinsPage } from "./pages/pins";
import { policyPage } from "./pages/policy";
import { usersPage } from "./pages/users";
import { session } from "./session";
import { getTeamView, mayApprove } from "./team";
import type { Principal } from "./types";

interface Page {
  route: string;
  title: string;
  /** Shown to admins (and operators) only. */
  adminOnly: boolean;
  /** Shown to a member only once the team's policy names them an approver. */
  approversOnly?: boolean;
  /** Shown to operators only (the organisation's pages: the API refuses anyone else). */
  operatorOnly?: boolean;
  render(root: HTMLElement, team: string, signal: AbortSignal): Promise<void>;
}

const PAGES: Page[] = [
  { route: "policy", title: "Policy", adminOnly: false, render: (r, t) => policyPage(r, t) },
  { route: "users", title: "Users", adminOnly: false, render: (r, t) => usersPage(r, t) },
  { route: "groups", title: "Groups", adminOnly: true, render: (r, t) => groupsPage(r, t) },
  { route: "org-groups", title: "Org groups", adminOnly: true, operatorOnly: true, render: (r) => groupsPage(r, ORG_TEAM) },
  { route: "decisions", title: "Decisions", adminOnly: false, render: decisionsPage },
  { route: "audit", title: "Audit trail", adminOnly: true, render: (r, t) => auditPage(r, t) },
  { route: "approvals", title: "Approvals", adminOnly: false, approversOnly: true, render: approvalsPage },
  { route: "pins", title: "Tool pins", adminOnly: false, render: (r, t) => pinsPage(r, t) },
  { route: "kill-switch", title: "Kill switch", adminOnly: false, render: (r, t) => killSwitchPage(r, t) },
];

const app = document.getElementById("app") as HTMLElement;
let team = "";
let leaving: AbortController | null = null;

function roleName(p: Principal): string {
  return (p.role ?? "").replace(/^PRINCIPAL_ROLE_/, "").toLowerCase();
}

function signInPage(message?: string): void {
  leaving?.abort();
  const token = h("input", { id: "token", type: "password", autocomplete: "off", spellcheck: "false", required: true, "aria-describedby": "token-help" });
  const status = h("p", { class: "status", role: "status", "aria-live": "polite" });
  if (message) showError(status, message);
  fill(
    app,
    h(
      "main",
      { id: "main", class: "signin" },
      h("h1", {}, "toolgate"),
      h(
        "form",
        {
          id: "signin",
          "aria-label": "Sign in",
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            const t = token.value.trim();
            if (!t) return;
            session.tryToken(t);
            try {
              const p = await call("PrincipalService/GetPrincipal", {});
              session.signIn(t, p);
              token.value = "";
              team = p.teamId || p.teamIds?.[0] || "";
              if (!location.hash) location.hash = "#/policy";
              shell();
            } catch (e) {
              session.signOut();
              showError(status, e instanceof ApiError && e.code === "unauthenticated" ? `Not signed in: ${e.message}` : e instanceof Error ? e.message : String(e));
            }
          },
        },
        h("label", { for: "token" }, "Token"),
        token,
        h(
          "p",
          { class: "help", id: "token-help" },
          "An API token: a team admin makes one with toolgate token create --team TEAM --user YOU (it is shown once), and the file you gave toolgate login holds yours. A token from your identity provider works too when this server accepts them. It is kept in this browser tab only, and forgotten when you sign out or close the tab.",
        ),
        h("button", { type: "submit", class: "primary" }, "Sign in"),
      ),
      status,
    ),
  );
  token.focus();
}

/** Whether the signed-in principal is shown `p` at all. */
function shown(p: Page): boolean {
  const operator = session.principal()?.role === "PRINCIPAL_ROLE_OPERATOR";
  return (session.isAdmin() || !p.adminOnly) && (operator || !p.operatorOnly);
}

function currentPage(): Page {
  const route = location.hash.replace(/^#\/?/, "");
  return PAGES.find((p) => p.route === route && shown(p)) ?? PAGES[0];
}

function shell(): void {
  const p = session.principal();
  if (!p) return signInPage();
  const admin = session.isAdmin();
  const page = currentPage();
  const teams = p.teamIds && p.teamIds.length > 0 ? p.teamIds : p.teamId ? [p.teamId] : [];
  const teamInput =
    p.role === "PRINCIPAL_ROLE_OPERATOR"
      ? h("input", { id: "team", type: "text", list: "team-list", value: team, autocapitalize: "off", spellcheck: "false" })
      : h("select", { id: "team" }, teams.map((t) => h("option", { value: t, selected: t === team }, t)));
  teamInput.addEventListener("change", () => {
    team = teamInput.value.trim();
    shell();
  });
  const main = h("main", { id: "main", tabindex: "-1" });
  fill(
    app,
    h("a", { class: "skip", href: "#main", onclick: (ev: Event) => (ev.preventDefault(), main.focus()) }, "Skip to the page"),
    h(
      "header",
      {},
      h("h1", {}, "toolgate"),
      h(
        "nav",
        { "aria-label": "Pages" },
        h(
          "ul",
          {},
          PAGES.filter(shown).map((pg) => {
            const li = h("li", { hidden: !admin && pg.approversOnly && pg !== page }, h("a", { href: `#/${pg.route}`, "aria-current": pg === page ? "page" : false }, pg.title));
            if (li.hidden) showIfApprover(li, team);
            return li;
          }),
        ),
      ),
      h(
        "div",
        { class: "who" },
        h("span", { id: "who" }, `${p.name ?? ""} (${roleName(p)})`),
        h("label", { for: "team" }, "Team"),
        teamInput,
        h("datalist", { id: "team-list" }, teams.map((t) => h("option", { value: t }))),
        h(
          "button",
          {
            type: "button",
            id: "sign-out",
            onclick: () => {
              session.signOut();
              history.replaceState(null, "", location.pathname);
              signInPage();
            },
          },
          "Sign out",
        ),
      ),
    ),
    main,
  );
  leaving?.abort();
  leaving = new AbortController();
  document.title = `${page.title} · toolgate`;
  // the organisation's pages are no team's
  if (!team && !page.operatorOnly) {
    fill(main, h("p", {}, "Name a team above to see it."));
    return;
  }
  fill(main, h("p", { class: "muted" }, "Loading…"));
  page.render(main, team, leaving.signal).catch((e: unknown) => {
    if (e instanceof ApiError && e.code === "unauthenticated") {
      session.signOut();
      signInPage(`Signed out: ${e.message}`);
      return;
    }
    fill(main, h("h2", {}, page.title), h("p", { class: "status error", role: "alert" }, e instanceof Error ? e.message : String(e)));
  });
}

/** Unhides a member's Approvals link once the team's policy says they approve. */
function showIfApprover(li: HTMLElement, forTeam: string): void {
  if (!forTeam) return;
  getTeamView(forTeam)
    .then((view) => {
      if (forTeam === team && mayApprove(session.principal(), view.settings.autoRunControls)) li.hidden = false;
    })
    .catch(() => {
      // the link stays hidden: the page would only show the same refusal
    });
}

async function start(): Promise<void> {
  window.addEventListener("hashchange", () => {
    if (session.principal()) shell();
  });
  if (!session.token()) return signInPage();
  try {
    const p = await call("PrincipalService/GetPrincipal", {});
    session.signIn(session.token() ?? "", p);
    team = p.teamId || p.teamIds?.[0] || "";
    shell();
  } catch (e) {
    session.signOut();
    signInPage(e instanceof Error ? e.message : String(e));
  }
}

void start();
