import { type Clock, fail, ok } from "../core/index.js";
import type { ConsentStore } from "./types.js";

/**
 * At most this many nonces remembered at once. Each one is a human's signed
 * approval, used within its lifetime, so a real relay stays far below; past
 * it, consumption is refused rather than a nonce forgotten early.
 */
const MAX_REMEMBERED = 100_000;

/**
 * The store with a second, in-process record of every nonce this process
 * consumed, kept until the approval's expiry. The database is writable by
 * the relay's own user, so a command the relay admits could mark a used
 * request approved again; this memory refuses that replay for as long as the
 * signed approval could still verify (docs/adr/0024-consent-store-and-approval-lifetime.md).
 */
export function rememberConsumedNonces(store: ConsentStore, clock: Clock): ConsentStore {
  const remembered = new Map<string, number>();

  const forgetExpired = (now: number): void => {
    for (const [nonce, expiresAt] of remembered) if (expiresAt <= now) remembered.delete(nonce);
  };
  const full = (): boolean => {
    if (remembered.size < MAX_REMEMBERED) return false;
    forgetExpired(clock.now());
    return remembered.size >= MAX_REMEMBERED;
  };
  const seen = (nonce: string): boolean => {
    const expiresAt = remembered.get(nonce);
    return expiresAt !== undefined && expiresAt > clock.now();
  };

  // Every other method is the store's own, bound, so a class-based store works too.
  return {
    instanceId: store.instanceId,
    createRequest: (request) => store.createRequest(request),
    getRequest: (id) => store.getRequest(id),
    listRequests: () => store.listRequests(),
    findApproved: (digest) => store.findApproved(digest),
    findOpen: (digest, session) => store.findOpen(digest, session),
    approve: (id, approval) => store.approve(id, approval),
    deny: (id, by, reason) => store.deny(id, by, reason),
    openLease: (lease) => store.openLease(lease),
    takeLeaseRead: (session, idleMs, count) => store.takeLeaseRead(session, idleMs, count),
    getLease: (id) => store.getLease(id),
    changeCounter: () => store.changeCounter(),
    listLeases: () => store.listLeases(),
    revoke: (idOrSession) => store.revoke(idOrSession),
    revokeAll: () => store.revokeAll(),
    touchSession: (id, clientId) => store.touchSession(id, clientId),
    endSession: (id) => store.endSession(id),
    listSessions: () => store.listSessions(),
    prune: (graceMs) => store.prune(graceMs),
    close: () => store.close(),
    async consume(id, nonce) {
      if (seen(nonce)) return fail({ failure: "consumed", detail: `request ${id} was already used here` });
      if (full()) return fail({ failure: "unavailable", detail: "too many approvals in use at once" });
      const result = await store.consume(id, nonce);
      if (result.ok) remembered.set(nonce, result.value.expiresAt);
      return result;
    },
    async consumeNonce(nonce, expiresAt) {
      if (seen(nonce)) return ok(false);
      if (full()) return fail({ failure: "unavailable", detail: "too many approvals in use at once" });
      const result = await store.consumeNonce(nonce, expiresAt);
      if (result.ok && result.value) remembered.set(nonce, expiresAt);
      return result;
    },
  };
}
