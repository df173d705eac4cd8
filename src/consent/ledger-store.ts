import { fail, ok } from "../core/index.js";
import type { ConsentLedger, LedgerResult } from "./ledger.js";
import type { ConsentLease, ConsentRequest, ConsentStore, StoreResult } from "./types.js";

/**
 * The store as the ledger corrects it (docs/adr/0037-consent-withdrawals-in-an-append-only-ledger.md).
 * The database is the relay's own file: a command the relay ran can set a denied request back to
 * approved, a revoked lease back to live, a spent request back to unused. The ledger is the
 * operator's record that the account can only add to, so:
 * - a denial or revocation is written to the ledger first, then to the database;
 * - a request the ledger denies reads as denied, and a lease it revokes as revoked, whatever the
 *   database says;
 * - a nonce is spent in the ledger after the database agreed, and only the first claim there wins.
 */
export function withLedger(store: ConsentStore, ledger: ConsentLedger): ConsentStore {
  const unreadable = (result: LedgerResult<unknown>): StoreResult<never> =>
    fail({
      failure: "unavailable",
      detail: `the consent ledger cannot be used: ${result.ok ? "" : result.error}`,
    });

  function asDenied(request: ConsentRequest): ConsentRequest {
    const denial = ledger.denial(request.id);
    if (!denial || request.status === "consumed") return request;
    const { approval: _voided, ...rest } = request;
    return { ...rest, status: "denied", denial };
  }
  function asRevoked(lease: ConsentLease): ConsentLease {
    return ledger.leaseRevoked(lease.id, lease.session, lease.createdAt)
      ? { ...lease, revoked: true }
      : lease;
  }
  async function read<T>(pending: Promise<StoreResult<T>>, map: (value: T) => T): Promise<StoreResult<T>> {
    const result = await pending;
    if (!result.ok) return result;
    const fresh = ledger.refresh();
    if (!fresh.ok) return unreadable(fresh);
    return ok(map(result.value));
  }
  /** The ledger's record first (what the account cannot undo), then the database's. */
  async function withdraw<T>(
    written: LedgerResult<void>,
    then: () => Promise<StoreResult<T>>,
  ): Promise<StoreResult<T>> {
    if (!written.ok) return unreadable(written);
    return then();
  }

  // A change counter that moves when either the database or the ledger changed.
  let lastDb = Number.NaN;
  let lastLedger = -1;
  let epoch = 0;

  return {
    instanceId: store.instanceId,
    createRequest: (request) => store.createRequest(request),
    getRequest: (id) => read(store.getRequest(id), asDenied),
    listRequests: () =>
      read(store.listRequests(), (requests) => requests.filter((r) => ledger.denial(r.id) === null)),
    // Handed over as it is: consuming it is where a denial in the ledger refuses, with its reason.
    findApproved: (digest) => read(store.findApproved(digest), (request) => request),
    findOpen: (digest, session) =>
      read(store.findOpen(digest, session), (request) => (request ? asDenied(request) : null)),
    async approve(id, approval) {
      const fresh = ledger.refresh();
      if (!fresh.ok) return unreadable(fresh);
      const denial = ledger.denial(id);
      if (denial) return fail({ failure: "withdrawn", detail: `request ${id} was denied by ${denial.by}` });
      return store.approve(id, approval);
    },
    deny: (id, by, reason) => withdraw(ledger.deny(id, by, reason), () => store.deny(id, by, reason)),
    async consume(id, nonce) {
      const fresh = ledger.refresh();
      if (!fresh.ok) return unreadable(fresh);
      const denial = ledger.denial(id);
      if (denial) return fail({ failure: "withdrawn", detail: `request ${id} was denied by ${denial.by}` });
      if (ledger.spent(nonce)) return fail({ failure: "consumed", detail: `request ${id} was already used` });
      const taken = await store.consume(id, nonce);
      if (!taken.ok) return taken;
      const claimed = ledger.spend(nonce, id);
      if (!claimed.ok) return unreadable(claimed);
      if (!claimed.value) return fail({ failure: "consumed", detail: `request ${id} was already used` });
      return taken;
    },
    async consumeNonce(nonce, expiresAt) {
      const fresh = ledger.refresh();
      if (!fresh.ok) return unreadable(fresh);
      if (ledger.spent(nonce)) return ok(false);
      const recorded = await store.consumeNonce(nonce, expiresAt);
      if (!recorded.ok || !recorded.value) return recorded;
      const claimed = ledger.spend(nonce, "");
      return claimed.ok ? claimed : unreadable(claimed);
    },
    openLease: (lease) => store.openLease(lease),
    async takeLeaseRead(session, idleMs, count) {
      const taken = await read(store.takeLeaseRead(session, idleMs, count), (lease) => lease);
      if (!taken.ok || taken.value === null) return taken;
      if (!ledger.leaseRevoked(taken.value.id, taken.value.session, taken.value.createdAt)) return taken;
      // The ledger revoked it and the database forgot: tell the database again, hand out nothing.
      await store.revoke(taken.value.id);
      return ok(null);
    },
    getLease: (id) => read(store.getLease(id), (lease) => (lease ? asRevoked(lease) : null)),
    async changeCounter() {
      const db = await store.changeCounter();
      if (!db.ok) return db;
      const fresh = ledger.refresh();
      if (!fresh.ok) return unreadable(fresh);
      if (db.value !== lastDb || ledger.version() !== lastLedger) {
        lastDb = db.value;
        lastLedger = ledger.version();
        epoch += 1;
      }
      return ok(epoch);
    },
    listLeases: () => read(store.listLeases(), (leases) => leases.map(asRevoked)),
    revoke: (idOrSession) => withdraw(ledger.revoke(idOrSession), () => store.revoke(idOrSession)),
    revokeAll: () => withdraw(ledger.revokeAll(), () => store.revokeAll()),
    touchSession: (id, clientId) => store.touchSession(id, clientId),
    endSession: (id) => store.endSession(id),
    listSessions: () => store.listSessions(),
    prune: (graceMs) => store.prune(graceMs),
    async close() {
      await store.close();
      ledger.close();
    },
  };
}
