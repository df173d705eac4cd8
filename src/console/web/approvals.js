import { postJson, webauthn } from "./request.js";
import { showTime } from "./time.js";

const list = document.getElementById("requests");
const none = document.getElementById("none");
const listStatus = document.getElementById("list-status");
const sessions = document.getElementById("sessions");
const REFRESH_MS = 2000;

/** A child element with text (set as text, never parsed as HTML). */
function add(parent, tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  parent.appendChild(node);
  return node;
}

async function approve(id, card) {
  const status = card.querySelector(".status");
  const buttons = card.querySelectorAll("button");
  // The digest of the act this card shows: the relay refuses the approval when the request holds another.
  const digest = card.querySelector("input[name=digest]").value;
  for (const b of buttons) b.disabled = true;
  status.textContent = "Waiting for your passkey...";
  try {
    const path = `/console/approvals/${encodeURIComponent(id)}`;
    const optionsJSON = await postJson(`${path}/options`, { digest });
    const assertion = await webauthn().startAuthentication({ optionsJSON });
    const done = await postJson(`${path}/approve`, { digest, assertion });
    status.textContent = `Approved by ${done.by}. The call runs when the client issues it again.`;
    card.classList.add("decided");
  } catch (err) {
    status.textContent = `Approval failed: ${err instanceof Error ? err.message : String(err)}`;
    for (const b of buttons) b.disabled = false;
  }
}

async function deny(id, card) {
  const status = card.querySelector(".status");
  const reason = card.querySelector("input.reason").value;
  const buttons = card.querySelectorAll("button");
  for (const b of buttons) b.disabled = true;
  try {
    const done = await postJson(`/console/approvals/${encodeURIComponent(id)}/deny`, { reason });
    status.textContent = `Denied by ${done.by}.`;
    card.classList.add("decided");
  } catch (err) {
    status.textContent = `Denial failed: ${err instanceof Error ? err.message : String(err)}`;
    for (const b of buttons) b.disabled = false;
  }
}

function card(request) {
  const node = document.createElement("article");
  node.className = "request";
  node.id = `request-${request.id}`;
  node.dataset.id = request.id;
  node.dataset.digest = request.digest;
  add(node, "h3", `${request.tool} · tier ${request.tier} · request ${request.id}`);
  const times = add(node, "p", undefined, "muted");
  times.appendChild(document.createTextNode("asked "));
  showTime(add(times, "span"), request.created);
  times.appendChild(document.createTextNode(", expires "));
  showTime(add(times, "span"), request.expires);
  times.appendChild(document.createTextNode(" ("));
  const left = add(times, "span", `${request.expiresInSeconds}s`, "expires-in");
  left.dataset.at = request.expires;
  times.appendChild(document.createTextNode(" left)"));
  add(node, "p", "", "repeats muted").hidden = true;
  add(node, "pre", request.description, "act");
  const digestLine = add(node, "p", "digest: ", "digest muted");
  add(digestLine, "code", request.digest);
  const shown = add(node, "input");
  shown.type = "hidden";
  shown.name = "digest";
  shown.value = request.digest;
  const warning = add(
    node,
    "p",
    request.problem ? `Cannot be approved: ${request.problem}.` : "",
    "bad changed",
  );
  warning.hidden = !request.problem;
  const actions = add(node, "div", undefined, "actions");
  const approveButton = add(actions, "button", "Approve with my passkey", "approve");
  approveButton.type = "button";
  approveButton.disabled = request.problem !== null;
  const reason = add(actions, "input", undefined, "reason");
  reason.type = "text";
  reason.placeholder = "Reason for denying";
  reason.maxLength = 500;
  const denyButton = add(actions, "button", "Deny", "deny");
  denyButton.type = "button";
  add(node, "p", "", "status").setAttribute("role", "status");
  approveButton.addEventListener("click", () => approve(request.id, node));
  denyButton.addEventListener("click", () => deny(request.id, node));
  return node;
}

