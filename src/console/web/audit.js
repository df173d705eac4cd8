// The live audit page: rows from /console/audit/events (server-sent events), filters, chart, detail.

import { chartSvg, countByMinute } from "./audit-chart.js";
import { showTime } from "./time.js";

/** Rows kept on the page; older ones leave from the bottom. */
const MAX_ROWS = 1000;
/** Records kept for the chart (an hour at a steady 8 calls a second). */
const MAX_CHART = 30_000;
/** Characters of a command shown in its row; the whole of it is in the row's title and its detail. */
const COMMAND_CHARS = 120;
/** The argument that says what a call did, by the tools' own names for it, most telling first. */
const MAIN_ARGUMENTS = [
  "command",
  "script",
  "line",
  "data",
  "argv",
  "text",
  "remote_path",
  "local_path",
  "path",
  "spec",
  "destination",
  "profile",
  "session_id",
];

/** Controls, and the marks that hide text or change its direction (as the consent text escapes them). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

const rows = document.querySelector("#audit-rows tbody");
const status = document.getElementById("audit-status");
const chart = document.getElementById("audit-chart");
const form = document.getElementById("filters");
const detail = document.getElementById("audit-detail");

let source = null;
let charted = [];
let chartTimer = null;

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function hostOf(record) {
  const args = record.args;
  if (!args || typeof args !== "object") return "";
  if (typeof args.host === "string") return args.host;
  if (Array.isArray(args.hosts)) return args.hosts.filter((h) => typeof h === "string").join(", ");
  return typeof args.hosts === "string" ? args.hosts : "";
}

/** What the call ran or acted on: the tool's main argument, on one line ("" when it has none). */
export function commandOf(record) {
  const args = record.args;
  if (!args || typeof args !== "object") return "";
  for (const key of MAIN_ARGUMENTS) {
    const value = args[key];
    if (value === undefined || value === null || value === "") continue;
    const whole = Array.isArray(value)
      ? value.map(String).join(" ")
      : typeof value === "string"
        ? value
        : JSON.stringify(value);
    // Line breaks, other controls and direction marks are shown, never acted on: the row stays one line
    // and reads in the order it was written.
    return whole.replace(/\r?\n/g, " ⏎ ").replace(UNSAFE, "�");
  }
  return "";
}

/** A cell holding at most COMMAND_CHARS of `command`, the whole of it on hover. */
function commandCell(command) {
  const chars = Array.from(command);
  const td = cell(
    chars.length > COMMAND_CHARS ? `${chars.slice(0, COMMAND_CHARS - 1).join("")}…` : command,
    "command",
  );
  if (chars.length > COMMAND_CHARS) td.title = command;
  return td;
}

/** "verified", "broken at line N", "unchained" or "unreadable", and its CSS class. */
export function chainText(item) {
  if (item.record === null) return ["unreadable", "bad"];
  const chain = item.chain;
  if (chain.status === "verified") return ["verified", "ok"];
  if (chain.status === "broken") return [`broken at line ${chain.brokenAt}`, "bad"];
  return ["unchained", "muted"];
}

