import type { Clock, Ids } from "../core/index.js";
import { FINGERPRINT_HEX, foldFollowUps, hasFollowUps, opHash, tokenKey } from "./op-key.js";
import type {
  ArmOutcome,
  ConfirmBroker,
  ConfirmBrokerConfig,
  FollowUpPlan,
  OperationIdentity,
  PlannedOperation,
  TokenView,
} from "./types.js";

export interface ConfirmBrokerDeps {
  /** Expiry uses the monotonic clock: a wall-clock step can neither revive nor kill a token. */
  clock: Clock;
  ids: Ids;
}

const DEFAULT_MAX_TOKENS = 256;
/** 128 random bits: 22 base64url characters. */
export const TOKEN_BYTES = 16;

/** The lifetime of a token in milliseconds: whole seconds, at least one. */
export function ttlMsOf(config: ConfirmBrokerConfig): number {
  return Math.max(1, Math.floor(config.ttlSeconds)) * 1000;
}

/** Live tokens kept at most, whichever store keeps them. */
export function maxTokensOf(config: ConfirmBrokerConfig): number {
  return Math.max(1, config.maxEntries ?? DEFAULT_MAX_TOKENS);
}

/**
 * The follow-ups an arm binds: null for an empty plan, else a copy the caller cannot change.
 * Follow-ups offered to a broker without pairing are a bug of the caller, not a user error.
 */
export function armedPlan(config: ConfirmBrokerConfig, followUps: FollowUpPlan | null): FollowUpPlan | null {
  const plan = hasFollowUps(followUps) ? { ...followUps } : null;
  if (plan && !config.rollback) {
    throw new Error("follow-up commands offered to a broker without rollback/verify pairing");
  }
  return plan ? Object.freeze(plan) : null;
}

interface Entry {
  operation: string;
  tool: string;
  args: unknown;
  expiresAt: number;
  armed: boolean;
  followUps: FollowUpPlan | null;
  /** foldFollowUps(operation, followUps), fixed at the first arm. */
  bound: string | null;
}

/**
 * The in-memory token store behind the Tier-3 gate, for one relay. Nothing is
 * persisted: a restart drops every token, and the caller simply plans again.
 * Entries are keyed by the digest of the token, so a dump of this process's
 * heap holds no token that could be replayed. Each method does its work before
 * it first yields, so a check-and-burn is atomic on the event loop: two
 * identical calls in flight cannot spend one token.
 */
export function createConfirmBroker(config: ConfirmBrokerConfig, deps: ConfirmBrokerDeps): ConfirmBroker {
  const ttlMs = ttlMsOf(config);
  const maxEntries = maxTokensOf(config);
  // A Map iterates in insertion order, which is creation order: consume() relies on it.
  const entries = new Map<string, Entry>();

  /** Drop expired entries, then the soonest-expiring ones while over the bound. */
  function sweep(): void {
    const now = deps.clock.monotonic();
    for (const [key, entry] of entries) if (now >= entry.expiresAt) entries.delete(key);
    while (entries.size > maxEntries) {
      let soonest: string | null = null;
      let at = Number.POSITIVE_INFINITY;
      for (const [key, entry] of entries) {
        if (entry.expiresAt < at) {
          at = entry.expiresAt;
          soonest = key;
        }
      }
      if (soonest === null) break;
      entries.delete(soonest);
    }
  }

  function live(token: string): Entry | null {
    sweep();
    if (token === "") return null;
    return entries.get(tokenKey(token)) ?? null;
  }

  function plan(operation: PlannedOperation): string {
    sweep();
    let token = deps.ids.token(TOKEN_BYTES);
    // 128 random bits do not collide; a broken `ids` must not let one token stand for two plans.
    while (entries.has(tokenKey(token))) token = deps.ids.token(TOKEN_BYTES);
    entries.set(tokenKey(token), {
      operation: opHash(operation),
      tool: operation.tool,
      args: operation.args,
      expiresAt: deps.clock.monotonic() + ttlMs,
      armed: false,
      followUps: null,
      bound: null,
    });
    sweep();
    return token;
  }

  function arm(token: string, followUps: FollowUpPlan | null): ArmOutcome {
    const plan = armedPlan(config, followUps);
    const entry = live(token);
    if (!entry) return { kind: "unknown" };
    const bound = foldFollowUps(entry.operation, plan);
    if (entry.armed) {
      // Re-arming is harmless only if it changes nothing: the follow-ups are fixed at the first arm.
      return entry.bound === bound ? { kind: "armed", followUps: entry.followUps } : { kind: "conflict" };
    }
    entry.armed = true;
    entry.followUps = plan;
    entry.bound = bound;
    return { kind: "armed", followUps: entry.followUps };
  }

  function consume(operation: OperationIdentity) {
    sweep();
    const wanted = opHash(operation);
    for (const [key, entry] of entries) {
      if (!entry.armed || entry.operation !== wanted) continue;
      // The bound identity is recomputed, not trusted: follow-ups that drifted since arming never run.
      if (entry.bound !== foldFollowUps(entry.operation, entry.followUps)) continue;
      entries.delete(key);
      // The key is sha256(token), so its head is the audited fingerprint.
      return {
        fingerprint: key.slice(0, FINGERPRINT_HEX),
        followUps: entry.followUps,
        async restore() {
          if (!entries.has(key)) entries.set(key, entry);
          sweep();
        },
      };
    }
    return null;
  }

  return {
    ttlSeconds: ttlMs / 1000,
    rollback: config.rollback,
    plan: async (operation) => plan(operation),
    async inspect(token): Promise<TokenView | null> {
      const entry = live(token);
      if (!entry) return null;
      return { tool: entry.tool, args: entry.args, armed: entry.armed, followUps: entry.followUps };
    },
    arm: async (token, followUps) => arm(token, followUps),
    consume: async (operation) => consume(operation),
    async pending() {
      sweep();
      return entries.size;
    },
  };
}