/**
 * One card per act: requests for the same act (same digest), from one session or several, are one
 * card, the newest, saying how often and by whom it was asked. An approval covers the act for
 * whichever session asks again, so a thousand copies of one act read as one.
 */
function collapse(requests) {
  const byDigest = new Map();
  for (const request of requests)
    byDigest.set(request.digest, [...(byDigest.get(request.digest) ?? []), request]);
  return [...byDigest.values()].map((same) => ({ ...same[same.length - 1], copies: same }));
}

/** How many requests each consent session has waiting: one session asking for many acts stands out. */
function renderSessions(requests) {
  const counts = new Map();
  for (const r of requests) {
    const seen = counts.get(r.session) ?? { client: r.client, count: 0 };
    seen.count += 1;
    counts.set(r.session, seen);
  }
  sessions.replaceChildren();
  for (const [session, { client, count }] of [...counts].sort((a, b) => b[1].count - a[1].count)) {
    const item = add(sessions, "li");
    add(item, "code", session, "session-id");
    item.appendChild(document.createTextNode(` (client ${client || "none"}): ${count} waiting`));
  }
}

/** Add new requests, drop the ones decided (here or elsewhere) or expired; keep what is being typed. */
function render(all) {
  renderSessions(all);
  const requests = collapse(all);
  const wanted = new Set(requests.map((r) => r.id));
  for (const node of Array.from(list.children)) {
    if (!wanted.has(node.dataset.id) && !node.classList.contains("decided")) node.remove();
    else if (node.classList.contains("decided") && !wanted.has(node.dataset.id)) {
      // A decision made here stays readable for one more refresh, then goes.
      if (node.dataset.seen === "1") node.remove();
      else node.dataset.seen = "1";
    }
  }
  for (const request of requests) {
    const existing = document.getElementById(`request-${request.id}`);
    if (existing) {
      const left = existing.querySelector(".expires-in");
      if (left) left.textContent = `${request.expiresInSeconds}s`;
      showRepeats(existing, request.copies);
      // The card keeps the act it showed; a request that holds another now is flagged, not redrawn.
      if (request.digest !== existing.dataset.digest) {
        const warning = existing.querySelector(".changed");
        warning.textContent =
          "This request now holds another act than the one shown here: an approval from this card is refused. Reload the page to read it again.";
        warning.hidden = false;
      }
    } else showRepeats(list.appendChild(card(request)), request.copies);
  }
  none.hidden = list.children.length > 0;
  const count = document.getElementById("nav-pending");
  if (count) {
    count.textContent = String(all.length);
    count.classList.toggle("waiting", all.length > 0);
    count.classList.remove("bad");
  }
}

/** The line of a card that says the same act waits more than once, and from which sessions. */
function showRepeats(node, copies) {
  const line = node.querySelector(".repeats");
  const others = copies.filter((r) => r.id !== node.dataset.id);
  line.hidden = others.length === 0;
  const from = new Set(copies.map((r) => r.session)).size;
  line.textContent =
    others.length === 0
      ? ""
      : `The same act waits ${copies.length} times, from ${from} session(s); also requests ${others
          .slice(-3)
          .map((r) => r.id)
          .join(", ")}${others.length > 3 ? ", …" : ""}.`;
}

async function refresh() {
  try {
    const answer = await fetch("/console/approvals/list", { credentials: "same-origin" });
    const data = await answer.json().catch(() => null);
    if (!answer.ok) {
      listStatus.textContent = `Cannot read the requests: ${data?.error ? data.error : `HTTP ${answer.status}`}`;
      if (answer.status === 401) window.location.assign("/console/login");
      return;
    }
    listStatus.textContent = "";
    render(data.requests);
  } catch (err) {
    listStatus.textContent = `Cannot read the requests: ${err instanceof Error ? err.message : String(err)}`;
  }
}

// refresh() reports its own failures on the page.
void refresh();
setInterval(refresh, REFRESH_MS);