function text(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function showDetail(item) {
  const where = document.getElementById("audit-detail-where");
  const [chain] = chainText(item);
  const reason = item.chain.status === "broken" ? ` (${item.chain.reason})` : "";
  where.textContent = `Line ${item.line} of the file, chain: ${chain}${reason}`;
  const table = document.getElementById("audit-detail-fields");
  table.replaceChildren();
  const fields = item.record === null ? [["unreadable", item.unreadable]] : Object.entries(item.record);
  for (const [name, value] of fields) {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    th.textContent = name;
    const td = document.createElement("td");
    const pre = document.createElement("pre");
    pre.textContent = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    td.append(pre);
    tr.append(th, td);
    table.append(tr);
  }
  detail.showModal();
}

function addRow(item) {
  const r = item.record ?? {};
  const tr = document.createElement("tr");
  tr.dataset.line = String(item.line);
  tr.tabIndex = 0;
  const [chain, chainClass] = chainText(item);
  tr.append(
    showTime(cell(""), r.ts),
    cell(text(r.tool)),
    commandCell(commandOf(r)),
    cell(text(r.tier)),
    cell(item.outcome ?? "", item.outcome === "ok" ? "ok" : item.outcome === "challenge" ? "warn" : "bad"),
    cell(r.denied === true ? "yes" : r.denied === false ? "no" : ""),
    cell(text(r.client_id)),
    cell(hostOf(r)),
    cell(text(r.action)),
    cell(chain, `chain ${chainClass}`),
  );
  tr.addEventListener("click", () => showDetail(item));
  tr.addEventListener("keydown", (event) => {
    if (event.key === "Enter") showDetail(item);
  });
  rows.prepend(tr);
  while (rows.rows.length > MAX_ROWS) rows.deleteRow(rows.rows.length - 1);
  if (item.record !== null) {
    charted.push(item.record);
    if (charted.length > MAX_CHART) charted = charted.slice(-MAX_CHART);
    // At hundreds of records a second the chart is redrawn a few times a second, not per record.
    if (chartTimer === null) chartTimer = setTimeout(drawChart, 250);
  }
}

function drawChart() {
  chartTimer = null;
  chart.replaceChildren(chartSvg(countByMinute(charted)));
}

function query() {
  const params = new URLSearchParams();
  for (const name of ["tool", "tier", "outcome", "denied", "client", "host"]) {
    const value = document.getElementById(`f-${name}`).value.trim();
    if (value !== "") params.set(name, value);
  }
  for (const name of ["since", "until"]) {
    const value = document.getElementById(`f-${name}`).value;
    // datetime-local is the browser's local time: sent as an absolute instant.
    if (value !== "") params.set(name, new Date(value).toISOString());
  }
  return params.toString();
}

async function connect() {
  source?.close();
  rows.replaceChildren();
  charted = [];
  drawChart();
  const q = query();
  const url = `/console/audit/events${q === "" ? "" : `?${q}`}`;
  // EventSource hides the answer of a refused stream: ask once, to show why.
  const probe = await fetch(url, { credentials: "same-origin", headers: { accept: "text/event-stream" } });
  if (!probe.ok) {
    let message = `HTTP ${probe.status}`;
    try {
      message = (await probe.json()).error ?? message;
    } catch {}
    status.textContent = `Not following: ${message}`;
    status.className = "bad";
    return;
  }
  probe.body?.cancel();
  status.textContent = "Loading…";
  status.className = "muted";
  source = new EventSource(url);
  // Every stream, a reconnection too, starts with the file's last records again.
  source.addEventListener("open", () => {
    rows.replaceChildren();
    charted = [];
    drawChart();
  });
  source.addEventListener("record", (event) => addRow(JSON.parse(event.data)));
  source.addEventListener("live", () => {
    status.textContent = "Live: new records appear at the top.";
    status.className = "ok";
  });
  source.addEventListener("reset", (event) => {
    const reset = JSON.parse(event.data);
    status.textContent = `The audit file was ${reset.reason}; following the new file.`;
  });
  source.addEventListener("dropped", (event) => {
    status.textContent = `This page fell behind: ${JSON.parse(event.data).lines} lines were not shown.`;
    status.className = "warn";
  });
  source.addEventListener("problem", (event) => {
    status.textContent = `Cannot read the audit file: ${JSON.parse(event.data).message}`;
    status.className = "bad";
  });
  source.addEventListener("expired", () => {
    source.close();
    status.textContent = "Logged out: log in again to follow the log.";
    status.className = "bad";
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CONNECTING) {
      status.textContent = "Reconnecting…";
      status.className = "warn";
    }
  });
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  void connect();
});
window.addEventListener("pagehide", () => source?.close());
void connect();
