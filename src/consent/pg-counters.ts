import type pg from "pg";
import type { Clock } from "../core/index.js";
import type { PgState } from "../state/index.js";
import {
  type AssertionCount,
  type CounterUpdate,
  checkCounter,
  type PasskeyCounters,
} from "./passkey-counters.js";

export interface PgCountersOptions {
  /** Writes `updated_at` and `accepted_at` (epoch ms): when a counter moved, how old an assertion is. */
  clock: Clock;
  /**
   * How long an accepted assertion is remembered (two days). The gate checks an assertion again
   * when its call is re-issued, within the approval's life, which is at most a day
   * (RELAY_SHELL_CONSENT_APPROVAL_TTL); an older one checked again counts as a replayed counter.
   */
  assertionRetentionMs?: number;
}

const TWO_DAYS_MS = 2 * 86_400_000;

type Db = Pick<pg.PoolClient, "query">;

/**
 * Take the counter only above the stored one (or where none is stored, or 0 after 0), in one
 * statement: of two relays writing at once the second re-reads the row the first wrote, so a
 * counter never goes backwards. No row returned: refused.
 */
const ADVANCE_SQL = `INSERT INTO passkey_counters AS c (credential_id, counter, updated_at) VALUES ($1, $2, $3)
  ON CONFLICT (credential_id) DO UPDATE SET counter = EXCLUDED.counter, updated_at = EXCLUDED.updated_at
  WHERE c.counter < EXCLUDED.counter OR (c.counter = 0 AND EXCLUDED.counter = 0)
  RETURNING counter`;

/** A counter refused inside a transaction: thrown so the assertion recorded with it rolls back. */
class Stale extends Error {
  constructor(readonly last: number) {
    super(`the sign counter did not increase past ${last}`);
  }
}

async function advanceOn(db: Db, id: string, counter: number, at: number): Promise<CounterUpdate> {
  const taken = await db.query(ADVANCE_SQL, [id, counter, at]);
  if (taken.rowCount === 1) return { accepted: true };
  const stored = await db.query<{ counter: number }>(
    "SELECT counter FROM passkey_counters WHERE credential_id = $1",
    [id],
  );
  return { accepted: false, last: Number(stored.rows[0]?.counter ?? 0) };
}

/**
 * The passkey sign counters on PostgreSQL, for several relays on one database (tables
 * `passkey_counters` and `passkey_assertions` of src/state/shared-schema.ts, which the caller
 * migrates first). An assertion's digest is recorded with the counter it carried in one
 * transaction, keyed by the digest, so the same assertion counts once on every relay. A failure of
 * the database rejects with one line naming the server; the pool stays the caller's.
 */
export function createPgCounters(state: PgState, options: PgCountersOptions): PasskeyCounters {
  const retentionMs = options.assertionRetentionMs ?? TWO_DAYS_MS;
  const now = (): number => options.clock.now();

  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof Stale) throw err;
      throw new Error(state.classify(err)?.detail ?? (err instanceof Error ? err.message : String(err)), {
        cause: err,
      });
    }
  }

  async function countAssertion(id: string, counter: number, digest: string): Promise<AssertionCount> {
    checkCounter(counter);
    try {
      return await guarded(() =>
        state.transaction(async (tx): Promise<AssertionCount> => {
          const at = now();
          const recorded = await tx.query(
            `INSERT INTO passkey_assertions (digest, credential_id, accepted_at) VALUES ($1, $2, $3)
               ON CONFLICT (digest) DO NOTHING`,
            [digest, id, at],
          );
          // Counted before, here or on another relay (a concurrent count waits for the first to commit).
          if (recorded.rowCount === 0) return { accepted: true, repeat: true };
          const update = await advanceOn(tx, id, counter, at);
          if (!update.accepted) throw new Stale(update.last);
          await tx.query("DELETE FROM passkey_assertions WHERE accepted_at < $1", [at - retentionMs]);
          return { accepted: true, repeat: false };
        }),
      );
    } catch (err) {
      if (err instanceof Stale) return { accepted: false, last: err.last };
      throw err;
    }
  }

  return {
    async get(id) {
      const found = await guarded(() =>
        state.pool.query<{ counter: number }>(
          "SELECT counter FROM passkey_counters WHERE credential_id = $1",
          [id],
        ),
      );
      const row = found.rows[0];
      return row === undefined ? undefined : Number(row.counter);
    },
    async advance(id, counter) {
      checkCounter(counter);
      return guarded(() => advanceOn(state.pool, id, counter, now()));
    },
    countAssertion,
  };
}
