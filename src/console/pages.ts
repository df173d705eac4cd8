/** What the first page shows: the relay's posture, read when the page is rendered. */
export interface Posture {
  mode: string;
  /** What the mode admits, in one sentence. */
  modeText: string;
  denyList: boolean;
  allowList: boolean;
  broker: boolean;
  consent: { enabled: boolean; leaseMode: string; pending: number | null };
  audit: {
    path: string;
    chain: boolean;
    failClosed: boolean;
    degraded: boolean;
    degradedReason: string;
  };
  warnings: string[];
  /** Every policy in force (docs/policy.md), the default first: never the text of a pattern. */
  policies: PolicySummary[];
}

/** One policy as the posture page lists it. */
interface PolicySummary {
  name: string;
  source: string;
  mode: string;
  deny: number;
  allow: number;
  consent: boolean;
  leaseMode: string;
  confirmTier3: boolean;
  maxTier: number;
}

/** The table of the policies in force: which rule governs which hosts is in docs/policy.md. */
function policiesTable(policies: readonly PolicySummary[]): string {
  const rows = policies.map(
    (p) =>
      `<tr><td><code>${esc(p.name)}</code></td><td><code>${esc(p.source)}</code></td><td><code>${esc(p.mode)}</code></td>` +
      `<td>${p.deny}</td><td>${p.allow}</td><td>${p.consent ? `on (${esc(p.leaseMode)})` : "off"}</td>` +
      `<td>${p.confirmTier3 ? "on" : "off"}</td><td>${p.maxTier}</td></tr>`,
  );
  return `<table class="policies" id="posture-policies"><tr><th>Policy</th><th>Source</th><th>Mode</th><th>Deny patterns</th><th>Allow patterns</th><th>Consent</th><th>Tier-3 confirmation</th><th>Max tier</th></tr>
${rows.join("\n")}
</table>`;
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text for HTML content and quoted attributes. */
export function esc(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ESCAPES[ch] ?? ch);
}

/** The header's navigation of a logged-in page. */
export interface Nav {
  /** Consent requests waiting for a decision (null: the store cannot be read); absent without an approvals page. */
  pending?: number | null;
}

type Place = "posture" | "approvals" | "audit" | "sessions";

export interface Layout {
  title: string;
  /** The entry of the navigation this page is (none for the player pages, which sit under Sessions). */
  place?: Place;
  nav?: Nav;
  csrf: string;
  /** Module scripts of the page (names under /console/assets/). */
  modules: string[];
  /** The UMD WebAuthn bundle goes before the modules that use it. */
  webauthn: boolean;
  /** The terminal player's bundle and stylesheet (the recording and live-follow pages). */
  player?: boolean;
  /** The logged-in passkey, for the header and its log-out form. */
  who: string | null;
  body: string;
}

/** The links between the console's pages, with the count of requests waiting for the operator. */
function navigation(layout: Layout): string {
  const link = (place: Place, href: string, label: string, extra = "") =>
    `<a id="nav-${place}" href="${href}"${layout.place === place ? ' aria-current="page"' : ""}>${esc(label)}${extra}</a>`;
  const pending = layout.nav?.pending;
  const approvals =
    pending === undefined
      ? ""
      : link(
          "approvals",
          "/console/approvals",
          "Approvals",
          pending === null
            ? ' <span id="nav-pending" class="count bad" title="the consent store cannot be read">?</span>'
            : ` <span id="nav-pending" class="count${pending > 0 ? " waiting" : ""}" title="requests waiting for a decision">${pending}</span>`,
        );
  return `<nav class="top" aria-label="Console">${[
    link("posture", "/console", "Posture"),
    approvals,
    link("audit", "/console/audit", "Live audit"),
    link("sessions", "/console/sessions", "Sessions"),
  ]
    .filter((a) => a !== "")
    .join("")}</nav>`;
}

