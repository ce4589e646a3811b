// Field-by-field differences between two settings documents: the entries a list
// gains and loses, a setting's old and new value.

import { type Field, get, normal } from "./fields";
import { h } from "./dom";

export interface Change {
  field: Field;
  added: string[];
  removed: string[];
  from?: string;
  to?: string;
}

export function diff(fields: Field[], before: Record<string, unknown> | undefined, after: Record<string, unknown> | undefined): Change[] {
  const out: Change[] = [];
  for (const field of fields) {
    const a = normal(field, get(before, field.key));
    const b = normal(field, get(after, field.key));
    if (Array.isArray(a) && Array.isArray(b)) {
      const added = b.filter((x) => !a.includes(x));
      const removed = a.filter((x) => !b.includes(x));
      const reordered = added.length === 0 && removed.length === 0 && a.join("\n") !== b.join("\n");
      if (added.length || removed.length || reordered) {
        out.push({ field, added, removed, from: reordered ? "order" : undefined, to: reordered ? "changed" : undefined });
      }
    } else if (a !== b) {
      out.push({ field, added: [], removed: [], from: show(a), to: show(b) });
    }
  }
  return out;
}

function show(v: unknown): string {
  if (v === "") return "(unset)";
  if (typeof v === "string" && v.length > 80) return `${v.slice(0, 77)}…`;
  return String(v);
}

/** The changes as a list people read: `- entry` / `+ entry`, `old → new`. */
export function renderDiff(changes: Change[], empty: string): HTMLElement {
  if (changes.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "ul",
    { class: "diff" },
    changes.map((c) =>
      h(
        "li",
        {},
        h("strong", {}, c.field.label),
        " ",
        h("code", { class: "muted" }, c.field.proto),
        c.from !== undefined ? h("div", {}, h("span", { class: "del" }, c.from), " → ", h("span", { class: "add" }, c.to ?? "")) : null,
        c.removed.map((r) => h("div", { class: "del" }, `− ${r}`)),
        c.added.map((a) => h("div", { class: "add" }, `+ ${a}`)),
      ),
    ),
  );
}
