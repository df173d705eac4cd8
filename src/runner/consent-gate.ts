import {
  type ApprovalVerifier,
  actDigest,
  type ConsentAct,
  type ConsentLedger,
  type ConsentRequest,
  type ConsentStore,
  requestPayload,
  type StoreResult,
} from "../consent/index.js";
import type { Clock, Tier } from "../core/index.js";
import { sleep, withFollowUps } from "./consent-parts.js";
import type { CallIdentity, Gate, GateVerdict, ToolContext } from "./tool.js";

/**
 * A read, as consent counts it: a command the classifier proved to only read (Tier 0,
 * `proven_read`). A Tier-1 command is not one: it may write a file that a later call runs.
 */
function isRead(call: CallIdentity): boolean {
  return call.tier === 0 && call.basis === "proven_read";
}

/** The act a call would perform, or why it cannot be described for a signature. */
type ActResult = { ok: true; act: ConsentAct } | { ok: false; reason: string };

export interface ConsentGateSettings {
  leaseMode: "manual" | "window" | "session";
  leaseTtlSeconds: number;
  leaseBudget: number;
  sessionIdleSeconds: number;
  approvalTtlSeconds: number;
  /** Seconds a call waits for the decision before answering CONSENT REQUIRED (0 = answer at once). */
  waitSeconds: number;
}

export interface ConsentGateDeps {
  store: ConsentStore;
  /** The table of consequential arguments: what this call really does. */
  actOf(tool: string, args: unknown, call: { tier: Tier; clientId: string }): Promise<ActResult>;
  /** The readable text of an act, for the caller and the human. */
  describe(request: ConsentRequest, expiresInSeconds: number): string;
  verifier: ApprovalVerifier;
  clock: Clock;
  settings: ConsentGateSettings;
  /** How often a waiting call looks for the decision (ms). */
  pollMs?: number;
  /** How a waiting call waits between looks, injected like the clock (tests advance a fake one). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The operator's withdrawals (docs/adr/0037-consent-withdrawals-in-an-append-only-ledger.md):
   * a lease opened here is checked against them with this process's own record of when it opened,
   * which the relay's account cannot edit. The store is expected to read it fresh (withLedger).
   */
  ledger?: Pick<ConsentLedger, "leaseRevoked">;
}

/** The consent gate, and the end of a consent session when its MCP session ends. */
export interface ConsentGate extends Gate {
  /** Ends the consent session in the store too; resolves when the store answered (it never rejects). */
  endSession(session: string): Promise<void>;
}

/** Reads a session takes from its lease in the store at a time. */
const LEASE_BLOCK = 8;
/**
 * Requests that may wait for a decision at once, per consent session and for the whole store: a
 * model cannot bury one harmful act among thousands in the operator's queue (docs/consent.md).
 */
const MAX_PENDING = { session: 16, total: 128 } as const;

interface Reserve {
  lease: string;
  /** Reads taken from the store and not used yet. */
  left: number;
  /** The store's change counter when they were taken or last confirmed. */
  version: number;
  lastUse: number;
}

const DEFAULT_POLL_MS = 250;
const PRUNE_EVERY_MS = 10 * 60 * 1000;
/** What expired is kept this long after, so `relay-shell consent list` can still explain a refusal. */
const PRUNE_GRACE_MS = 60 * 60 * 1000;
const PROGRESS_EVERY_MS = 1000;

/**
 * Human consent as a gate (docs/consent.md, ADR 0022). It sees only calls
 * that policy and the Tier-3 broker admitted. Tier 0 passes; any other call
 * runs only on an approval a human signed for exactly this act (its bound
 * arguments), consumed once, or, for a read, on an open lease of this
 * consent session. Everything that cannot be established is a refusal.
 */
