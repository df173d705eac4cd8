import {
  type ApprovalVerifier,
  actDigest,
  type ConsentAct,
  type ConsentLedger,
  type ConsentRequest,
  type ConsentStore,
  type StoreResult,
} from "../consent/index.js";
import type { Clock, Result, Tier } from "../core/index.js";
import { type ConsumeDeps, consumeApproval } from "./consent-consume.js";
import { type LeaseBook, leasedRead, newLeaseBook } from "./consent-leases.js";
import { sleep, withFollowUps } from "./consent-parts.js";
import { challengeVerdict, deniedVerdict, isRead, refusal, storeFailure } from "./consent-verdicts.js";
import type { CallIdentity, Gate, GateVerdict, ToolContext } from "./tool.js";

/** The act a call would perform, or why it cannot be described for a signature. */
type ActResult = Result<ConsentAct, string>;

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

/**
 * Requests that may wait for a decision at once, per consent session and for the whole store: a
 * model cannot bury one harmful act among thousands in the operator's queue (docs/consent.md).
 */
const MAX_PENDING = { session: 16, total: 128 } as const;

const DEFAULT_POLL_MS = 250;
const PRUNE_EVERY_MS = 10 * 60 * 1000;
/** What expired is kept this long after, so `relay-shell consent list` can still explain a refusal. */
const PRUNE_GRACE_MS = 60 * 60 * 1000;
const PROGRESS_EVERY_MS = 1000;

/** The consent gate's state: its dependencies, the leases it opened, the client of each session. */
interface GateState extends ConsumeDeps {
  actOf: ConsentGateDeps["actOf"];
  settings: ConsentGateSettings;
  pollMs: number;
  pause: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * The client of each live consent session, as its first call named it: over stdio a stated
   * client id only labels calls, and a session keeps the one it started with.
   */
  clients: Map<string, string>;
  leases: LeaseBook;
  lastPrune: number;
}

/**
 * Human consent as a gate (docs/consent.md, ADR 0022). It sees only calls
 * that policy and the Tier-3 broker admitted. Tier 0 passes; any other call
 * runs only on an approval a human signed for exactly this act (its bound
 * arguments), consumed once, or, for a read, on an open lease of this
 * consent session. Everything that cannot be established is a refusal.
 */
export function createConsentGate(deps: ConsentGateDeps): ConsentGate {
  const state: GateState = {
    store: deps.store,
    actOf: deps.actOf,
    describe: deps.describe,
    verifier: deps.verifier,
    clock: deps.clock,
    settings: deps.settings,
    pollMs: deps.pollMs ?? DEFAULT_POLL_MS,
    pause: deps.sleep ?? sleep,
    clients: new Map(),
    leases: newLeaseBook(deps.store, deps.ledger),
    lastPrune: deps.clock.now(),
  };
  return {
    name: "consent",
    async endSession(session) {
      state.clients.delete(session);
      state.leases.reserves.delete(session);
      await state.store.endSession(session);
    },
    check: (call, ctx) => checkCall(state, call, ctx),
  };
}

/** The consent gate's answer for one call. */
async function checkCall(state: GateState, call: CallIdentity, ctx: ToolContext): Promise<GateVerdict> {
  // A call whose policy does not ask for consent passes (docs/policy.md).
  if (!call.policy.consent) return { kind: "proceed" };
  const g = withLeaseMode(state, call.policy.consentLeaseMode);
  // The fixed read-only tools pass; a command proven to only read is a read, and reads need a
  // lease or a signature like any act (docs/consent.md).
  if (call.tier === 0 && !isRead(call)) return { kind: "proceed" };
  await pruneNow(state, state.clock.now());
  const session = call.session;
  const clientId = clientOf(g, session, ctx.clientId);

  // A read may ride on a lease this consent session opened with a signed read (taking a read
  // also marks the session as seen). Anything above Tier 0 may write, so it never does.
  if (isRead(call) && g.settings.leaseMode !== "manual") {
    const leased = await leasedRead(g.leases, session, g.settings.sessionIdleSeconds * 1000, g.clock.now());
    if (leased) return leased;
  }

  const described = await g.actOf(call.tool, call.args, { tier: call.tier, clientId: ctx.clientId });
  if (!described.ok) {
    return refusal(
      `this act cannot be described for a signature (${described.error}); it is not run unsigned`,
    );
  }
  // Verify and rollback commands bound at arm time run with the call: the human approves them too.
  const act = call.followUps ? withFollowUps(described.value, call.followUps) : described.value;
  return decideAct(g, call, ctx, act, clientId);
}

