import type { ConsentLease, ConsentLedger, ConsentStore } from "../consent/index.js";
import { leaseVerdict, storeFailure } from "./consent-verdicts.js";
import type { GateVerdict } from "./tool.js";

/** Reads a session takes from its lease in the store at a time. */
const LEASE_BLOCK = 8;

/**
 * This process's own copy of a lease it opened. A consent session lives in one process, so its
 * leases were opened here. The store's count is the shared one; this copy of each lease's bounds
 * means a lease row written into the store by someone else, or a budget or expiry raised there,
 * is never honoured.
 */
interface OwnLease {
  remaining: number;
  expiresAt: number;
  session: string;
  createdAt: number;
}

/**
 * Reads a session took from its lease in the store and has not used yet: the store hands them
 * out in blocks (one transaction per block), and while nobody else committed to the store since
 * (its change counter holds still) nothing the operator does can have revoked them.
 */
interface Reserve {
  lease: string;
  /** Reads taken from the store and not used yet. */
  left: number;
  /** The store's change counter when they were taken or last confirmed. */
  version: number;
  lastUse: number;
}

/** The leases of the consent gate: what it opened, and the reads each session holds in reserve. */
export interface LeaseBook {
  readonly store: ConsentStore;
  /** Withdrawals the operator made, checked against this process's own record of each lease. */
  readonly ledger: Pick<ConsentLedger, "leaseRevoked"> | undefined;
  readonly opened: Map<string, OwnLease>;
  readonly reserves: Map<string, Reserve>;
}

export function newLeaseBook(
  store: ConsentStore,
  ledger: Pick<ConsentLedger, "leaseRevoked"> | undefined,
): LeaseBook {
  return { store, ledger, opened: new Map(), reserves: new Map() };
}

/** Keeps this process's copy of a lease just opened, dropping the copies that are spent or expired. */
export function rememberOpened(book: LeaseBook, lease: ConsentLease, session: string, now: number): void {
  for (const [id, own] of book.opened) {
    if (own.remaining <= 0 || own.expiresAt <= now) book.opened.delete(id);
  }
  book.opened.set(lease.id, {
    remaining: lease.remaining,
    expiresAt: lease.expiresAt,
    session,
    createdAt: now,
  });
}

/** A read of this session under its lease, or null when it has none; a store failure refuses. */
export async function leasedRead(
  book: LeaseBook,
  session: string,
  idleMs: number,
  now: number,
): Promise<GateVerdict | null> {
  const kept = await keptReserve(book, session, idleMs, now);
  if ("verdict" in kept) return kept.verdict;
  let reserve = kept.reserve;
  if (!reserve) {
    const fresh = await freshReserve(book, session, idleMs, now);
    if ("verdict" in fresh) return fresh.verdict;
    if (!fresh.reserve) return null;
    reserve = fresh.reserve;
  }
  const own = takeOwnLease(book, reserve.lease, now);
  if (!own) {
    book.reserves.delete(session);
    return null;
  }
  reserve.left -= 1;
  reserve.lastUse = now;
  return leaseVerdict(reserve.lease, own.remaining);
}

/** A step that found a reserve (or none), or a refusal that ends the read. */
type ReserveStep = { reserve: Reserve | undefined } | { verdict: GateVerdict };

/** The session's reserve while it may still be used: not spent, not idle, and not withdrawn since it was taken. */
async function keptReserve(
  book: LeaseBook,
  session: string,
  idleMs: number,
  now: number,
): Promise<ReserveStep> {
  const reserve = book.reserves.get(session);
  if (!reserve) return { reserve: undefined };
  if (reserve.left <= 0 || now - reserve.lastUse > idleMs) {
    book.reserves.delete(session);
    return { reserve: undefined };
  }
  const version = await book.store.changeCounter();
  if (!version.ok) return { verdict: storeFailure(version.error) };
  if (version.value === reserve.version) return { reserve };
  // Someone else wrote: the operator may have revoked this lease or ended the session.
  const current = await book.store.getLease(reserve.lease);
  if (!current.ok) return { verdict: storeFailure(current.error) };
  if (!current.value || current.value.revoked) {
    book.reserves.delete(session);
    return { reserve: undefined };
  }
  reserve.version = version.value;
  return { reserve };
}

/** A new block of reads taken from the session's lease in the store; none when it has no usable lease. */
async function freshReserve(
  book: LeaseBook,
  session: string,
  idleMs: number,
  now: number,
): Promise<ReserveStep> {
  // Looked at before the transaction, so a commit by anyone else after it shows as a change.
  const version = await book.store.changeCounter();
  if (!version.ok) return { verdict: storeFailure(version.error) };
  const taken = await book.store.takeLeaseRead(session, idleMs, LEASE_BLOCK);
  if (!taken.ok) return { verdict: storeFailure(taken.error) };
  if (!taken.value) return { reserve: undefined };
  const reserve = { lease: taken.value.id, left: taken.value.taken, version: version.value, lastUse: now };
  book.reserves.set(session, reserve);
  return { reserve };
}

/** One read off this process's own copy of the lease; null when the copy is spent, expired or withdrawn. */
function takeOwnLease(book: LeaseBook, id: string, now: number): { remaining: number } | null {
  const own = book.opened.get(id);
  if (!own || own.remaining <= 0 || own.expiresAt <= now) return null;
  if (book.ledger?.leaseRevoked(id, own.session, own.createdAt)) {
    book.opened.delete(id);
    return null;
  }
  own.remaining -= 1;
  return own;
}
