import type pg from "pg";
import { type Clock, fail, type Ids, ok } from "../core/index.js";
import { migrate, type PgState } from "../state/index.js";
import { leaseMethods } from "./pg-leases.js";
import { requestMethods } from "./pg-requests.js";
import { type Db, epoch, instanceIdOf, openFailure, pgFailure, type WriteMode } from "./pg-rows.js";
import { refuse } from "./store-errors.js";
import type { ConsentStore, StoreResult } from "./types.js";

export interface PgStoreOptions {
  clock: Clock;
  ids: Ids;
}

/** Request and lease ids: 10 lowercase hex digits, as in the SQLite store. */
const ID_BYTES = 5;

/**
 * The consent store on PostgreSQL, for several relays sharing one database
 * (docs/adr/0024-consent-store-and-approval-lifetime.md): the SQLite store's rules, refusals and
 * formats, each read-modify-write one transaction that locks the rows it decides from
 * (`SELECT … FOR UPDATE`). The schema is brought up to date first. The state (its pool) stays the
 * caller's: `close` ends this store's use of it, not the pool.
 */
export async function openPgStore(
  state: PgState,
  options: PgStoreOptions,
): Promise<StoreResult<ConsentStore>> {
  const migrated = await migrate(state);
  if (!migrated.ok) return openFailure(migrated.error.failure, migrated.error.detail);
  try {
    const instanceId = await instanceIdOf(state.pool, options.ids);
    return ok(createStore(state, instanceId, options));
  } catch (err) {
    return pgFailure(state, err);
  }
}

/**
 * The store over the shared state: the request steps (pg-requests.ts) and the session and lease
 * steps (pg-leases.ts) share its reads and transactions.
 */
function createStore(state: PgState, instanceId: string, options: PgStoreOptions): ConsentStore {
  const { clock, ids } = options;
  const now = (): number => clock.now();
  let closed = false;
  // Epoch bumps this store committed itself: the change counter shows only the others' (see changeCounter).
  let ownBumps = 0;

  async function attempt<T>(work: () => Promise<T>): Promise<StoreResult<T>> {
    if (closed) return fail({ failure: "unavailable", detail: "the consent store is closed" });
    try {
      return ok(await work());
    } catch (err) {
      return pgFailure(state, err);
    }
  }
  const read = <T>(work: (db: Db) => Promise<T>): Promise<StoreResult<T>> => attempt(() => work(state.pool));
  /** One transaction (PgStoreContext.write says what the modes mean). */
  const write = <T>(work: (tx: Db) => Promise<T>, mode: WriteMode = {}): Promise<StoreResult<T>> =>
    attempt(async () => {
      const value = await state.transaction(async (tx: pg.PoolClient) => {
        if (mode.relaxed) await tx.query("SET LOCAL synchronous_commit = off");
        const result = await work(tx);
        if (mode.withdraws) await tx.query("UPDATE consent_epoch SET value = value + 1");
        return result;
      });
      if (mode.withdraws) ownBumps += 1;
      return value;
    });
  const freshId = (tx: Db, table: "consent_requests" | "consent_leases") => freshIdIn(ids, tx, table);

  return {
    instanceId,
    ...requestMethods({ now, read, write, freshId, ids, instanceId }),
    /**
     * The epoch less this store's own bumps: it moves only when another store (another relay, the
     * operator's command) committed a withdrawal since, as SQLite's data_version moves only for
     * another connection's commit. A bump of ours not yet counted shows as a change, which only
     * makes the caller look again.
     */
    changeCounter: () => read(async (db) => (await epoch(db)) - ownBumps),
    ...leaseMethods({ now, read, write, freshId }),
    close: async () => {
      closed = true;
    },
  };
}

/** A request or lease id not taken yet in `table`; a source that keeps repeating itself is broken. */
async function freshIdIn(ids: Ids, tx: Db, table: "consent_requests" | "consent_leases"): Promise<string> {
  for (let i = 0; i < 16; i += 1) {
    const id = ids.hex(ID_BYTES);
    if ((await tx.query(`SELECT 1 FROM ${table} WHERE id = $1`, [id])).rowCount === 0) return id;
  }
  return refuse("unavailable", "no free id after 16 draws: the id source is broken");
}