/** The gate as this call's policy sees it: its lease mode, when it names one, in place of the settings'. */
function withLeaseMode(g: GateState, mode: ConsentGateSettings["leaseMode"] | undefined): GateState {
  if (mode === undefined || mode === g.settings.leaseMode) return g;
  // The same state (the leases, the clients) read under another lease mode; only the setting differs.
  return Object.assign(Object.create(g) as GateState, { settings: { ...g.settings, leaseMode: mode } });
}

/** The client a consent session started with; its first call names it. */
function clientOf(g: GateState, session: string, stated: string): string {
  let clientId = g.clients.get(session);
  if (clientId === undefined) {
    clientId = stated;
    g.clients.set(session, clientId);
  }
  return clientId;
}

/** An approval for exactly this act is consumed; otherwise its request is found or made, and waited on. */
async function decideAct(
  g: GateState,
  call: CallIdentity,
  ctx: ToolContext,
  act: ConsentAct,
  clientId: string,
): Promise<GateVerdict> {
  const digest = actDigest(act);
  const touched = await g.store.touchSession(call.session, clientId);
  if (!touched.ok) return storeFailure(touched.error);

  const approved = await g.store.findApproved(digest);
  if (!approved.ok) return storeFailure(approved.error);
  if (approved.value) return consumeApproval(g, approved.value, act, call);

  const open = await openRequest(g, act, digest, call, clientId);
  if ("verdict" in open) return open.verdict;
  let request = open.request;
  if (g.settings.waitSeconds > 0) {
    const decided = await awaitDecision(g, request.id, ctx);
    if (!decided.ok) return storeFailure(decided.error);
    if (decided.value.status === "approved") return consumeApproval(g, decided.value, act, call);
    if (decided.value.status === "denied") return deniedVerdict(decided.value);
    request = decided.value;
  }
  return challengeVerdict(request, g.clock.now(), g.describe);
}

/**
 * The request of this session for this act that still waits, or a new one; a refusal when it
 * was denied, when the queue is full or when the store cannot answer.
 */
async function openRequest(
  g: GateState,
  act: ConsentAct,
  digest: string,
  call: CallIdentity,
  clientId: string,
): Promise<{ request: ConsentRequest } | { verdict: GateVerdict }> {
  const open = await g.store.findOpen(digest, call.session);
  if (!open.ok) return { verdict: storeFailure(open.error) };
  const found = open.value;
  if (found?.status === "denied") return { verdict: deniedVerdict(found) };
  if (found) return { request: found };
  const created = await g.store.createRequest({
    act,
    actDigest: digest,
    basis: call.basis,
    session: call.session,
    clientId,
    ttlSeconds: g.settings.approvalTtlSeconds,
    maxPending: MAX_PENDING,
  });
  if (!created.ok && created.error.failure === "full") {
    const reason = `${created.error.detail}; nothing ran and no new request was made, ask the operator to decide`;
    return { verdict: refusal(reason, { pending_limit: MAX_PENDING }) };
  }
  if (!created.ok) return { verdict: storeFailure(created.error) };
  return { request: created.value };
}

/** Wait for the human's decision on a pending request, telling the client while it waits. */
async function awaitDecision(
  g: GateState,
  id: string,
  ctx: ToolContext,
): Promise<StoreResult<ConsentRequest>> {
  const { clock, settings } = g;
  const start = clock.monotonic();
  const limitMs = settings.waitSeconds * 1000;
  let lastProgress = -PROGRESS_EVERY_MS;
  for (;;) {
    const current = await g.store.getRequest(id);
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
    await g.pause(Math.min(g.pollMs, limitMs - elapsed), ctx.signal);
  }
}

/** Drop what expired long ago, at most every PRUNE_EVERY_MS, on the back of a call. */
async function pruneNow(g: GateState, now: number): Promise<void> {
  if (now - g.lastPrune < PRUNE_EVERY_MS) return;
  g.lastPrune = now;
  await g.store.prune(PRUNE_GRACE_MS);
}
