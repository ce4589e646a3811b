// Charts drawn as inline SVG: decisions over time by outcome, and the most-asked and
// most-denied tools and commands. Each carries a text alternative.

import { h, s } from "./dom";
import { outcomeName } from "./reasons";
import type { DecisionRecord } from "./types";

const OUTCOMES = ["OUTCOME_ALLOW", "OUTCOME_ASK", "OUTCOME_DENY"];

/** Decisions per time bucket, stacked by outcome. */
export function timeChart(records: DecisionRecord[]): HTMLElement {
  const times = records.map((r) => Date.parse(r.at ?? "")).filter((t) => !Number.isNaN(t));
  if (times.length === 0) return h("p", { class: "muted" }, "No decisions to chart yet.");
  const min = Math.min(...times);
  const max = Math.max(...times);
  const steps = [60e3, 5 * 60e3, 15 * 60e3, 3600e3, 6 * 3600e3, 86400e3, 7 * 86400e3];
  const step = steps.find((st) => (max - min) / st < 24) ?? steps[steps.length - 1];
  const last = Math.floor(max / step);
  // at least a dozen buckets, ending with the newest, so a few decisions make narrow
  // bars rather than one wall
  const n = Math.max(last - Math.floor(min / step) + 1, 12);
  const start = (last - n + 1) * step;
  const buckets = Array.from({ length: n }, () => new Map<string, number>());
  for (const r of records) {
    const t = Date.parse(r.at ?? "");
    if (Number.isNaN(t)) continue;
    const b = buckets[Math.floor((t - start) / step)];
    const o = r.outcome ?? "";
    b.set(o, (b.get(o) ?? 0) + 1);
  }
  const tallest = Math.max(...buckets.map((b) => [...b.values()].reduce((a, c) => a + c, 0)), 1);
  const W = 600;
  const H = 160;
  const bw = W / n;
  const bars: SVGElement[] = [];
  buckets.forEach((b, i) => {
    let y = H;
    for (const o of OUTCOMES) {
      const c = b.get(o) ?? 0;
      if (c === 0) continue;
      const height = (c / tallest) * (H - 10);
      y -= height;
      bars.push(
        s(
          "rect",
          { x: (i * bw + 1).toFixed(1), y: y.toFixed(1), width: Math.max(bw - 2, 1).toFixed(1), height: height.toFixed(1), class: `bar ${outcomeName(o).toLowerCase()}` },
          s("title", {}, `${new Date(start + i * step).toLocaleString()}: ${c} ${outcomeName(o)}`),
        ),
      );
    }
  });
  const totals = OUTCOMES.map((o) => `${records.filter((r) => r.outcome === o).length} ${outcomeName(o)}`).join(", ");
  const label = `Decisions over time, ${n} buckets of ${step / 60e3} minutes from ${new Date(start).toLocaleString()}: ${totals}`;
  return h(
    "figure",
    { class: "chart" },
    s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label, preserveAspectRatio: "none", class: "time-chart" }, bars),
    h("figcaption", {}, "Decisions over time by outcome: ", legend(), ` (${totals})`),
  );
}

function legend(): HTMLElement {
  return h("span", { class: "legend" }, OUTCOMES.map((o) => h("span", { class: `key ${outcomeName(o).toLowerCase()}` }, outcomeName(o))));
}

/** What a chart counts a call by: `server:tool`, a command's program, or `delete_file`. */
export function callKey(r: DecisionRecord): string {
  const c = r.call;
  if (c?.mcp) return `${c.mcp.server ?? ""}:${c.mcp.tool ?? ""}`;
  if (c?.shellExcerpt !== undefined) return c.shellExcerpt.trim().split(/\s+/)[0] || "(empty command)";
  if (c?.deleteFileExcerpt !== undefined) return "delete_file";
  return "(unknown)";
}

/** The `top` keys with the most records of `outcome`, as horizontal bars. */
export function topChart(records: DecisionRecord[], outcome: string, title: string, top = 8): HTMLElement {
  const counts = new Map<string, number>();
  for (const r of records) if (r.outcome === outcome) counts.set(callKey(r), (counts.get(callKey(r)) ?? 0) + 1);
  const rows = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, top);
  if (rows.length === 0) return h("figure", { class: "chart" }, h("figcaption", {}, title), h("p", { class: "muted" }, "None yet."));
  const most = rows[0][1];
  const W = 300;
  const RH = 22;
  const svg = s(
    "svg",
    { viewBox: `0 0 ${W} ${rows.length * RH}`, role: "img", "aria-label": `${title}: ${rows.map(([k, c]) => `${k} ${c}`).join(", ")}`, class: "top-chart" },
    rows.map(([key, count], i) =>
      s(
        "g",
        {},
        s("rect", { x: 0, y: i * RH + 2, width: ((count / most) * W * 0.55).toFixed(1), height: RH - 6, class: `bar ${outcomeName(outcome).toLowerCase()}` }),
        s("text", { x: (count / most) * W * 0.55 + 4, y: i * RH + RH / 2 + 4, class: "label" }, `${count} ${key.length > 28 ? `${key.slice(0, 27)}…` : key}`),
      ),
    ),
  );
  return h("figure", { class: "chart" }, h("figcaption", {}, title), svg);
}
