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
/** The longest signed payload and the longest armored signature an approval may carry, in bytes. */
const MAX_APPROVAL_PAYLOAD_BYTES = 8 * 1024;
const MAX_APPROVAL_SIGNATURE_BYTES = 8 * 1024;

/**
 * A human's approval of one act, as the relay's consent gate attaches it to
 * the call (docs/infra-broker.md §Approvals): the consent request's id and
 * nonce, the exact bytes that were signed (canonical JSON of the act), the
 * armored SSHSIG over them in the namespace `relay-shell-consent`, and the
 * principal the relay found for the signer. The broker trusts none of it: it
 * verifies the signature against its own allowed signers, checks that the
 * signed act is the request it rides on, and consumes the nonce itself.
 */
export interface ConsentCapability {
  request: string;
  nonce: string;
  payload: string;
  signature: string;
  signer: string;
}

const consentCapabilitySchema = z
  .object({
    request: z.string().regex(/^[\x21-\x7e]{1,128}$/),
    nonce: z.string().regex(/^[\x21-\x7e]{1,128}$/),
    payload: z
      .string()
      .min(1)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
      .refine((text) => !/[\x00-\x1f\x7f]/.test(text), { message: "must hold no control character" })
      .refine((text) => Buffer.byteLength(text, "utf8") <= MAX_APPROVAL_PAYLOAD_BYTES, {
        message: `must be at most ${MAX_APPROVAL_PAYLOAD_BYTES} bytes`,
      }),
    signature: z
      .string()
      .min(1)
      .max(MAX_APPROVAL_SIGNATURE_BYTES)
      .regex(/^[\x20-\x7e\n]+$/, { message: "must be printable ASCII and newlines (an armored SSHSIG)" }),
    signer: z.string().regex(/^[\x21-\x7e]{1,256}$/),
  })
  .strict() satisfies z.ZodType<ConsentCapability>;

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
    /** A human-signed approval of this very request, from the relay's consent gate. */
    approval: consentCapabilitySchema.optional(),
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
  /** The broker's nonce store could not be locked or written in time, so nothing ran. */
  APPROVAL_STORE_UNAVAILABLE: "blocked",
  APPROVAL_REQUIRED: "auth-required",
  APPROVAL_INVALID: "auth-required",
  /** A verified approval of another act (operation, profile, run or key). */
  APPROVAL_MISMATCH: "auth-required",
  /** The approval's nonce was consumed already: an approval works once. */
  APPROVAL_REUSED: "auth-required",
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