export function createConsentGate(deps: ConsentGateDeps): ConsentGate {
  const { store, clock, settings } = deps;
  const pollMs = deps.pollMs ?? DEFAULT_POLL_MS;
  const pause = deps.sleep ?? sleep;
  // The client of each live consent session, as its first call named it: over stdio a stated
  // client id only labels calls, and a session keeps the one it started with.
  const clients = new Map<string, string>();
  let lastPrune = clock.now();
  // A consent session lives in one process, so its leases were opened here. The store's count is
  // the shared one; this process keeps its own copy of each lease's bounds, so a lease row written
  // into the store by someone else, or a budget or expiry raised there, is never honoured.
  const openedLeases = new Map<
    string,
    { remaining: number; expiresAt: number; session: string; createdAt: number }
  >();

  function takeOwnLease(id: string, now: number): { remaining: number } | null {
    const own = openedLeases.get(id);
    if (!own || own.remaining <= 0 || own.expiresAt <= now) return null;
    if (deps.ledger?.leaseRevoked(id, own.session, own.createdAt)) {
      openedLeases.delete(id);
      return null;
    }
    own.remaining -= 1;
    return own;
  }
  // Reads a session took from its lease in the store and has not used yet: the store hands them
  // out in blocks (one transaction per block), and while nobody else committed to the store since
  // (its change counter holds still) nothing the operator does can have revoked them.
  const reserves = new Map<string, Reserve>();

  /** A read of this session under its lease, or null when it has none; a store failure refuses. */
  async function leasedRead(session: string, now: number): Promise<GateVerdict | null> {
    const idleMs = settings.sessionIdleSeconds * 1000;
    let reserve = reserves.get(session);
    if (reserve && (reserve.left <= 0 || now - reserve.lastUse > idleMs)) {
      reserves.delete(session);
      reserve = undefined;
    }
    if (reserve) {
      const version = await store.changeCounter();
      if (!version.ok) return storeRefusal(version);
      if (version.value !== reserve.version) {
        // Someone else wrote: the operator may have revoked this lease or ended the session.
        const current = await store.getLease(reserve.lease);
        if (!current.ok) return storeRefusal(current);
        if (!current.value || current.value.revoked) {
          reserves.delete(session);
          reserve = undefined;
        } else {
          reserve.version = version.value;
        }
      }
    }
    if (!reserve) {
      // Looked at before the transaction, so a commit by anyone else after it shows as a change.
      const version = await store.changeCounter();
      if (!version.ok) return storeRefusal(version);
      const taken = await store.takeLeaseRead(session, idleMs, LEASE_BLOCK);
      if (!taken.ok) return storeRefusal(taken);
      if (!taken.value) return null;
      reserve = { lease: taken.value.id, left: taken.value.taken, version: version.value, lastUse: now };
      reserves.set(session, reserve);
    }
    const own = takeOwnLease(reserve.lease, now);
    if (!own) {
      reserves.delete(session);
      return null;
    }
    reserve.left -= 1;
    reserve.lastUse = now;
    return {
      kind: "proceed",
      action: "consent_lease",
      auditExtra: { consent: { lease: reserve.lease, remaining: own.remaining } },
    };
  }

  function refuse(reason: string, extra?: Record<string, unknown>): GateVerdict {
    return {
      kind: "refuse",
      reason: `consent: ${reason}`,
      action: "consent_refuse",
      ...(extra ? { auditExtra: { consent: extra } } : {}),
    };
  }

  function storeRefusal<T>(result: StoreResult<T>): GateVerdict | null {
    if (result.ok) return null;
    return result.failure === "locked"
      ? refuse(`the consent store is busy (${result.detail}); nothing ran, try again`)
      : refuse(`the consent store cannot be used (${result.failure}: ${result.detail}); nothing ran`);
  }

  function challenge(request: ConsentRequest, note?: string): GateVerdict {
    const seconds = Math.max(0, Math.ceil((request.expiresAt - clock.now()) / 1000));
    const waiting = note ? `\nRequest ${request.id} still waits for a valid approval: ${note}.` : "";
    return {
      kind: "challenge",
      text: `[CONSENT REQUIRED id=${request.id} expires_in=${seconds}s]\n${deps.describe(request, seconds)}${waiting}`,
      action: "consent_request",
      outcome: "consent_required",
      auditExtra: { consent: { request: request.id } },
    };
  }

  /** Verify the approval against the live act, consume it once, open a read lease where the mode says so. */
  async function consume(request: ConsentRequest, act: ConsentAct, call: CallIdentity): Promise<GateVerdict> {
    const now = clock.now();
    const ref = { request: request.id };
    if (request.expiresAt <= now) return refuse(`the approval of request ${request.id} has expired`, ref);
    // Rebuilt from the live call: a payload edited in the store cannot match a signature.
    const payload = requestPayload(request, store.instanceId, act);
    if (payload !== request.payload) {
      return refuse(`request ${request.id} in the store does not describe this act; it is not used`, ref);
    }
    if (!request.approval) return refuse(`request ${request.id} carries no approval`, ref);
    const verified = await deps.verifier.verify(request.approval, payload, now);
    // An approval that does not verify is no approval: the request waits for a valid one.
    if (!verified.ok) return challenge(request, `its stored approval does not verify (${verified.reason})`);
    const taken = await store.consume(request.id, request.nonce);
    if (!taken.ok) {
      if (taken.failure === "consumed") {
        return refuse(`the approval of request ${request.id} was already used`, ref);
      }
      if (taken.failure === "withdrawn") return refuse(`${taken.detail}; nothing ran`, ref);
      return storeRefusal(taken) ?? refuse("the approval could not be consumed", ref);
    }
    const record: Record<string, unknown> = {
      request: request.id,
      approver: verified.signer,
      key: verified.key,
      channel: verified.channel,
    };
    // Only a read opens a lease, and a read is what the classifier proved: Tier 0 (ADR 0033).
    if (isRead(call) && settings.leaseMode !== "manual") {
      const lease = await store.openLease({
        session: call.session,
        openedBy: request.id,
        mode: settings.leaseMode,
        createdAt: now,
        expiresAt:
          settings.leaseMode === "window" ? now + settings.leaseTtlSeconds * 1000 : Number.MAX_SAFE_INTEGER,
        remaining: settings.leaseBudget,
      });
      // The read itself was approved; a lease that could not be opened only means the next read asks again.
      if (lease.ok) {
        for (const [id, own] of openedLeases) {
          if (own.remaining <= 0 || own.expiresAt <= now) openedLeases.delete(id);
        }
        openedLeases.set(lease.value.id, {
          remaining: lease.value.remaining,
          expiresAt: lease.value.expiresAt,
          session: call.session,
          createdAt: now,
        });
        record.lease = lease.value.id;
      }
    }
    return {
      kind: "proceed",
      action: "consent_execute",
      auditExtra: { consent: record },
      consent: {
        request: request.id,
        nonce: request.nonce,
        payload,
        signature: request.approval.proof,
        signer: verified.signer,
      },
    };
  }

  /** Wait for the human's decision on a pending request, telling the client while it waits. */
  async function awaitDecision(id: string, ctx: ToolContext): Promise<StoreResult<ConsentRequest>> {
    const start = clock.monotonic();
    const limitMs = settings.waitSeconds * 1000;
    let lastProgress = -PROGRESS_EVERY_MS;
    for (;;) {
      const current = await store.getRequest(id);
      if (!current.ok || current.value.status !== "pending") return current;
      const elapsed = clock.monotonic() - start;
      if (elapsed >= limitMs || ctx.signal.aborted || current.value.expiresAt <= clock.now()) return current;
      if (elapsed - lastProgress >= PROGRESS_EVERY_MS) {
        lastProgress = elapsed;
        ctx.progress(
          Math.floor(elapsed / 1000),
          settings.waitSeconds,
          `waiting for a human to approve consent request ${id}`,
        );
      }
      await pause(Math.min(pollMs, limitMs - elapsed), ctx.signal);
    }
  }

  /** Drop what expired long ago, at most every PRUNE_EVERY_MS, on the back of a call. */
  async function pruneNow(now: number): Promise<void> {
    if (now - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = now;
    await store.prune(PRUNE_GRACE_MS);
  }

  return {
    name: "consent",
    async endSession(session) {
      clients.delete(session);
      reserves.delete(session);
      await store.endSession(session);
    },
    async check(call, ctx) {
      // The fixed read-only tools pass; a command proven to only read is a read, and reads need a
      // lease or a signature like any act (docs/consent.md).
      if (call.tier === 0 && !isRead(call)) return { kind: "proceed" };
      await pruneNow(clock.now());
      const session = call.session;
      let clientId = clients.get(session);
      if (clientId === undefined) {
        clientId = ctx.clientId;
        clients.set(session, clientId);
      }

      // A read may ride on a lease this consent session opened with a signed read (taking a read
      // also marks the session as seen). Anything above Tier 0 may write, so it never does.
      if (isRead(call) && settings.leaseMode !== "manual") {
        const leased = await leasedRead(session, clock.now());
        if (leased) return leased;
      }

      const described = await deps.actOf(call.tool, call.args, { tier: call.tier, clientId: ctx.clientId });
      if (!described.ok) {
        return refuse(
          `this act cannot be described for a signature (${described.reason}); it is not run unsigned`,
        );
      }
      // Verify and rollback commands bound at arm time run with the call: the human approves them too.
      const act = call.followUps ? withFollowUps(described.act, call.followUps) : described.act;
      const digest = actDigest(act);
      const touched = await store.touchSession(session, clientId);
      const sessionFailure = storeRefusal(touched);
      if (sessionFailure) return sessionFailure;

      const approved = await store.findApproved(digest);
      if (!approved.ok) return storeRefusal(approved) as GateVerdict;
      if (approved.value) return consume(approved.value, act, call);

      const open = await store.findOpen(digest, session);
      if (!open.ok) return storeRefusal(open) as GateVerdict;
      let request = open.value;
      if (request?.status === "denied") return deniedVerdict(request);
      if (!request) {
        const created = await store.createRequest({
          act,
          actDigest: digest,
          basis: call.basis,
          session,
          clientId,
          ttlSeconds: settings.approvalTtlSeconds,
          maxPending: MAX_PENDING,
        });
        if (!created.ok && created.failure === "full") {
          return refuse(
            `${created.detail}; nothing ran and no new request was made, ask the operator to decide`,
            { pending_limit: MAX_PENDING },
          );
        }
        if (!created.ok) return storeRefusal(created) as GateVerdict;
        request = created.value;
      }
      if (settings.waitSeconds > 0) {
        const decided = await awaitDecision(request.id, ctx);
        if (!decided.ok) return storeRefusal(decided) as GateVerdict;
        if (decided.value.status === "approved") return consume(decided.value, act, call);
        if (decided.value.status === "denied") return deniedVerdict(decided.value);
        request = decided.value;
      }
      return challenge(request);
    },
  };

  function deniedVerdict(request: ConsentRequest): GateVerdict {
    const by = request.denial?.by ? ` by ${request.denial.by}` : "";
    const why = request.denial?.reason ? `: ${request.denial.reason}` : "";
    return refuse(`request ${request.id} was denied${by}${why}`, { request: request.id });
  }
}
