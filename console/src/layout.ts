// Layout that holds at phone width: tables that become stacked cards (each cell
// carries its column's name, `data-label`, which the stylesheet shows once the header
// row is hidden), and filter fields that keep a label above its own input.

import { h } from "./dom";

type Child = Node | string | null | undefined | false;

/** A table of class `cards` with a caption, a header row and the given body. */
export function cardTable(caption: string, columns: string[], body: HTMLTableSectionElement, attrs: Record<string, unknown> = {}): HTMLTableElement {
  const cls = ["cards", attrs.class].filter(Boolean).join(" ");
  return h(
    "table",
    { ...attrs, class: cls },
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    body,
  );
}

/** A cell that names its column for the stacked layout. */
export function cell(label: string, ...children: (Child | Child[])[]): HTMLTableCellElement {
  return h("td", { "data-label": label }, ...children);
}

/** A filter's label and its control, kept together when the filters wrap. */
export function labelled(label: string, control: HTMLElement): HTMLElement {
  return h("div", { class: "filter" }, h("label", { for: control.id }, label), control);
}
