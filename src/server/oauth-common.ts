import { createHash, timingSafeEqual } from "node:crypto";
import { isLoopbackHost } from "../core/index.js";

/** The only scope there is: it is the default, and every MCP request needs it (docs/wire-contract.md §9.2). */
export const MCP_SCOPE = "mcp:tools";

export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "unsupported_response_type"
  | "invalid_scope"
  | "invalid_target"
  | "invalid_client_metadata"
  | "invalid_redirect_uri"
  | "server_error";

/** An OAuth error answer: a code from the RFCs and a description that never carries a secret. */
export class OAuthFailure extends Error {
  readonly error: OAuthErrorCode;
  readonly status: number;

  constructor(error: OAuthErrorCode, description: string, status = 400) {
    super(description);
    this.name = "OAuthFailure";
    this.error = error;
    this.status = status;
  }
}

export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** Equal-length digests compared without an early exit. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "utf8");
  const right = Buffer.from(b, "utf8");
  if (left.length !== right.length) return false;
  return timingSafeEqual(left, right);
}

/**
 * A requested redirect URI matches a registered one exactly, or (RFC 8252
 * §7.3) differs only in the port of a loopback http URI, for native clients
 * that listen on an ephemeral port.
 */
export function redirectUriMatches(requested: string, registered: string): boolean {
  if (requested === registered) return true;
  if (!URL.canParse(requested) || !URL.canParse(registered)) return false;
  const a = new URL(requested);
  const b = new URL(registered);
  if (!isLoopbackHost(a.hostname) || a.protocol !== "http:") return false;
  return (
    a.protocol === b.protocol &&
    a.hostname === b.hostname &&
    a.pathname === b.pathname &&
    a.search === b.search &&
    a.username === "" &&
    a.hash === ""
  );
}

export const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
export const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export function parseScopes(scope: string | undefined): string[] {
  const requested = (scope ?? "").split(" ").filter((s) => s !== "");
  if (requested.length === 0) return [MCP_SCOPE];
  for (const s of requested) {
    if (s !== MCP_SCOPE)
      throw new OAuthFailure("invalid_scope", `unknown scope; the only scope is ${MCP_SCOPE}`);
  }
  return [MCP_SCOPE];
}
