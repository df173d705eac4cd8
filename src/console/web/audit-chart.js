// Calls per minute by tier as a stacked bar chart, drawn as SVG elements (no library, no inline style).

import { localMinute } from "./time.js";

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 720;
const HEIGHT = 160;
const PAD = { left: 34, right: 8, top: 8, bottom: 22 };
/** Minutes shown: the last hour that has records. */
const MINUTES = 60;

function el(name, attrs, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Counts per UTC minute, oldest first: [{ minute, tiers: [t0, t1, t2, t3] }]. */
export function countByMinute(records) {
  const byMinute = new Map();
  for (const record of records) {
    const at = typeof record.ts === "string" ? Date.parse(record.ts) : Number.NaN;
    const tier = record.tier;
    if (Number.isNaN(at) || !Number.isInteger(tier) || tier < 0 || tier > 3) continue;
    const minute = Math.floor(at / 60_000) * 60_000;
    let counts = byMinute.get(minute);
    if (!counts) {
      counts = { minute, tiers: [0, 0, 0, 0] };
      byMinute.set(minute, counts);
    }
    counts.tiers[tier] += 1;
  }
  return [...byMinute.values()].sort((a, b) => a.minute - b.minute);
}

/** An <svg> of the counts of the last {@link MINUTES} minutes up to the latest one, a bar per minute stacked by tier. */
export function chartSvg(counts) {
  const svg = el("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    class: "chart",
    role: "img",
    "aria-label": "Calls per minute by tier",
  });
  if (counts.length === 0) {
    svg.append(
      el("text", { x: WIDTH / 2, y: HEIGHT / 2, "text-anchor": "middle", class: "axis" }, "No calls yet"),
    );
    return svg;
  }
  const last = counts[counts.length - 1].minute;
  const first = last - (MINUTES - 1) * 60_000;
  const shown = counts.filter((c) => c.minute >= first);
  const max = Math.max(1, ...shown.map((c) => c.tiers[0] + c.tiers[1] + c.tiers[2] + c.tiers[3]));
  const plotW = WIDTH - PAD.left - PAD.right;
  const plotH = HEIGHT - PAD.top - PAD.bottom;
  const barW = plotW / MINUTES;
  svg.append(
    el("line", {
      x1: PAD.left,
      y1: PAD.top + plotH,
      x2: WIDTH - PAD.right,
      y2: PAD.top + plotH,
      class: "axis",
    }),
  );
  svg.append(
    el("text", { x: PAD.left - 4, y: PAD.top + 10, "text-anchor": "end", class: "axis" }, String(max)),
  );
  svg.append(el("text", { x: PAD.left - 4, y: PAD.top + plotH, "text-anchor": "end", class: "axis" }, "0"));
  const label = localMinute;
  const utc = (ms) => `${new Date(ms).toISOString().slice(11, 16)} UTC`;
  svg.append(el("text", { x: PAD.left, y: HEIGHT - 6, class: "axis" }, label(first)));
  svg.append(
    el(
      "text",
      { x: WIDTH - PAD.right, y: HEIGHT - 6, "text-anchor": "end", class: "axis" },
      `${label(last)} local`,
    ),
  );
  for (let tier = 0; tier < 4; tier++) {
    const x = WIDTH - PAD.right - (4 - tier) * 56;
    svg.append(el("rect", { x, y: PAD.top, width: 10, height: 10, class: `tier${tier}` }));
    svg.append(el("text", { x: x + 14, y: PAD.top + 9, class: "axis" }, `tier ${tier}`));
  }
  for (const c of shown) {
    const x = PAD.left + ((c.minute - first) / 60_000) * barW;
    let y = PAD.top + plotH;
    c.tiers.forEach((n, tier) => {
      if (n === 0) return;
      const h = (n / max) * plotH;
      y -= h;
      const bar = el("rect", { x: x + 1, y, width: Math.max(1, barW - 2), height: h, class: `tier${tier}` });
      bar.append(el("title", {}, `${label(c.minute)} (${utc(c.minute)}), tier ${tier}: ${n}`));
      svg.append(bar);
    });
  }
  return svg;
}
