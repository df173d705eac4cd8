import { isIPv6 } from "node:net";
import { RelayError } from "../core/index.js";

export type ForwardKind = "local" | "remote" | "dynamic";

export interface ForwardDestination {
  /** Host name or address, IPv6 without its brackets. */
  host: string;
  port: number;
}

/** A parsed `ssh_forward` spec (docs/wire-contract.md §2.5, IPv6 in brackets per ADR 0008). */
export interface ForwardSpec {
  kind: ForwardKind;
  /** The spec as given, trimmed: what the success text and the listing echo. */
  text: string;
  /** 0 = ephemeral; the real port is known once the listener is open. */
  listenPort: number;
  /** null for a dynamic (SOCKS) forward: the client names the destination per connection. */
  dest: ForwardDestination | null;
}

const KINDS: Record<string, ForwardKind> = { L: "local", R: "remote", D: "dynamic" };
/** Long enough for any host name (253) and bracketed address; bounds the work on absurd input. */
const MAX_SPEC = 600;
const PORT = /^[0-9]{1,5}$/;
const HOST_NAME = /^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})$/;

function invalid(letter: "L" | "R" | "D"): RelayError {
  // The messages never echo the spec, so they stay short whatever the caller sent.
  const expected = letter === "D" ? "D:<listen_port>" : `${letter}:<listen_port>:<dest_host>:<dest_port>`;
  return new RelayError("ValueError", `invalid ${letter} forward spec; expected ${expected}`);
}

function port(text: string, min: number): number | null {
  if (!PORT.test(text)) return null;
  const n = Number(text);
  return n >= min && n <= 65535 ? n : null;
}

function destHost(text: string): string | null {
  if (text.startsWith("[") && text.endsWith("]")) {
    const inner = text.slice(1, -1);
    return isIPv6(inner) ? inner : null;
  }
  return HOST_NAME.test(text) ? text : null;
}

/**
 * Parse `L:<listen_port>:<dest_host>:<dest_port>`, `R:…` (same shape) or
 * `D:<listen_port>`; the kind letter is case-insensitive. Throws a
 * ValueError with the contract's message before anything is dialled.
 */
export function parseForwardSpec(raw: string): ForwardSpec {
  const text = raw.trim();
  const colon = text.indexOf(":");
  const letter = (colon === -1 ? "" : text.slice(0, colon)).toUpperCase();
  const kind = KINDS[letter];
  if (kind === undefined) throw new RelayError("ValueError", "forward spec must start with L:, R: or D:");
  const typed = letter as "L" | "R" | "D";
  if (text.length > MAX_SPEC) throw invalid(typed);
  const rest = text.slice(colon + 1);

  if (kind === "dynamic") {
    const listenPort = port(rest, 0);
    if (listenPort === null) throw invalid(typed);
    return { kind, text, listenPort, dest: null };
  }
  // `<port>:<host>:<port>`, where only a bracketed host may itself contain colons.
  const match = /^([^:]*):(\[[^\]]*\]|[^:[\]]*):([^:]*)$/.exec(rest);
  if (!match) throw invalid(typed);
  const listenPort = port(match[1] ?? "", 0);
  const host = destHost(match[2] ?? "");
  const destPort = port(match[3] ?? "", 1);
  if (listenPort === null || host === null || destPort === null) throw invalid(typed);
  return { kind, text, listenPort, dest: { host, port: destPort } };
}

/** `host:port`, with brackets around an IPv6 address. */
export function destinationText(dest: ForwardDestination): string {
  return dest.host.includes(":") ? `[${dest.host}]:${dest.port}` : `${dest.host}:${dest.port}`;
}
