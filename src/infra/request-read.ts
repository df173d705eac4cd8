import {
  IDENTITY_CLAIM_FIELDS,
  type InfraRequest,
  MAX_FRAME_BYTES,
  type OutcomeCode,
  requestSchema,
} from "../infra-protocol/index.js";
import type { Frame } from "./frames.js";
import { boundClaims } from "./receipts.js";
import type { OpResult } from "./types.js";

/**
 * Reading one request off the socket: a frame becomes a validated request,
 * the identity claims it carried (bounded, for the receipt), or the refusal
 * that answers it. No request reaches the dispatcher unread.
 */

/** The longest message sent; the response schema allows 4096 characters. */
const MAX_MESSAGE_CHARS = 4000;

/** One request as far as it could be read, before the dispatcher sees it. */
export interface Reading {
  request: InfraRequest | null;
  claims: Record<string, unknown> | null;
  refusal: OpResult | null;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The first schema problem, naming the field. */
function schemaProblem(issues: readonly { path: PropertyKey[]; message: string; keys?: string[] }[]): string {
  const issue = issues[0];
  if (issue === undefined) return "the request does not match the protocol";
  if (issue.keys !== undefined && issue.keys.length > 0) {
    const keys = issue.keys.map((k) => JSON.stringify(k)).join(", ");
    const where = issue.path.map(String).join(".");
    if (where === "approval") {
      return `unknown field(s) ${keys} in approval: an approval names only request, nonce, payload, signature and signer`;
    }
    if (where !== "") return `unknown field(s) ${keys} in ${where}`;
    return `unknown field(s) ${keys}: a request names only op, profile, run_id, idempotency_key, approval, request_id and v`;
  }
  const field = issue.path.map(String).join(".");
  return field === "" ? issue.message : `field "${field}": ${issue.message}`;
}

/**
 * Read one frame into a request. Identity claims are taken out before
 * validation, so a request that carries one is still served, as whoever the
 * socket says it is; the claim only goes into the receipt.
 */
export function readFrame(frame: Frame): Reading {
  const refused = (code: OutcomeCode, message: string, claims: Record<string, unknown> | null = null) => ({
    request: null,
    claims,
    refusal: { code, message },
  });
  if (frame.kind === "too-large") {
    return refused(
      "FRAME_TOO_LARGE",
      `a request line is limited to ${MAX_FRAME_BYTES} bytes; it was skipped`,
    );
  }
  if (frame.kind === "not-utf8") return refused("MALFORMED_JSON", "the request line is not UTF-8 text");
  let raw: unknown;
  try {
    raw = JSON.parse(frame.text);
  } catch {
    return refused("MALFORMED_JSON", "the request line is not valid JSON");
  }
  if (!isPlainObject(raw)) return refused("SCHEMA_VIOLATION", "a request is one JSON object");
  let claims: Record<string, unknown> | null = null;
  for (const field of IDENTITY_CLAIM_FIELDS) {
    if (!Object.hasOwn(raw, field)) continue;
    claims ??= {};
    claims[field] = raw[field];
    delete raw[field];
  }
  const bounded = claims === null ? null : boundClaims(claims);
  const parsed = requestSchema.safeParse(raw);
  if (!parsed.success) {
    return refused(
      "SCHEMA_VIOLATION",
      schemaProblem(parsed.error.issues as Parameters<typeof schemaProblem>[0]),
      bounded,
    );
  }
  return { request: parsed.data, claims: bounded, refusal: null };
}

export function boundedMessage(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS)}…`;
}
