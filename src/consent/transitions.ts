import { fail, ok, type Result } from "../core/index.js";
import { actDigest } from "./payload.js";
import type {
  ConsentLease,
  ConsentRequest,
  ConsentSession,
  NewRequest,
  StoredApproval,
  StoreError,
  StoreFailure,
} from "./types.js";

/** What can happen to a request: a human approves or denies it, a call consumes its approval. */
export type RequestEvent = "approve" | "deny" | "consume";

/** The status a request moves to, or the rule that refuses the move. */
export type Transition = Result<ConsentRequest["status"], StoreError>;

/**
 * The rules of a request's life (docs/adr/0024-consent-store-and-approval-lifetime.md), pure, so
 * every store (SQLite today, PostgreSQL for several relays) applies exactly these. A request is
 * `pending`, then `approved` or `denied`, and an approved one `consumed`, once; nothing happens
 * to it at or after its expiry.
 * - approve: a pending request, or an approved one not yet used (its proof is replaced: the
 *   channels replace only one that does not verify);
 * - deny: a pending request, or an approved one not yet used (the operator withdraws it);
 * - consume: an approved request.
 */
export function transition(
  request: Pick<ConsentRequest, "id" | "status" | "expiresAt">,
  event: RequestEvent,
  now: number,
): Transition {
  const { id, status } = request;
  const refuse = (failure: StoreFailure, detail: string): Transition => fail({ failure, detail });
  if (status === "consumed") return refuse("consumed", `request ${id} was already used`);
  switch (event) {
    case "approve":
      if (status !== "pending" && status !== "approved")
        return refuse("not-pending", `request ${id} is ${status}, not pending`);
      if (now >= request.expiresAt) return refuse("expired", `request ${id} expired`);
      return ok("approved");
    case "deny":
      if (status === "denied") return refuse("not-pending", `request ${id} is already denied`);
      if (now >= request.expiresAt) return refuse("expired", `request ${id} expired`);
      return ok("denied");
    case "consume":
      if (status !== "approved") return refuse("not-approved", `request ${id} is ${status}, not approved`);
      if (now >= request.expiresAt) return refuse("expired", `the approval of request ${id} expired`);
      return ok("consumed");
  }
}

/** Why a new request cannot be stored (its act, digest or lifetime is malformed), or null. */
export function newRequestProblem(request: NewRequest, maxTtlSeconds: number): string | null {
  const { tool, tier, bound } = request.act;
  if (
    typeof tool !== "string" ||
    tool === "" ||
    ![0, 1, 2, 3].includes(tier) ||
    typeof bound !== "object" ||
    bound === null
  )
    return "an act needs a tool, a tier 0..3 and its bound arguments";
  if (request.actDigest !== actDigest(request.act)) return "the act digest given does not match the act";
  const ttl = request.ttlSeconds;
  if (!Number.isFinite(ttl) || ttl <= 0 || ttl > maxTtlSeconds)
    return `a request's lifetime must be 0 < seconds <= ${maxTtlSeconds}, got ${ttl}`;
  return null;
}

/** Why one more pending request is one too many, given the counts now, or null. */
export function pendingBoundProblem(
  pending: { own: number; total: number },
  limits: { session: number; total: number },
): string | null {
  if (pending.own >= limits.session)
    return `this consent session already has ${pending.own} requests waiting for a decision (at most ${limits.session})`;
  if (pending.total >= limits.total)
    return `the relay already has ${pending.total} requests waiting for a decision (at most ${limits.total})`;
  return null;
}

/** Why a proof cannot be stored as an approval (a channel the relay has no verifier for, no proof), or null. */
export function approvalProblem(approval: StoredApproval): string | null {
  if (approval.channel !== "sshsig" && approval.channel !== "passkey") {
    return `unknown approval channel ${String(approval.channel)}`;
  }
  if (typeof approval.proof !== "string" || approval.proof.length === 0) return "an approval needs a proof";
  return null;
}

/** The approval as a store keeps it: only its own fields, the claimed signer as text. */
export function storedApproval(approval: StoredApproval): StoredApproval {
  return {
    channel: approval.channel,
    proof: approval.proof,
    claimedSigner: String(approval.claimedSigner),
    at: approval.at,
  };
}

/** Why a lease cannot be opened as asked (its mode, budget or times are malformed), or null. */
export function leaseProblem(lease: Omit<ConsentLease, "id" | "revoked">): string | null {
  if (lease.mode !== "window" && lease.mode !== "session") return "a lease is window or session";
  if (!Number.isSafeInteger(lease.remaining) || lease.remaining < 1) {
    return `a lease needs a budget of at least 1 read, got ${lease.remaining}`;
  }
  if (!Number.isSafeInteger(lease.createdAt) || !Number.isSafeInteger(lease.expiresAt)) {
    return "a lease's times must be epoch milliseconds";
  }
  return null;
}

/** Why a nonce another store hands over (consumeNonce) cannot be recorded as spent, or null. */
export function foreignNonceProblem(nonce: string, expiresAt: number, maxLength: number): string | null {
  if (typeof nonce !== "string" || nonce.length === 0 || nonce.length > maxLength) {
    return `a nonce must be 1..${maxLength} characters`;
  }
  if (!Number.isSafeInteger(expiresAt)) return "a nonce's expiry must be epoch milliseconds";
  return null;
}

/** A session a lease may be read under: known, not ended, and seen within `idleMs` of `at`. */
export function sessionIsLive(owner: ConsentSession | null, at: number, idleMs: number): boolean {
  if (owner === null || owner.endedAt !== undefined) return false;
  return at - owner.lastSeenAt <= idleMs;
}
