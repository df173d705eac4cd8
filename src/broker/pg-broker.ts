import type pg from "pg";
import { type Clock, fail, type Ids, ok, RelayError, type Result } from "../core/index.js";
import type { PgState } from "../state/index.js";
import { armedPlan, maxTokensOf, TOKEN_BYTES, ttlMsOf } from "./broker.js";
import { FINGERPRINT_HEX, foldFollowUps, opHash, tokenKey } from "./op-key.js";
import type {
  ArmOutcome,
  ConfirmBroker,
  ConfirmBrokerConfig,
  FollowUpPlan,
  OperationIdentity,
  PlannedOperation,
  TokenView,
} from "./types.js";

interface PgConfirmBrokerDeps {
  /**
   * Expiry is epoch milliseconds from this clock's wall time, written by the relay that plans
   * and compared by the relay that arms or consumes, not the database's clock: the same clock
   * the consent store's expiry runs on, and one the tests can drive. The relays keep their clocks
   * in step (NTP); a skew between two of them shortens or lengthens a token's life by that much.
   */
  clock: Clock;
  ids: Ids;
}

/**
 * The transaction-level advisory lock that makes sweeping, adding a token and trimming to the
 * bound one step across relays: the ASCII bytes of "relay-ct" as a big-endian 64-bit integer.
 */
const PLAN_LOCK_KEY = "8243113858872206196";
/** Draws of a fresh token before the id source is declared broken. */
const MAX_DRAWS = 16;

interface TokenRow {
  token_key: string;
  operation: string;
  tool: string;
  args: string;
  armed: boolean;
  follow_ups: string | null;
  bound: string | null;
  expires_at: number;
  seq: number;
}

type Db = Pick<pg.PoolClient, "query">;

/** Stored follow-ups as the broker bound them; undefined when the column does not hold a plan. */
function readPlan(text: string | null): FollowUpPlan | null | undefined {
  if (text === null) return null;
  try {
    const { verifyCommand, rollbackCommand, verifyExpect, autoRollback } = JSON.parse(text) as Record<
      string,
      unknown
    >;
    if (typeof verifyCommand !== "string" || typeof rollbackCommand !== "string") return undefined;
    if (typeof verifyExpect !== "string" || typeof autoRollback !== "boolean") return undefined;
    return Object.freeze({ verifyCommand, rollbackCommand, verifyExpect, autoRollback });
  } catch {
    return undefined;
  }
}

/** The stored arguments; any JSON value, null included, so a failure is told apart by its result. */
function readArgs(text: string): Result<unknown, "not-json"> {
  try {
    return ok(JSON.parse(text));
  } catch {
    return fail("not-json");
  }
}

/** Keep the bound: drop expired tokens, then the soonest-expiring (oldest first on a tie). */
async function sweep(tx: Db, now: number, maxTokens: number): Promise<void> {
  await tx.query("DELETE FROM confirm_tokens WHERE expires_at <= $1", [now]);
  await tx.query(
    `DELETE FROM confirm_tokens WHERE token_key IN (
       SELECT token_key FROM confirm_tokens ORDER BY expires_at DESC, seq DESC OFFSET $1)`,
    [maxTokens],
  );
}

/** One broker's settings and its way to the shared state. */
interface Broker {
  state: PgState;
  config: ConfirmBrokerConfig;
  deps: PgConfirmBrokerDeps;
  ttlMs: number;
  maxTokens: number;
  now(): number;
}

/**
 * The Tier-3 confirmation broker on PostgreSQL, for several relays on one database: a token
 * planned or armed through one relay is consumed exactly once through any of them (the consumer
 * locks the oldest armed row with `FOR UPDATE SKIP LOCKED` and deletes it in one transaction).
 * Rows are keyed by the token's SHA-256; the token itself is never written. The bound on live
 * tokens holds for the whole database. The schema (src/state/shared-schema.ts) is the caller's
 * to migrate before the first call; the pool stays the caller's.
 */
export function createPgConfirmBroker(
  state: PgState,
  config: ConfirmBrokerConfig,
  deps: PgConfirmBrokerDeps,
): ConfirmBroker {
  const b: Broker = {
    state,
    config,
    deps,
    ttlMs: ttlMsOf(config),
    maxTokens: maxTokensOf(config),
    now: () => deps.clock.now(),
  };
  return {
    ttlSeconds: b.ttlMs / 1000,
    rollback: config.rollback,
    plan: (operation) => plan(b, operation),
    inspect: (token) => inspect(b, token),
    arm: (token, followUps) => arm(b, token, followUps),
    consume: (operation) => consume(b, operation),
    pending: () => pending(b),
  };
}

/** Run `work`; a failure of the database becomes one line naming the store and what went wrong. */
async function guarded<T>(b: Broker, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    const detail = b.state.classify(err)?.detail ?? (err instanceof Error ? err.message : String(err));
    throw RelayError.untyped(`the Tier-3 confirmation store cannot be used: ${detail}`, { cause: err });
  }
}

