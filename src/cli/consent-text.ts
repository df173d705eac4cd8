import {
  actDigest,
  actSummary,
  type ConsentLease,
  type ConsentRequest,
  type ConsentSession,
  describeAct,
} from "../consent/index.js";

/*
 * Characters a terminal may act on or that hide text from a reader: C0 and C1
 * controls, DEL, bidirectional overrides and isolates, zero-width characters,
 * line and paragraph separators. An act is proposed by the model, so what the
 * operator reads before approving must show these, not obey them.
 */
function unsafe(cp: number): boolean {
  return (
    cp <= 0x08 ||
    (cp >= 0x0b && cp <= 0x1f) ||
    (cp >= 0x7f && cp <= 0x9f) ||
    cp === 0xad ||
    cp === 0x61c ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x2028 && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2069) ||
    cp === 0xfeff
  );
}

/** `text` with every unsafe character written as `\u{XXXX}`; tabs and newlines kept. */
export function visible(text: string): string {
  let out = "";
  for (const c of text) {
    const cp = c.codePointAt(0) ?? 0;
    out += unsafe(cp) ? `\\u{${cp.toString(16).padStart(4, "0")}}` : c;
  }
  return out;
}

/** One line of `text`: newlines and tabs shown as escapes too. */
function oneLine(text: string): string {
  return visible(text).replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(/\r/g, "\\r");
}

/** The act as a human reads it before approving: the same text the relay answered the call with. */
function describeRequest(request: ConsentRequest, now: number): string {
  return describeAct({
    id: request.id,
    act: request.act,
    basis: request.basis,
    expiresInSeconds: Math.max(0, Math.ceil((request.expiresAt - now) / 1000)),
    session: request.session,
    clientId: request.clientId,
  });
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.ceil(ms / 1000))}s`;
}

function short(id: string): string {
  return oneLine(id.length > 12 ? `${id.slice(0, 12)}…` : id);
}

/** One line of `consent list`. */
export function requestLine(request: ConsentRequest, now: number): string {
  return [
    request.id,
    request.status.padEnd(8),
    oneLine(request.act.tool),
    `tier ${request.act.tier}`,
    `expires in ${seconds(request.expiresAt - now)}`,
    `session ${short(request.session)}`,
    actSummary(request.act),
  ].join("  ");
}

/**
 * The lines of `consent list`: the live requests by consent session, each session with its
 * counts, and repeats of one act (same digest) in a session on one line with their count, so
 * one act among many is not lost in a long list.
 */
export function listLines(requests: ConsentRequest[], now: number): string[] {
  const sessions = new Map<string, ConsentRequest[]>();
  for (const r of requests) sessions.set(r.session, [...(sessions.get(r.session) ?? []), r]);
  const lines: string[] = [];
  for (const [session, own] of sessions) {
    const pending = own.filter((r) => r.status === "pending").length;
    lines.push(
      `session ${oneLine(session)}  client ${oneLine(own[0]?.clientId ?? "")}  ${pending} pending, ${own.length - pending} approved`,
    );
    const acts = new Map<string, ConsentRequest[]>();
    for (const r of own) {
      const key = `${r.status}:${r.actDigest}`;
      acts.set(key, [...(acts.get(key) ?? []), r]);
    }
    for (const same of acts.values()) {
      const newest = same[same.length - 1] as ConsentRequest;
      const more =
        same.length > 1
          ? `  (x${same.length}, also ${same
              .slice(0, -1)
              .map((r) => r.id)
              .slice(-3)
              .join(" ")}${same.length > 4 ? " …" : ""})`
          : "";
      lines.push(`  ${requestLine(newest, now)}${more}`);
    }
  }
  return lines;
}

/** Everything `consent show` prints about a request, payload excluded. */
export function showRequest(request: ConsentRequest, now: number): string {
  // The description names the request, the act and who asked; the state comes first.
  const lines = [
    `status:   ${request.status}`,
    `created:  ${new Date(request.createdAt).toISOString()}`,
    `expires:  ${new Date(request.expiresAt).toISOString()} (${
      request.expiresAt > now ? `in ${seconds(request.expiresAt - now)}` : "expired"
    })`,
    describeRequest(request, now),
    // What `approve --yes --digest` must be given: the digest of the act shown above.
    `digest:   ${actDigest(request.act)}`,
  ];
  if (request.approval !== undefined) {
    lines.push(
      `approved: ${new Date(request.approval.at).toISOString()} via ${request.approval.channel} by ${oneLine(request.approval.claimedSigner)}`,
    );
  }
  if (request.denial !== undefined) {
    lines.push(
      `denied:   ${new Date(request.denial.at).toISOString()} by ${oneLine(request.denial.by)}: ${oneLine(request.denial.reason)}`,
    );
  }
  if (request.consumedAt !== undefined) lines.push(`used:     ${new Date(request.consumedAt).toISOString()}`);
  return lines.join("\n");
}

/** The lines of `consent leases`: consent sessions, then leases, each with its state now. */
export function leaseLines(sessions: ConsentSession[], leases: ConsentLease[], now: number): string[] {
  const lines = ["consent sessions:"];
  if (sessions.length === 0) lines.push("  (none)");
  for (const s of sessions) {
    const state = s.endedAt === undefined ? "live" : "ended";
    lines.push(
      `  ${oneLine(s.id)}  ${state}  client ${oneLine(s.clientId)}  last seen ${seconds(now - s.lastSeenAt)} ago`,
    );
  }
  lines.push("leases:");
  if (leases.length === 0) lines.push("  (none)");
  for (const l of leases) {
    const state = l.revoked
      ? "revoked"
      : l.remaining === 0
        ? "spent"
        : l.expiresAt <= now
          ? "expired"
          : `live, expires in ${seconds(l.expiresAt - now)}`;
    lines.push(
      `  ${l.id}  session ${short(l.session)}  ${l.mode}  ${l.remaining} reads left  ${state}  opened by ${oneLine(l.openedBy)}`,
    );
  }
  return lines;
}
