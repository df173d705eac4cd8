import { RelayError } from "../core/index.js";

/**
 * The code of an error that says a connection could not take a new channel
 * or request at all: it was already gone, it closed while the request was
 * pending, or the server refused the channel. On a reused pooled connection
 * that means the connection died (or filled up) since its last use, which
 * the pool answers by dialling afresh, once (`SshPool.open`).
 */
export const CONNECTION_UNUSABLE = "connection_unusable";

/** true for an error carrying CONNECTION_UNUSABLE. */
export function isConnectionUnusable(err: unknown): boolean {
  return err instanceof RelayError && err.code === CONNECTION_UNUSABLE;
}

/** Context a failed dial is described with. */
export interface DialFailure {
  /** `user@host:port` of the endpoint. */
  endpoint: string;
  timeoutSeconds: number;
  /** What was offered for authentication, for the PermissionDenied message. */
  offered: readonly string[];
}

/**
 * ssh2 reports failures as plain Errors with a string `level` (and Node's
 * errno `code` for socket errors). Callers see stable type tokens instead,
 * in the Python names where one exists, so `[ERROR: <Type>: …]` reads the
 * same whichever library produced it.
 */
export function translateDialError(err: unknown, ctx: DialFailure): RelayError {
  if (err instanceof RelayError) return err;
  const e = err as (Error & { level?: string; code?: string | number }) | undefined;
  const message = e?.message ?? String(err);
  const code = typeof e?.code === "string" ? e.code : "";
  const level = e?.level ?? "";

  if (level === "client-authentication") {
    return new RelayError(
      "PermissionDenied",
      `authentication failed for ${ctx.endpoint} (offered: ${ctx.offered.join(", ") || "nothing"})`,
      { code: "auth_failed", cause: err },
    );
  }
  if (level === "client-timeout" || code === "ETIMEDOUT") {
    return new RelayError(
      "TimeoutError",
      `connecting to ${ctx.endpoint} timed out after ${ctx.timeoutSeconds}s`,
      { code: "connect_timeout", cause: err },
    );
  }
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
    case "EAI_FAIL":
      return new RelayError("HostNotFoundError", `cannot resolve the host of ${ctx.endpoint} (${code})`, {
        code: "dns",
        cause: err,
      });
    case "ECONNREFUSED":
      return new RelayError("ConnectionRefusedError", `connection refused by ${ctx.endpoint}`, {
        code: "refused",
        cause: err,
      });
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return new RelayError("ConnectionError", `${ctx.endpoint} is unreachable (${code})`, {
        code: "unreachable",
        cause: err,
      });
    case "ECONNRESET":
    case "EPIPE":
      return new RelayError("ConnectionResetError", `${ctx.endpoint} closed the connection (${code})`, {
        code: "reset",
        cause: err,
      });
  }
  if (/handshake failed|no matching/i.test(message)) {
    return new RelayError("ProtocolError", `SSH negotiation with ${ctx.endpoint} failed: ${message}`, {
      code: "protocol",
      cause: err,
    });
  }
  return new RelayError("ConnectionError", `SSH connection to ${ctx.endpoint} failed: ${message}`, {
    code: "connection",
    cause: err,
  });
}

/** A failure at a bastion, named so the caller knows which hop broke. */
export function viaJump(err: RelayError, hopLabel: string): RelayError {
  if (err.message.startsWith("jump host ")) return err;
  return new RelayError(err.type, `jump host ${hopLabel}: ${err.message}`, { code: err.code, cause: err });
}
