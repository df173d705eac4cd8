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
const TOKEN_BYTES = 16;

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
 * The in-memory token store behind the Tier-3 gate. Nothing is persisted: a
 * restart drops every token, and the caller simply plans again. Entries are
 * keyed by the digest of the token, so a dump of this process's heap holds no
 * token that could be replayed.
 */
export function createConfirmBroker(config: ConfirmBrokerConfig, deps: ConfirmBrokerDeps): ConfirmBroker {
  const ttlMs = Math.max(1, Math.floor(config.ttlSeconds)) * 1000;
  const maxEntries = Math.max(1, config.maxEntries ?? DEFAULT_MAX_TOKENS);
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

  return {
    ttlSeconds: ttlMs / 1000,
    rollback: config.rollback,

    plan(operation: PlannedOperation): string {
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
    },

    inspect(token: string): TokenView | null {
      const entry = live(token);
      if (!entry) return null;
      return { tool: entry.tool, args: entry.args, armed: entry.armed, followUps: entry.followUps };
    },

    arm(token: string, followUps: FollowUpPlan | null): ArmOutcome {
      const plan = hasFollowUps(followUps) ? { ...followUps } : null;
      if (plan && !config.rollback) {
        throw new Error("follow-up commands offered to a broker without rollback/verify pairing");
      }
      const entry = live(token);
      if (!entry) return { kind: "unknown" };
      const bound = foldFollowUps(entry.operation, plan);
      if (entry.armed) {
        // Re-arming is harmless only if it changes nothing: the follow-ups are fixed at the first arm.
        return entry.bound === bound ? { kind: "armed", followUps: entry.followUps } : { kind: "conflict" };
      }
      entry.armed = true;
      entry.followUps = plan ? Object.freeze(plan) : null;
      entry.bound = bound;
      return { kind: "armed", followUps: entry.followUps };
    },

    consume(operation: OperationIdentity) {
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
          restore() {
            if (!entries.has(key)) entries.set(key, entry);
            sweep();
          },
        };
      }
      return null;
    },

    pending(): number {
      sweep();
      return entries.size;
    },
  };
}
