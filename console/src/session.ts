// The signed-in credential: in memory, and in this tab's sessionStorage so a reload
// keeps it. Never localStorage (it would outlive the tab) and never a URL (it would
// reach history, logs and Referer headers).

import type { Principal } from "./types";

const KEY = "toolgate.token";
let token: string | null = null;
let principal: Principal | null = null;

export const session = {
  token(): string | null {
    if (token === null) token = sessionStorage.getItem(KEY);
    return token;
  },
  principal(): Principal | null {
    return principal;
  },
  signIn(t: string, p: Principal): void {
    token = t;
    principal = p;
    sessionStorage.setItem(KEY, t);
  },
  /** Before the principal is known: the token the next call sends. */
  tryToken(t: string): void {
    token = t;
  },
  signOut(): void {
    token = null;
    principal = null;
    sessionStorage.removeItem(KEY);
  },
  isAdmin(): boolean {
    const role = principal?.role;
    return role === "PRINCIPAL_ROLE_ADMIN" || role === "PRINCIPAL_ROLE_OPERATOR";
  },
};
