import { esc, type Nav, page } from "./pages.js";

/**
 * The sessions page; sessions.js fills both tables from /console/sessions/list
 * and refreshes them, setting every value as text, never as HTML.
 */
export function sessionsPage(csrf: string, who: string, recordDir: string, nav: Nav = {}): string {
  const recordings =
    recordDir === ""
      ? '<p id="recordings-off" class="muted">Sessions are not recorded (<code>RELAY_SHELL_SESSION_RECORD_DIR</code> is empty).</p>'
      : `<p class="muted">In <code>${esc(recordDir)}</code>, newest first.</p>
<table id="recordings" class="sessions">
<thead><tr><th>Recording</th><th>Command</th><th>Size</th><th>Bytes</th><th>Last written (local)</th><th></th></tr></thead>
<tbody></tbody>
</table>
<p id="recordings-none" class="muted" hidden>No recording yet.</p>`;
  return page({
    title: "Sessions",
    place: "sessions",
    nav,
    csrf,
    modules: ["sessions.js"],
    webauthn: false,
    who,
    body: `<section class="card wide">
<h2>Live sessions</h2>
<p class="muted">Every terminal of this relay, local and SSH, whoever owns it. Killing one sends SIGTERM and closes it with everything it started; the kill is written to the audit log as yours. The list refreshes every 2 seconds.</p>
<p id="sessions-status" role="status"></p>
<table id="sessions" class="sessions">
<thead><tr><th>Session</th><th>Kind</th><th>Owner</th><th>Command</th><th>Size</th><th>Idle</th><th>Output</th><th>Input</th><th></th></tr></thead>
<tbody></tbody>
</table>
<p id="sessions-none" class="muted" hidden>No live session.</p>
</section>
<section class="card wide">
<h2>Recordings</h2>
${recordings}
</section>`,
  });
}

export interface PlayerSource {
  kind: "recording" | "live";
  url: string;
}

/** A recording played back, or a live session followed read-only; player.js starts the player. */
export function playerPage(
  csrf: string,
  who: string,
  view: { title: string; heading: string; source: PlayerSource },
  nav: Nav = {},
): string {
  return page({
    title: view.title,
    nav,
    csrf,
    modules: ["player.js"],
    webauthn: false,
    player: true,
    who,
    body: `<nav class="crumbs"><a href="/console/sessions">Sessions</a> · ${esc(view.title)}</nav>
<section class="card">
<h2>${esc(view.heading)}</h2>
<p id="player-status" role="status" class="muted"></p>
<div id="player" data-kind="${esc(view.source.kind)}" data-src="${esc(view.source.url)}"></div>
</section>`,
  });
}
