// A settings form built from field descriptors: a labelled control per field, its
// help and a slot for the server's message about it.

import type { Problem } from "./api";
import { type Field, get, lines, normal, set } from "./fields";
import { h, uid } from "./dom";

export interface SettingsForm {
  element: HTMLElement;
  /** The document the controls describe, on top of `base` (fields the form does not show are kept). */
  read(base: Record<string, unknown> | undefined): Record<string, unknown>;
  /** Shows each problem beside its field; the ones no field claims are returned. */
  showProblems(problems: Problem[]): Problem[];
  clearProblems(): void;
  /** One field's row, for forms that act per field. */
  row(key: string): HTMLElement | undefined;
}

interface Row {
  field: Field;
  control: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
  error: HTMLElement;
  element: HTMLElement;
}

/** The path a server message names, without the message's top-level prefix and index. */
function messagePath(problem: Problem): string {
  return problem.field.replace(/\[\d+\]$/, "").replace(/^auto_run_controls\./, "").replace(/^settings\./, "");
}

export function settingsForm(fields: Field[], doc: Record<string, unknown> | undefined, opts: { readOnly: boolean; prefix?: string; idPrefix: string }): SettingsForm {
  const prefix = opts.prefix ?? "";
  const rows: Row[] = fields.map((field) => {
    const id = `${opts.idPrefix}-${field.key.replace(/\./g, "-")}`;
    const helpId = uid("help");
    const errorId = uid("error");
    const value = normal(field, get(doc, field.key));
    const described = [field.help ? helpId : "", errorId].filter(Boolean).join(" ");
    let control: Row["control"];
    switch (field.kind) {
      case "bool":
        control = h("input", { type: "checkbox", id, checked: value === true, "aria-describedby": described, disabled: opts.readOnly });
        break;
      case "list":
        control = h("textarea", { id, rows: 3, spellcheck: "false", autocapitalize: "off", "aria-describedby": described, readonly: opts.readOnly, value: (value as string[]).join("\n") });
        break;
      case "text":
        control = h("input", { id, type: "text", spellcheck: "false", autocapitalize: "off", "aria-describedby": described, readonly: opts.readOnly, value: value as string });
        break;
      case "number":
        control = h("input", { id, type: "number", min: "0", step: "1", inputmode: "numeric", "aria-describedby": described, readonly: opts.readOnly, value: value as string });
        break;
      case "object":
        control = h("textarea", { id, rows: 4, spellcheck: "false", "aria-describedby": described, readonly: opts.readOnly, value: value as string });
        break;
      case "enum":
        control = h("select", { id, "aria-describedby": described, disabled: opts.readOnly }, (field.options ?? []).map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
        break;
      case "tri":
        control = h("select", { id, "aria-describedby": described, disabled: opts.readOnly }, [["", "unset (on)"], ["true", "on"], ["false", "off"]].map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
        break;
    }
    const error = h("p", { class: "field-error", id: errorId, "aria-live": "polite" });
    const label = h("label", { for: id }, field.label);
    const element = h(
      "div",
      { class: `field field-${field.kind}`, "data-field": field.proto },
      field.kind === "bool" ? h("div", { class: "check" }, control, label) : [label, control],
      field.help ? h("p", { class: "help", id: helpId }, field.help) : null,
      error,
    );
    return { field, control, error, element };
  });
  return {
    element: h("div", { class: "fields" }, rows.map((r) => r.element)),
    read(base) {
      const out = structuredClone(base ?? {}) as Record<string, unknown>;
      for (const { field, control } of rows) {
        switch (field.kind) {
          case "bool":
            set(out, field.key, (control as HTMLInputElement).checked);
            break;
          case "list":
            set(out, field.key, lines(control.value));
            break;
          case "object":
            if (control.value.trim() === "") delete out[field.key];
            else {
              try {
                set(out, field.key, JSON.parse(control.value));
              } catch {
                // sent as written: the server's refusal names the field and the fix
                set(out, field.key, control.value);
              }
            }
            break;
          case "text":
          case "enum":
            set(out, field.key, control.value);
            break;
          case "number":
            set(out, field.key, Number(control.value || 0));
            break;
          case "tri":
            if (control.value === "") delete out[field.key];
            else set(out, field.key, control.value === "true");
            break;
        }
      }
      return out;
    },
    showProblems(problems) {
      const unclaimed: Problem[] = [];
      for (const p of problems) {
        const path = messagePath(p);
        const row = rows.find((r) => path === prefix + r.field.proto || (prefix === "" && path.split(".")[0] === r.field.proto));
        if (!row) {
          unclaimed.push(p);
          continue;
        }
        row.element.classList.add("invalid");
        row.control.setAttribute("aria-invalid", "true");
        row.error.append(h("span", {}, `${p.field}: ${p.text}`));
      }
      return unclaimed;
    },
    clearProblems() {
      for (const r of rows) {
        r.element.classList.remove("invalid");
        r.control.removeAttribute("aria-invalid");
        r.error.replaceChildren();
      }
    },
    row(key) {
      return rows.find((r) => r.field.key === key)?.element;
    },
  };
}
