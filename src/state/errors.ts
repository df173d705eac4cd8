import type pg from "pg";
import type { Result } from "../core/index.js";
import { pgDriver } from "./driver.js";

/**
 * What went wrong with the shared state, in the few words a caller acts on:
 * - `unavailable`: the server cannot be reached, refused the login, went away or stopped answering;
 * - `locked`: a lock or a statement waited past its timeout, or a transaction kept conflicting;
 * - `incompatible`: the database's schema is newer than this relay (upgrade the relay);
 * - `failed`: the server refused a statement (a bug, or a schema edited by hand).
 */
type StateFailure = "unavailable" | "locked" | "incompatible" | "failed";

export interface StateError {
  failure: StateFailure;
  /** One line naming the server as `host:port`; never the password. */
  detail: string;
}

export type StateResult<T> = Result<T, StateError>;

/** Socket errors that mean the server is not there (or no longer). */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
  "EADDRNOTAVAIL",
  "ENOENT",
]);

/** What node-postgres says, without a code, when a connection fails or is given up on. */
const CONNECTION_MESSAGES: Array<[RegExp, string]> = [
  [/^timeout exceeded when trying to connect$/, "gave no connection in time"],
  [/connection timeout/i, "did not accept a connection in time"],
  [/^Query read timeout$/, "stopped answering"],
  [/^Connection terminated/, "closed the connection"],
  [/not queryable/, "closed the connection"],
  [/after calling end on the pool/, "is no longer in use here: the pool was closed"],
];

function codeOf(err: unknown): string {
  if (typeof err !== "object" || err === null) return "";
  if ("code" in err && typeof err.code === "string" && err.code !== "") return err.code;
  // Several addresses tried at once (IPv6 and IPv4): the first one's reason.
  if (err instanceof AggregateError) return codeOf(err.errors[0]);
  return "";
}

/** The words for an error of the connection itself (not a statement's), or null. */
export function connectionProblem(err: unknown): string | null {
  if (err instanceof pgDriver().DatabaseError) return null;
  const code = codeOf(err);
  if (NETWORK_CODES.has(code)) return `is unreachable (${code})`;
  const message = err instanceof Error ? err.message : "";
  for (const [pattern, words] of CONNECTION_MESSAGES) if (pattern.test(message)) return words;
  return null;
}

function forDatabaseError(err: pg.DatabaseError, at: string): StateError {
  const code = err.code ?? "";
  const said = `${err.message} (${code})`;
  if (code === "55P03" || code === "57014") {
    return { failure: "locked", detail: `${at} cut a statement or a lock wait at its timeout: ${said}` };
  }
  if (code === "40001" || code === "40P01") {
    return { failure: "locked", detail: `${at} kept conflicting with concurrent transactions: ${said}` };
  }
  if (code.startsWith("08") || code.startsWith("57P") || code === "25P03") {
    return { failure: "unavailable", detail: `${at} ended the connection: ${said}` };
  }
  if (code.startsWith("28")) return { failure: "unavailable", detail: `${at} refused the login: ${said}` };
  if (code.startsWith("53") || code === "3D000") {
    return { failure: "unavailable", detail: `${at} cannot serve this relay: ${said}` };
  }
  return { failure: "failed", detail: `${at} refused a statement: ${said}` };
}

/**
 * What an error from the pool or the server means, or null when it is neither (a refusal the
 * caller threw inside a transaction stays the caller's). The password is never in these words;
 * should a message ever carry it, it is blanked.
 */
export function classifyPgError(
  err: unknown,
  server: { target: string; password: string },
): StateError | null {
  const at = `PostgreSQL at ${server.target}`;
  let found: StateError | null = null;
  if (err instanceof pgDriver().DatabaseError) found = forDatabaseError(err, at);
  else {
    const problem = connectionProblem(err);
    if (problem !== null) found = { failure: "unavailable", detail: `${at} ${problem}` };
  }
  if (found === null) return null;
  const detail = found.detail.replace(/\s+/g, " ").trim();
  return {
    failure: found.failure,
    detail: server.password.length >= 4 ? detail.split(server.password).join("****") : detail,
  };
}
