import type { KnownHostsMode } from "../config/index.js";

/**
 * Everything a dial depends on, fully resolved. Two calls share a pooled
 * connection only when all of it is equal (ADR 0007).
 */
export interface SshTarget {
  /** What the caller named (alias, `user@host`, a jump hop): used in messages. */
  label: string;
  /** The host name or address dialled. */
  host: string;
  port: number;
  user: string;
  /** Private key files to offer, `~` expanded; empty = the agent and the default keys. */
  identityFiles: string[];
  /** true when the key files were named explicitly (per call or inventory): a missing one is an error. */
  identitiesRequired: boolean;
  mode: KnownHostsMode;
  /** Bastions, first hop first; the last one opens the tunnel to this target. */
  jump: SshTarget[];
}

function hopKey(t: SshTarget): unknown[] {
  return [t.user, t.host.toLowerCase(), t.port, t.identityFiles, t.mode];
}

/** The pool key: every connection-relevant parameter, the jump chain included. */
export function targetKey(t: SshTarget): string {
  return JSON.stringify([...hopKey(t), t.jump.map(hopKey)]);
}

/** `user@host:port`, the way messages name a dialled endpoint. */
export function endpointText(t: Pick<SshTarget, "user" | "host" | "port">): string {
  const host = t.host.includes(":") && !t.host.startsWith("[") ? `[${t.host}]` : t.host;
  return `${t.user}@${host}:${t.port}`;
}
