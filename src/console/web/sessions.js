// The sessions page: live sessions with a kill each, and the recordings; refreshed from /console/sessions/list.

import { postJson } from "./request.js";
import { showTime } from "./time.js";

const REFRESH_MS = 2000;
const status = document.getElementById("sessions-status");
const liveBody = document.querySelector("#sessions tbody");
const liveNone = document.getElementById("sessions-none");
const recordingsBody = document.querySelector("#recordings tbody");
const recordingsNone = document.getElementById("recordings-none");

/** A cell with text (set as text, never parsed as HTML). */
function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function link(parent, href, text, id) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  if (id) a.id = id;
  parent.appendChild(a);
  return a;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function seconds(s) {
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

async function kill(session, button) {
  if (!window.confirm(`Kill session ${session.id} (${session.title}) and everything it started?`)) return;
  button.disabled = true;
  try {
    const done = await postJson(`/console/sessions/${encodeURIComponent(session.id)}/kill`);
    status.textContent = done.audited
      ? `Killed ${done.session} (${done.signal}); written to the audit log as ${done.by}.`
      : `Killed ${done.session} (${done.signal}), but the audit log could not take the record: see the relay's log.`;
    await refresh();
  } catch (err) {
    status.textContent = `Kill failed: ${err instanceof Error ? err.message : String(err)}`;
    button.disabled = false;
  }
}

function sessionRow(s) {
  const row = document.createElement("tr");
  row.id = `session-${s.id}`;
  row.dataset.id = s.id;
  // Ids, sizes, times and byte counts are read whole: they never break across lines.
  cell(row, s.id, "id nowrap");
  cell(row, s.kind, "nowrap");
  cell(row, s.owner === "" ? "(any client)" : s.owner);
  cell(row, s.title, "command");
  cell(row, s.size, "nowrap");
  cell(row, seconds(s.idle_s), "nowrap");
  cell(row, bytes(s.produced), "nowrap");
  cell(row, bytes(s.bytes_in), "nowrap");
  const actions = cell(row, "", "nowrap");
  if (s.closed) {
    actions.textContent = s.exit_code === null ? "ended" : `ended, exit ${s.exit_code}`;
  } else {
    link(actions, `/console/sessions/${encodeURIComponent(s.id)}/follow`, "Follow", `follow-${s.id}`);
    actions.appendChild(document.createTextNode(" "));
    const button = document.createElement("button");
    button.type = "button";
    button.className = "danger kill";
    button.textContent = "Kill";
    button.addEventListener("click", () => kill(s, button));
    actions.appendChild(button);
  }
  return row;
}

function recordingRow(r) {
  const row = document.createElement("tr");
  row.id = `recording-${r.name.replace(/\.cast$/, "")}`;
  const name = cell(row, "", "id nowrap");
  link(name, `/console/recordings/${encodeURIComponent(r.name)}`, r.name);
  cell(row, r.command ?? "(unreadable header)", "command");
  cell(row, r.width === null ? "" : `${r.width}x${r.height}`, "nowrap");
  cell(row, bytes(r.bytes), "nowrap");
  showTime(cell(row, "", "nowrap"), r.modified);
  const play = cell(row, "", "nowrap");
  link(
    play,
    `/console/recordings/${encodeURIComponent(r.name)}`,
    "Play",
    `play-${r.name.replace(/\.cast$/, "")}`,
  );
  return row;
}

async function refresh() {
  let data;
  try {
    const response = await fetch("/console/sessions/list", { credentials: "same-origin" });
    if (response.status === 401) {
      status.textContent = "Your login has expired; log in again.";
      return false;
    }
    data = await response.json();
    if (!response.ok) throw new Error(data?.error ? data.error : `HTTP ${response.status}`);
  } catch (err) {
    status.textContent = `Cannot list the sessions: ${err instanceof Error ? err.message : String(err)}`;
    return true;
  }
  liveBody.replaceChildren(...data.sessions.map(sessionRow));
  liveNone.hidden = data.sessions.length > 0;
  if (recordingsBody) {
    recordingsBody.replaceChildren(...data.recordings.map(recordingRow));
    recordingsNone.hidden = data.recordings.length > 0 || data.recordingsProblem !== null;
    if (data.recordingsProblem) status.textContent = data.recordingsProblem;
  }
  return true;
}

async function loop() {
  if (await refresh()) setTimeout(loop, REFRESH_MS);
}

void loop();
