import { CONSENT_NAMESPACE } from "../consent/index.js";
import { type Clock, canonicalJson, fail, ok, type Result } from "../core/index.js";
import type { ConsentCapability, InfraRequest, Operation } from "../infra-protocol/index.js";
import type { NonceStore } from "./nonces.js";
import type { ApprovalRecord, OpResult, Profile } from "./types.js";

/** The version of the signed payload this broker reads. */
const PAYLOAD_VERSION = 1;

/**
 * The operations a `consent` profile gates, with the relay tool a human
 * approves for each. status, probe and verify only read, are Tier 0 at the
 * relay and never reach its consent gate, so they need no approval here.
 */
const CONSENTED_TOOLS: Partial<Record<Operation, string>> = {
  "rsync-dry-run": "infra_rsync_dry_run",
  replicate: "infra_replicate",
};

/** Verifies an armored SSHSIG over `message` against the broker's allowed signers. */
export type SignatureCheck = (
  armored: string,
  message: string,
  options: { namespace: string; now: number },
) => Result<{ principal: string; fingerprint: string }, string>;

/** A verified approval of the request it rides on, not consumed yet. */
export interface VerifiedApproval {
  record: ApprovalRecord;
  nonce: string;
  expiresAt: number;
}

/** The approval step's answer: go on (with an approval to consume, or null when none is needed), or this refusal. */
type ApprovalVerdict = Result<VerifiedApproval | null, OpResult>;

export interface ApprovalGate {
  /**
   * Everything that can be checked without writing: is an approval needed,
   * is it canonical, signed by an allowed signer in the consent namespace,
   * for exactly this operation, profile, run id and key, and unexpired.
   */
  check(profile: Profile, request: InfraRequest): ApprovalVerdict;
  /** Consume the approval's nonce; null when it was consumed now, else the refusal. Right before acting. */
  consume(op: Operation, approval: VerifiedApproval): OpResult | null;
}

/** The signed payload's fields, as the relay's consent store writes them. */
interface SignedPayload {
  v: number;
  request: string;
  nonce: string;
  tool: string;
  tier: number;
  bound: Record<string, unknown>;
  expires: string;
  instance: string;
}

const PAYLOAD_KEYS = ["bound", "expires", "instance", "nonce", "request", "tier", "tool", "v"];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The payload if it is one this broker reads, else the sentence that says why not. */
function parsePayload(text: string): SignedPayload | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "its signed payload is not JSON";
  }
  // Only the canonical bytes are signed bytes: the same act must never have two spellings.
  if (canonicalJson(value) !== text) {
    return "its signed payload is not canonical JSON (sorted keys, no spaces)";
  }
  if (!isObject(value)) return "its signed payload is not a JSON object";
  if (value.v !== PAYLOAD_VERSION) {
    return `its signed payload has version ${JSON.stringify(value.v)}; this broker reads version ${PAYLOAD_VERSION}`;
  }
  const keys = Object.keys(value).sort();
  if (keys.join(",") !== PAYLOAD_KEYS.join(",")) {
    return `its signed payload has the fields ${keys.join(", ")}, not ${PAYLOAD_KEYS.join(", ")}`;
  }
  for (const field of ["request", "nonce", "tool", "expires", "instance"] as const) {
    if (typeof value[field] !== "string") return `its signed payload's ${field} is not a string`;
  }
  if (!Number.isInteger(value.tier)) return "its signed payload's tier is not an integer";
  if (!isObject(value.bound)) return "its signed payload's bound arguments are not an object";
  return value as unknown as SignedPayload;
}

/** The bound arguments the relay signs for an INFRA call: exactly these four, null when absent. */
function infraBound(request: InfraRequest): Record<string, unknown> {
  return {
    operation: request.op,
    profile: request.profile ?? null,
    run_id: request.run_id ?? null,
    idempotency_key: request.idempotency_key ?? null,
  };
}

/** A signed act for a mismatch's sentence: tool and bound arguments, as JSON so nothing in them is raw. */
function describeAct(tool: string, bound: Record<string, unknown>): string {
  return `${canonicalJson(tool)} ${canonicalJson(bound)}`;
}

