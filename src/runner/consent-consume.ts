import {
  type ApprovalVerifier,
  type Approver,
  type ConsentAct,
  type ConsentRequest,
  type ConsentStore,
  requestPayload,
} from "../consent/index.js";
import type { Clock } from "../core/index.js";
import { type LeaseBook, rememberOpened } from "./consent-leases.js";
import { challengeVerdict, executeVerdict, isRead, refusal, storeFailure } from "./consent-verdicts.js";
import type { CallIdentity, GateVerdict } from "./tool.js";

/** What consuming an approval needs of the consent gate (consent-gate.ts). */
export interface ConsumeDeps {
  store: ConsentStore;
  verifier: ApprovalVerifier;
  clock: Clock;
  describe(request: ConsentRequest, expiresInSeconds: number): string;
  settings: { leaseMode: "manual" | "window" | "session"; leaseTtlSeconds: number; leaseBudget: number };
  leases: LeaseBook;
}

/** Verify the approval against the live act, consume it once, open a read lease where the mode says so. */
export async function consumeApproval(
  deps: ConsumeDeps,
  request: ConsentRequest,
  act: ConsentAct,
  call: CallIdentity,
): Promise<GateVerdict> {
  const now = deps.clock.now();
  const ref = { request: request.id };
  if (request.expiresAt <= now) return refusal(`the approval of request ${request.id} has expired`, ref);
  // Rebuilt from the live call: a payload edited in the store cannot match a signature.
  const payload = requestPayload(request, deps.store.instanceId, act);
  if (payload !== request.payload) {
    return refusal(`request ${request.id} in the store does not describe this act; it is not used`, ref);
  }
  if (!request.approval) return refusal(`request ${request.id} carries no approval`, ref);
  const verified = await deps.verifier.verify(request.approval, payload, now);
  // An approval that does not verify is no approval: the request waits for a valid one.
  if (!verified.ok) {
    const note = `its stored approval does not verify (${verified.error})`;
    return challengeVerdict(request, deps.clock.now(), deps.describe, note);
  }
  const spent = await spend(deps.store, request);
  if (spent !== null) return spent;
  const record = approvalRecord(request, verified.value);
  // Only a read opens a lease, and a read is what the classifier proved: Tier 0 (ADR 0033).
  if (isRead(call) && deps.settings.leaseMode !== "manual") {
    const lease = await openReadLease(deps, request, call.session, now);
    if (lease !== null) record.lease = lease;
  }
  return executeVerdict(
    request,
    { payload, proof: request.approval.proof, signer: verified.value.signer },
    record,
  );
}

/** Consumes the request once in the store; a refusal when it was used already or cannot be. */
async function spend(store: ConsentStore, request: ConsentRequest): Promise<GateVerdict | null> {
  const ref = { request: request.id };
  const taken = await store.consume(request.id, request.nonce);
  if (taken.ok) return null;
  if (taken.error.failure === "consumed")
    return refusal(`the approval of request ${request.id} was already used`, ref);
  if (taken.error.failure === "withdrawn") return refusal(`${taken.error.detail}; nothing ran`, ref);
  return storeFailure(taken.error);
}

/** The facts of a consumed approval the call's record keeps. */
function approvalRecord(request: ConsentRequest, verified: Approver): Record<string, unknown> {
  return {
    request: request.id,
    approver: verified.signer,
    key: verified.key,
    channel: verified.channel,
  };
}

/**
 * Opens the session's read lease that an approved read starts, and keeps this process's copy of
 * it; the lease id, or null. The read itself was approved; a lease that could not be opened only
 * means the next read asks again.
 */
async function openReadLease(
  deps: ConsumeDeps,
  request: ConsentRequest,
  session: string,
  now: number,
): Promise<string | null> {
  const { settings } = deps;
  if (settings.leaseMode === "manual") return null;
  const lease = await deps.store.openLease({
    session,
    openedBy: request.id,
    mode: settings.leaseMode,
    createdAt: now,
    expiresAt:
      settings.leaseMode === "window" ? now + settings.leaseTtlSeconds * 1000 : Number.MAX_SAFE_INTEGER,
    remaining: settings.leaseBudget,
  });
  if (!lease.ok) return null;
  rememberOpened(deps.leases, lease.value, session, now);
  return lease.value.id;
}