export function page(layout: Layout): string {
  const scripts = [
    ...(layout.webauthn ? ['<script src="/console/assets/webauthn.js"></script>'] : []),
    ...(layout.player ? ['<script src="/console/assets/asciinema-player.js"></script>'] : []),
    ...layout.modules.map((m) => `<script type="module" src="/console/assets/${esc(m)}"></script>`),
  ].join("\n");
  const who =
    layout.who === null
      ? ""
      : `<span class="who">${esc(layout.who)}</span>
<form class="inline" method="post" action="/console/logout"><input type="hidden" name="csrf" value="${esc(layout.csrf)}"><button class="plain" type="submit">Log out</button></form>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${esc(layout.csrf)}">
<title>${esc(layout.title)} · relay-shell</title>
<link rel="stylesheet" href="/console/assets/console.css">
${layout.player ? '<link rel="stylesheet" href="/console/assets/asciinema-player.css">\n' : ""}${scripts}
</head>
<body>
<header><h1>relay-shell console</h1>${layout.who === null ? "" : navigation(layout)}${who}</header>
<main>
${layout.body}
</main>
</body>
</html>
`;
}

export function loginPage(csrf: string): string {
  return page({
    title: "Log in",
    csrf,
    modules: ["login.js"],
    webauthn: true,
    who: null,
    body: `<section class="card">
<h2>Log in with your passkey</h2>
<p class="muted">Only passkeys the operator enrolled in the relay's passkeys file can log in.</p>
<button id="login" type="button">Log in with a passkey</button>
<p id="status" role="status"></p>
</section>`,
  });
}

export function enrolPage(csrf: string, name: string): string {
  return page({
    title: "Enrol a passkey",
    csrf,
    modules: ["enrol.js"],
    webauthn: true,
    who: null,
    body: `<section class="card">
<h2>Enrol the passkey "${esc(name)}"</h2>
<p class="muted">Type the one-time code <code>relay-shell console enrol</code> printed on your terminal, then confirm with your authenticator.</p>
<form id="enrol">
<input id="code" type="text" autocomplete="one-time-code" spellcheck="false" required>
<button type="submit">Enrol</button>
</form>
<p id="status" role="status"></p>
</section>`,
  });
}

function state(
  on: boolean,
  onText: string,
  offText: string,
  offClass: "warn" | "bad" | "muted" = "warn",
): string {
  return on ? `<span class="ok">${esc(onText)}</span>` : `<span class="${offClass}">${esc(offText)}</span>`;
}

function row(label: string, value: string, id: string): string {
  return `<tr id="${id}"><th>${esc(label)}</th><td>${value}</td></tr>`;
}

export function posturePage(csrf: string, who: string, p: Posture, nav: Nav = {}): string {
  const consent = p.consent.enabled
    ? `<span class="ok">on</span> (leases: ${esc(p.consent.leaseMode)}; pending requests: ${
        p.consent.pending === null
          ? '<span class="bad">unknown: the store cannot be read</span>'
          : String(p.consent.pending)
      })`
    : '<span class="warn">off</span>';
  const audit = p.audit.degraded
    ? `<span class="bad">degraded: ${esc(p.audit.degradedReason)}</span>`
    : '<span class="ok">writing</span>';
  const warnings =
    p.warnings.length === 0
      ? '<p class="muted">No configuration warnings. (No warning does not mean secure.)</p>'
      : `<ul class="warnings">${p.warnings.map((w) => `<li>${esc(w)}</li>`).join("")}</ul>`;
  return page({
    title: "Posture",
    place: "posture",
    nav,
    csrf,
    modules: [],
    webauthn: false,
    who,
    body: `<section class="card">
<h2>Posture</h2>
<table class="posture">
${row("Policy mode", `<code>${esc(p.mode)}</code>`, "posture-mode")}
${row("Admits", esc(p.modeText), "posture-mode-text")}
${row("Deny list", state(p.denyList, "on", "off"), "posture-deny")}
${row("Allow list", state(p.allowList, "on", "off", "muted"), "posture-allow")}
${row("Tier-3 confirmation broker", state(p.broker, "on", "off"), "posture-broker")}
${row("Human consent", `${consent}${approvalsLink(p)}`, "posture-consent")}
${row("Audit log", `<code>${esc(p.audit.path)}</code>`, "posture-audit-path")}
${row("Audit state", audit, "posture-audit-state")}
${row("Audit hash chain", state(p.audit.chain, "on", "off"), "posture-audit-chain")}
${row("Audit fail-closed", state(p.audit.failClosed, "on", "off", "bad"), "posture-audit-fail-closed")}
</table>
</section>
<section class="card" id="policies">
<h2>Policies in force</h2>
${policiesTable(p.policies)}
</section>
<section class="card" id="warnings">
<h2>Configuration warnings</h2>
${warnings}
</section>`,
  });
}