function plan(b: Broker, operation: PlannedOperation): Promise<string> {
  return guarded(b, () =>
    b.state.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [PLAN_LOCK_KEY]);
      const at = b.now();
      await sweep(tx, at, b.maxTokens);
      for (let draw = 0; draw < MAX_DRAWS; draw += 1) {
        // 128 random bits do not collide; a broken `ids` must not let one token stand for two plans.
        const token = b.deps.ids.token(TOKEN_BYTES);
        const added = await tx.query(
          `INSERT INTO confirm_tokens (token_key, operation, tool, args, expires_at)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (token_key) DO NOTHING`,
          [
            tokenKey(token),
            opHash(operation),
            operation.tool,
            JSON.stringify(operation.args ?? null),
            at + b.ttlMs,
          ],
        );
        if (added.rowCount === 1) {
          await sweep(tx, at, b.maxTokens);
          return token;
        }
      }
      throw new Error(`no fresh token after ${MAX_DRAWS} draws: the id source is broken`);
    }),
  );
}

async function inspect(b: Broker, token: string): Promise<TokenView | null> {
  if (token === "") return null;
  const found = await guarded(b, () =>
    b.state.pool.query<TokenRow>(
      "SELECT tool, args, armed, follow_ups FROM confirm_tokens WHERE token_key = $1 AND expires_at > $2",
      [tokenKey(token), b.now()],
    ),
  );
  const row = found.rows[0];
  if (!row) return null;
  const args = readArgs(row.args);
  const followUps = readPlan(row.follow_ups);
  // A row this broker did not write (edited by hand) is no token.
  if (!args.ok || followUps === undefined) return null;
  return { tool: row.tool, args: args.value, armed: row.armed, followUps };
}

async function arm(b: Broker, token: string, followUps: FollowUpPlan | null): Promise<ArmOutcome> {
  const offered = armedPlan(b.config, followUps);
  if (token === "") return { kind: "unknown" };
  return guarded(b, () =>
    b.state.transaction(async (tx): Promise<ArmOutcome> => {
      const found = await tx.query<TokenRow>(
        `SELECT operation, armed, follow_ups, bound FROM confirm_tokens
           WHERE token_key = $1 AND expires_at > $2 FOR UPDATE`,
        [tokenKey(token), b.now()],
      );
      const row = found.rows[0];
      if (!row) return { kind: "unknown" };
      const bound = foldFollowUps(row.operation, offered);
      if (row.armed) {
        // Re-arming is harmless only if it changes nothing: the follow-ups are fixed at the first arm.
        const kept = readPlan(row.follow_ups);
        return row.bound === bound && kept !== undefined
          ? { kind: "armed", followUps: kept }
          : { kind: "conflict" };
      }
      await tx.query(
        "UPDATE confirm_tokens SET armed = true, follow_ups = $2, bound = $3 WHERE token_key = $1",
        [tokenKey(token), offered ? JSON.stringify(offered) : null, bound],
      );
      return { kind: "armed", followUps: offered };
    }),
  );
}

/** Put a burnt row back as it was, its place in line included; a failure only loses the token. */
async function restore(b: Broker, row: TokenRow): Promise<void> {
  try {
    await b.state.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1::bigint)", [PLAN_LOCK_KEY]);
      await tx.query(
        `INSERT INTO confirm_tokens (token_key, operation, tool, args, armed, follow_ups, bound, expires_at, seq)
           OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (token_key) DO NOTHING`,
        [
          row.token_key,
          row.operation,
          row.tool,
          row.args,
          row.armed,
          row.follow_ups,
          row.bound,
          row.expires_at,
          row.seq,
        ],
      );
      await sweep(tx, b.now(), b.maxTokens);
    });
  } catch {
    // The call it was burnt for did not run; without the token the caller plans again.
  }
}

async function consume(b: Broker, operation: OperationIdentity) {
  const wanted = opHash(operation);
  const taken = await guarded(b, () =>
    b.state.transaction(async (tx) => {
      let after = -1;
      for (;;) {
        // A row another relay is consuming right now is skipped, never waited for: exactly one takes it.
        const found = await tx.query<TokenRow>(
          `SELECT * FROM confirm_tokens WHERE operation = $1 AND armed AND expires_at > $2 AND seq > $3
             ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
          [wanted, b.now(), after],
        );
        const row = found.rows[0];
        if (!row) return null;
        const followUps = readPlan(row.follow_ups);
        // The bound identity is recomputed, not trusted: follow-ups that drifted since arming never run.
        if (followUps === undefined || row.bound !== foldFollowUps(wanted, followUps)) {
          after = row.seq;
          continue;
        }
        await tx.query("DELETE FROM confirm_tokens WHERE token_key = $1", [row.token_key]);
        return { row, followUps };
      }
    }),
  );
  if (!taken) return null;
  return {
    // The key is sha256(token), so its head is the audited fingerprint.
    fingerprint: taken.row.token_key.slice(0, FINGERPRINT_HEX),
    followUps: taken.followUps,
    restore: () => restore(b, taken.row),
  };
}

async function pending(b: Broker): Promise<number> {
  const counted = await guarded(b, () =>
    b.state.pool.query<{ n: number }>("SELECT count(*) AS n FROM confirm_tokens WHERE expires_at > $1", [
      b.now(),
    ]),
  );
  return Number(counted.rows[0]?.n ?? 0);
}
