import type { SessionKind } from "./types.js";

const PREFIX: Record<SessionKind, string> = { local: "sh-", ssh: "ssh-" };

/**
 * A terminal's id: its kind, 12 random hex digits and, when several relays share one state, `@`
 * and the name of the relay that holds its PTY (docs/sessions.md, docs/scaling.md). A terminal
 * lives in one process; the name says which, so a call that reaches another relay is told where.
 */
export const TERMINAL_ID = /^(?:sh|ssh)-[0-9a-f]{12}(?:@[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)?$/;

export function terminalId(kind: SessionKind, hex: string, instance: string): string {
  return `${PREFIX[kind]}${hex}${instance === "" ? "" : `@${instance}`}`;
}

/** The relay a well-formed id names; "" for an id without one (a relay that runs alone). */
export function holderOf(id: string): string {
  if (!TERMINAL_ID.test(id)) return "";
  const at = id.indexOf("@");
  return at < 0 ? "" : id.slice(at + 1);
}
