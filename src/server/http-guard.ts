import type { IncomingMessage } from "node:http";
import { isIPv6 } from "node:net";
import { networkInterfaces, hostname as osHostname } from "node:os";
import { fail, isLoopbackHost, ok, type Result } from "../core/index.js";

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
 * are known to mean this server pass: loopback (checked apart, see
 * isAllowedHostname), the bind address, the issuer's host, and, on a
 * wildcard bind, this machine's own addresses and host name.
 */
export function allowedHostnames(input: HostPolicyInput): Set<string> {
  const names = new Set<string>();
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

/** A host name as `URL.hostname` spells it that this server answers to. */
function isAllowedHostname(hostname: string, allowed: ReadonlySet<string>): boolean {
  return allowed.has(hostname) || isLoopbackHost(hostname);
}

/** Why a request is turned away: `status` is 403 unless the request itself is malformed (400). */
interface GuardRefusal {
  message: string;
  status: 400 | 403;
}

/** How many `Host` header lines the request carried (Node keeps only the first in `headers`). */
function hostHeaderCount(req: IncomingMessage): number {
  let count = 0;
  const raw = req.rawHeaders ?? [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === "host") count++;
  return count;
}

/**
 * Host and Origin validation for every request. A missing or unknown Host
 * is refused; so is a second Host line, which Node would drop while a
 * proxy in front may have routed on it (RFC 9112 §3.2 requires a 400). An
 * Origin, when a browser sends one, must name an allowed host too (any
 * scheme and port of it).
 */
export function checkHostAndOrigin(
  req: IncomingMessage,
  allowed: ReadonlySet<string>,
): Result<void, GuardRefusal> {
  if (hostHeaderCount(req) > 1) return fail({ message: "Multiple Host headers", status: 400 });
  const host = req.headers.host;
  if (!host) return fail({ message: "Missing Host header", status: 403 });
  let hostname: string;
  try {
    hostname = new URL(`http://${host}`).hostname;
  } catch {
    return fail({ message: "Invalid Host header", status: 403 });
  }
  if (!isAllowedHostname(hostname, allowed)) return fail({ message: "Invalid Host header", status: 403 });
  const origin = req.headers.origin;
  if (origin !== undefined) {
    if (!URL.canParse(origin)) return fail({ message: "Invalid Origin header", status: 403 });
    const url = new URL(origin);
    if (
      (url.protocol !== "http:" && url.protocol !== "https:") ||
      !isAllowedHostname(url.hostname, allowed)
    ) {
      return fail({ message: "Invalid Origin header", status: 403 });
    }
  }
  return ok(undefined);
}
