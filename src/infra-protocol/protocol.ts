import { z } from "zod";

/**
 * The wire protocol of the INFRA-1 broker (docs/infra-broker.md §Protocol):
 * newline-delimited JSON over one Unix-domain socket, one request per line,
 * one response line per request. The request names an operation of a closed
 * set and an operator-owned profile; nothing in it chooses a host, path,
 * user, flag or command.
 */

export const PROTOCOL_VERSION = 1;

/** A request line longer than this is answered `invalid`/`FRAME_TOO_LARGE` and skipped. */
export const MAX_FRAME_BYTES = 64 * 1024;

const OPERATIONS = ["status", "probe", "rsync-dry-run", "replicate", "verify"] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Profile ids name files in the operator's profile directory: no separators, no dots. */
export const PROFILE_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Run ids become one path component of `<remote root>/runs/<run id>/`. */
export const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
export const IDEMPOTENCY_KEY = /^[A-Za-z0-9_:-]{8,128}$/;
/** An approval reference is opaque here; the consent gate gives it meaning. */
export const APPROVAL_REF = /^[\x21-\x7e]{1,4096}$/;

/**
 * Fields that claim who the caller is. The principal comes from the socket
 * (SO_PEERCRED) alone: these are removed before validation, never used, and
 * recorded in the receipt as a claim that was ignored.
 */
export const IDENTITY_CLAIM_FIELDS = [
  "uid",
  "gid",
  "pid",
  "user",
  "username",
  "principal",
  "identity",
  "groups",
] as const;

export const requestSchema = z
  .object({
    v: z.literal(PROTOCOL_VERSION).optional(),
    op: z.enum(OPERATIONS),
    profile: z.string().regex(PROFILE_ID).optional(),
    run_id: z.string().regex(RUN_ID).optional(),
    idempotency_key: z.string().regex(IDEMPOTENCY_KEY).optional(),
    approval: z.string().regex(APPROVAL_REF).optional(),
    /** The caller's own correlation id, echoed in the receipt. */
    request_id: z
      .string()
      .regex(/^[\x21-\x7e]{1,128}$/)
      .optional(),
  })
  .strict();

export type InfraRequest = z.infer<typeof requestSchema>;

/**
 * Outcome classes (docs/infra-broker.md §Outcomes). `invalid` is a request
 * the broker could not read (too large, not JSON, not the schema).
 */
export const OUTCOMES = ["ok", "blocked", "auth-required", "input-required", "unknown", "invalid"] as const;
export type OutcomeClass = (typeof OUTCOMES)[number];

/** Every stable code, with the class it belongs to. */
export const OUTCOME_CODES = {
  OK: "ok",
  MISSING_EXECUTION_CAPABILITY: "blocked",
  PROFILE_DISABLED: "blocked",
  PROFILE_INVALID: "blocked",
  PIN_MISSING: "blocked",
  PIN_CHANGED: "blocked",
  NETWORK_FAILURE: "blocked",
  CREDENTIAL_UNAVAILABLE: "blocked",
  CREDENTIAL_REJECTED: "blocked",
  PRINCIPAL_NOT_ALLOWED: "blocked",
  RECEIVER_REFUSED: "blocked",
  SOURCE_UNSAFE: "blocked",
  LIMIT_EXCEEDED: "blocked",
  DRY_RUN_REQUIRED: "blocked",
  IDEMPOTENCY_CONFLICT: "blocked",
  RUN_EXISTS: "blocked",
  VERIFY_FAILED: "blocked",
  TRANSFER_FAILED: "blocked",
  /** The broker cannot write the receipt of an operation, so it does not perform it. */
  RECEIPT_UNAVAILABLE: "blocked",
  APPROVAL_REQUIRED: "auth-required",
  APPROVAL_INVALID: "auth-required",
  PROFILE_REQUIRED: "input-required",
  PROFILE_NOT_FOUND: "input-required",
  RUN_ID_REQUIRED: "input-required",
  IDEMPOTENCY_KEY_REQUIRED: "input-required",
  RUN_NOT_FOUND: "input-required",
  WRITE_INTERRUPTED: "unknown",
  FRAME_TOO_LARGE: "invalid",
  MALFORMED_JSON: "invalid",
  SCHEMA_VIOLATION: "invalid",
  INTERNAL_ERROR: "invalid",
} as const satisfies Record<string, OutcomeClass>;

export type OutcomeCode = keyof typeof OUTCOME_CODES;

export function outcomeClass(code: OutcomeCode): OutcomeClass {
  return OUTCOME_CODES[code];
}

/** One response line. */
export interface InfraResponse {
  v: typeof PROTOCOL_VERSION;
  /** The id of the hash-chained receipt this request left in the broker's log. */
  receipt_id: string;
  op: Operation | null;
  profile: string | null;
  run_id: string | null;
  outcome: OutcomeClass;
  code: OutcomeCode;
  /** One human sentence; never holds key material. */
  message: string;
  /** Operation-specific facts (manifest counts, differences, per-profile status). */
  data?: Record<string, unknown>;
  /** True when an idempotency key returned the first outcome instead of acting again. */
  replayed?: boolean;
}

const responseSchema = z
  .object({
    v: z.literal(PROTOCOL_VERSION),
    receipt_id: z.string().max(128),
    op: z.enum(OPERATIONS).nullable(),
    profile: z.string().max(64).nullable(),
    run_id: z.string().max(64).nullable(),
    outcome: z.enum(OUTCOMES),
    code: z.enum(Object.keys(OUTCOME_CODES) as [OutcomeCode, ...OutcomeCode[]]),
    message: z.string().max(4096),
    data: z.record(z.string(), z.unknown()).optional(),
    replayed: z.boolean().optional(),
  })
  .strict();

/** Parse one response line from a broker; null when it is not one. */
export function parseResponse(line: string): InfraResponse | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  const parsed = responseSchema.safeParse(value);
  return parsed.success ? (parsed.data as InfraResponse) : null;
}