/** The live audit page; its rows, chart and detail are drawn by audit.js from /console/audit/events. */
export function auditPage(csrf: string, who: string, auditPath: string, nav: Nav = {}): string {
  const select = (id: string, label: string, options: string[]) =>
    `<label>${esc(label)} <select id="${id}" name="${id}"><option value="">any</option>${options
      .map((o) => `<option value="${esc(o)}">${esc(o)}</option>`)
      .join("")}</select></label>`;
  const text = (id: string, label: string, type = "text") =>
    `<label>${esc(label)} <input id="${id}" name="${id}" type="${type}" spellcheck="false"></label>`;
  return page({
    title: "Audit",
    place: "audit",
    nav,
    csrf,
    modules: ["audit.js"],
    webauthn: false,
    who,
    body: `<section class="card">
<h2>Live audit</h2>
<p class="muted">Following <code>${esc(auditPath)}</code>: the last records, then each one as it is written, by this relay or any other.</p>
<form id="filters" class="filters">
${text("f-tool", "Tool")}
${select("f-tier", "Tier", ["0", "1", "2", "3"])}
${select("f-outcome", "Outcome", ["ok", "denied", "error", "challenge"])}
${select("f-denied", "Denied", ["true", "false"])}
${text("f-client", "Client")}
${text("f-host", "Host")}
${text("f-since", "From", "datetime-local")}
${text("f-until", "Until", "datetime-local")}
<button type="submit">Apply</button>
</form>
<p id="audit-status" role="status" class="muted">Connecting…</p>
</section>
<section class="card">
<h2>Calls per minute by tier</h2>
<div id="audit-chart"></div>
</section>
<section class="card wide">
<table id="audit-rows" class="audit">
<thead><tr><th>Time (local)</th><th>Tool</th><th>Command</th><th>Tier</th><th>Outcome</th><th>Denied</th><th>Client</th><th>Host</th><th>Action</th><th>Chain</th></tr></thead>
<tbody></tbody>
</table>
</section>
<dialog id="audit-detail"><h2>Record</h2><p id="audit-detail-where" class="muted"></p><table id="audit-detail-fields" class="detail"></table><form method="dialog"><button type="submit">Close</button></form></dialog>`,
  });
}

/** The way from the posture to the approvals, where consent is on. */
function approvalsLink(p: Posture): string {
  return p.consent.enabled ? ' <a id="approvals-link" href="/console/approvals">Approvals</a>' : "";
}

/**
 * The pending consent requests, filled and refreshed by approvals.js from
 * the list endpoint: every value is set as text in the browser, never as HTML.
 */
export function approvalsPage(csrf: string, who: string, nav: Nav = {}): string {
  return page({
    title: "Approvals",
    place: "approvals",
    nav,
    csrf,
    modules: ["approvals.js"],
    webauthn: true,
    who,
    body: `<section class="card">
<h2>Pending consent requests</h2>
<p class="muted">Read the whole act before approving: your passkey signs exactly what is shown here. The list refreshes every 2 seconds.</p>
<p id="list-status" role="status"></p>
<ul id="sessions" class="muted"></ul>
<div id="requests"></div>
<p id="none" class="muted" hidden>No request is waiting.</p>
</section>`,
  });
}