/**
 * The broker's own check of a human-signed approval (docs/infra-broker.md
 * §Approvals). It trusts nothing the relay says: the signature is verified
 * against the broker's allowed signers, the signed act must be the request
 * it rides on, the expiry is read on the broker's clock, and the nonce is
 * consumed in the broker's own store, so an approval acts at most once here
 * whatever the relay's store says.
 */
export function createApprovalGate(deps: {
  verify: SignatureCheck | null;
  nonces: NonceStore | null;
  clock: Clock;
}): ApprovalGate {
  function check(profile: Profile, request: InfraRequest): ApprovalVerdict {
    const tool = CONSENTED_TOOLS[request.op];
    if (profile.approval !== "consent" || tool === undefined) return ok(null);
    const capability: ConsentCapability | undefined = request.approval;
    const on = `${request.op} on profile ${profile.id}`;
    if (capability === undefined) {
      return fail({
        code: "APPROVAL_REQUIRED",
        message: `Profile ${profile.id} needs a human-signed approval for ${request.op}, and the request carries none.`,
      });
    }
    const record: ApprovalRecord = {
      request: capability.request,
      claimed_signer: capability.signer,
      principal: null,
      fingerprint: null,
    };
    const invalid = (why: string) =>
      fail<OpResult>({
        code: "APPROVAL_INVALID",
        message: `The approval ${capability.request} for ${on} cannot be accepted: ${why}.`,
        approval: record,
      });
    const { verify, nonces } = deps;
    if (verify === null || nonces === null) return invalid("this broker was started without allowed signers");
    const payload = parsePayload(capability.payload);
    if (typeof payload === "string") return invalid(payload);
    if (payload.request !== capability.request)
      return invalid("its request id is not the one its payload signs");
    if (payload.nonce !== capability.nonce) return invalid("its nonce is not the one its payload signs");
    const now = deps.clock.now();
    const verified = verify(capability.signature, capability.payload, { namespace: CONSENT_NAMESPACE, now });
    if (!verified.ok) return invalid(`its signature does not verify (${verified.error})`);
    record.principal = verified.value.principal;
    record.fingerprint = verified.value.fingerprint;

    const expected = infraBound(request);
    if (payload.tool !== tool || canonicalJson(payload.bound) !== canonicalJson(expected)) {
      return fail({
        code: "APPROVAL_MISMATCH",
        message:
          `The approval ${capability.request} was signed for ${describeAct(payload.tool, payload.bound)}, ` +
          `not for this request, ${describeAct(tool, expected)}; an approval covers exactly one act.`,
        approval: record,
      });
    }
    const expiresAt = Date.parse(payload.expires);
    if (
      !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(payload.expires) ||
      Number.isNaN(expiresAt)
    ) {
      return invalid("its expiry is not an ISO-8601 UTC time");
    }
    if (expiresAt <= now) {
      return invalid(
        `it expired at ${payload.expires} (the broker's clock reads ${new Date(now).toISOString()})`,
      );
    }
    return ok({ record, nonce: capability.nonce, expiresAt });
  }

  function consume(op: Operation, approval: VerifiedApproval): OpResult | null {
    if (deps.nonces === null) throw new Error("an approval was verified without a nonce store");
    // Checked again here: the request may have waited in its profile's queue past the expiry.
    const now = deps.clock.now();
    if (approval.expiresAt <= now) {
      return {
        code: "APPROVAL_INVALID",
        message: `The approval ${approval.record.request} for ${op} expired at ${new Date(approval.expiresAt).toISOString()} while the request waited its turn; it was not used.`,
        approval: approval.record,
      };
    }
    const taken = deps.nonces.consume(approval.nonce, {
      expiresAt: approval.expiresAt,
      request: approval.record.request,
      principal: approval.record.principal ?? "",
    });
    if (taken.kind === "consumed") return null;
    if (taken.kind === "reused") {
      return {
        code: "APPROVAL_REUSED",
        message: `The approval ${approval.record.request} was already used here at ${new Date(taken.consumedAt).toISOString()}; an approval acts once, so ${op} needs a new one.`,
        approval: approval.record,
      };
    }
    return {
      code: "APPROVAL_STORE_UNAVAILABLE",
      message: `${op} was not performed: the broker's approval store ${taken.reason}, so the approval could not be consumed.`,
      approval: approval.record,
    };
  }

  return { check, consume };
}
