import { postJson, webauthn } from "./request.js";

const list = document.getElementById("requests");
const none = document.getElementById("none");
const listStatus = document.getElementById("list-status");
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
  for (const b of buttons) b.disabled = true;
  status.textContent = "Waiting for your passkey...";
  try {
    const optionsJSON = await postJson(`/console/approvals/${encodeURIComponent(id)}/options`);
    const response = await webauthn().startAuthentication({ optionsJSON });
    const done = await postJson(`/console/approvals/${encodeURIComponent(id)}/approve`, response);
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
  add(node, "h3", `${request.tool} · tier ${request.tier} · request ${request.id}`);
  const times = add(node, "p", undefined, "muted");
  times.appendChild(document.createTextNode(`asked ${request.created}, expires ${request.expires} (`));
  const left = add(times, "span", `${request.expiresInSeconds}s`, "expires-in");
  left.dataset.at = request.expires;
  times.appendChild(document.createTextNode(" left)"));
  add(node, "pre", request.description, "act");
  const actions = add(node, "div", undefined, "actions");
  const approveButton = add(actions, "button", "Approve with my passkey", "approve");
  approveButton.type = "button";
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

/** Add new requests, drop the ones decided (here or elsewhere) or expired; keep what is being typed. */
function render(requests) {
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
    } else list.appendChild(card(request));
  }
  none.hidden = list.children.length > 0;
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

refresh();
setInterval(refresh, REFRESH_MS);
