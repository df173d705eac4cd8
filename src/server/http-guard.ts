import type { IncomingMessage } from "node:http";
import { isIPv6 } from "node:net";
import { networkInterfaces, hostname as osHostname } from "node:os";

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"]);

/** The host part as `URL.hostname` spells it (lower case, IPv6 in brackets), or null. */
export function normalizeHostname(host: string): string | null {
  const text = host.trim();
  if (text === "") return null;
  const withBrackets = isIPv6(text) ? `[${text}]` : text;
  try {
    return new URL(`http://${withBrackets}`).hostname;
  } catch {
    return null;
  }
}

export interface HostPolicyInput {
  /** RELAY_SHELL_HTTP_HOST */
  bindHost: string;
  /** RELAY_SHELL_AUTH_ISSUER: the public name a reverse proxy forwards. */
  issuer: string;
}

/**
 * Host names a request may address (port-agnostic). A DNS-rebinding page
 * reaches the listener under the attacker's own name, so only names that
 * are known to mean this server pass: the loopback names, the bind address,
 * the issuer's host, and, on a wildcard bind, this machine's own addresses
 * and host name.
 */
export function allowedHostnames(input: HostPolicyInput): Set<string> {
  const names = new Set<string>(["localhost", "127.0.0.1", "[::1]"]);
  const add = (value: string) => {
    const name = normalizeHostname(value);
    if (name) names.add(name);
  };
  if (WILDCARDS.has(input.bindHost.trim())) {
    for (const list of Object.values(networkInterfaces())) {
      for (const entry of list ?? []) add(entry.address.split("%")[0] ?? "");
    }
    add(osHostname());
  } else {
    add(input.bindHost);
  }
  if (URL.canParse(input.issuer)) add(new URL(input.issuer).hostname);
  return names;
}

export type GuardVerdict = { ok: true } | { ok: false; message: string };

/**
 * Host and Origin validation for every request. A missing or unknown Host
 * is refused; an Origin, when a browser sends one, must name an allowed
 * host too (any scheme and port of it).
 */
export function checkHostAndOrigin(req: IncomingMessage, allowed: ReadonlySet<string>): GuardVerdict {
  const host = req.headers.host;
  if (!host) return { ok: false, message: "Missing Host header" };
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return { ok: false, message: "Invalid Host header" };
  }
  if (!allowed.has(hostname)) return { ok: false, message: "Invalid Host header" };
  const origin = req.headers.origin;
  if (origin !== undefined) {
    if (!URL.canParse(origin)) return { ok: false, message: "Invalid Origin header" };
    const url = new URL(origin);
    if ((url.protocol !== "http:" && url.protocol !== "https:") || !allowed.has(url.hostname)) {
      return { ok: false, message: "Invalid Origin header" };
    }
  }
  return { ok: true };
}
