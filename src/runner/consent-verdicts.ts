import type { ConsentRequest, StoreError } from "../consent/index.js";
import type { CallIdentity, GateVerdict } from "./tool.js";

/**
 * The answers of the consent gate (consent-gate.ts), built from values alone: each wording of a
 * refusal or a challenge is written once, here, whichever step reaches it.
 */

/**
 * A read, as consent counts it: a command the classifier proved to only read (Tier 0,
 * `proven_read`). A Tier-1 command is not one: it may write a file that a later call runs.
 */
export function isRead(call: CallIdentity): boolean {
  return call.tier === 0 && call.basis === "proven_read";
}

export function refusal(reason: string, extra?: Record<string, unknown>): GateVerdict {
  return {
    kind: "refuse",
    reason: `consent: ${reason}`,
    action: "consent_refuse",
    ...(extra ? { auditExtra: { consent: extra } } : {}),
  };
}

/** A store that could not answer refuses the call: a busy one asks for a retry. */
export function storeFailure(error: StoreError): GateVerdict {
  return error.failure === "locked"
    ? refusal(`the consent store is busy (${error.detail}); nothing ran, try again`)
    : refusal(`the consent store cannot be used (${error.failure}: ${error.detail}); nothing ran`);
}

/** CONSENT REQUIRED for `request`, with its readable act; `note` says why a stored approval was not used. */
export function challengeVerdict(
  request: ConsentRequest,
  now: number,
  describe: (request: ConsentRequest, expiresInSeconds: number) => string,
  note?: string,
): GateVerdict {
  const seconds = Math.max(0, Math.ceil((request.expiresAt - now) / 1000));
  const waiting = note ? `\nRequest ${request.id} still waits for a valid approval: ${note}.` : "";
  return {
    kind: "challenge",
    text: `[CONSENT REQUIRED id=${request.id} expires_in=${seconds}s]\n${describe(request, seconds)}${waiting}`,
    action: "consent_request",
    outcome: "consent_required",
    auditExtra: { consent: { request: request.id } },
  };
}

export function deniedVerdict(request: ConsentRequest): GateVerdict {
  const by = request.denial?.by ? ` by ${request.denial.by}` : "";
  const why = request.denial?.reason ? `: ${request.denial.reason}` : "";
  return refusal(`request ${request.id} was denied${by}${why}`, { request: request.id });
}

/** A read that rides on lease `lease`, with what its own copy of the budget has left. */
export function leaseVerdict(lease: string, remaining: number): GateVerdict {
  return {
    kind: "proceed",
    action: "consent_lease",
    auditExtra: { consent: { lease, remaining } },
  };
}

/** A consumed approval: the facts for the record, and the signed approval handed to the tool. */
export function executeVerdict(
  request: ConsentRequest,
  signed: { payload: string; proof: string; signer: string },
  record: Record<string, unknown>,
): GateVerdict {
  return {
    kind: "proceed",
    action: "consent_execute",
    auditExtra: { consent: record },
    consent: {
      request: request.id,
      nonce: request.nonce,
      payload: signed.payload,
      signature: signed.proof,
      signer: signed.signer,
    },
  };
}
