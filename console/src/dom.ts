// Element builders: every piece of server data goes in as text (textContent or an
// attribute), never as markup, so nothing the server stores can run in the page.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, unknown>;

function append(el: Element, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value as EventListener);
    } else if (key === "value" && el instanceof HTMLInputElement) {
      el.value = String(value);
    } else if (key === "value" && el instanceof HTMLTextAreaElement) {
      el.value = String(value);
    } else if (key === "checked" && el instanceof HTMLInputElement) {
      el.checked = Boolean(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

/** An HTML element with attributes (`on*` functions become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element, for the charts. */
export function s(tag: string, attrs: Attrs = {}, ...children: (Child | Child[])[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Replaces the children of `el`. */
export function fill(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, children);
}

let idCounter = 0;
/** A fresh id, for labels and descriptions. */
export function uid(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

/** A status line read out by screen readers when it changes. */
export function statusLine(): HTMLElement {
  return h("p", { class: "status", role: "status", "aria-live": "polite" });
}

export function showError(el: HTMLElement, message: string): void {
  el.className = "status error";
  el.textContent = message;
}

export function showOk(el: HTMLElement, message: string): void {
  el.className = "status ok";
  el.textContent = message;
}
