import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { openPgStore } from "../../src/consent/pg-store.js";
import { openSqliteStore } from "../../src/consent/sqlite-store.js";
import type { ConsentStore, StoreResult } from "../../src/consent/types.js";
import type { Clock, Ids } from "../../src/core/index.js";
import { openPgState, type PgState, type StateResult } from "../../src/state/index.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "./postgres.js";

/**
 * The two consent stores behind one face, so one list of behaviours runs against both
 * (src/consent/store-contract.test.ts): SQLite in a temporary file, PostgreSQL in a database of
 * its own on a throwaway cluster.
 */

export function value<T>(result: StoreResult<T> | StateResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

/** One database for one test: the store under test, and more connections to the same data. */
export interface StoreWorld {
  store: ConsentStore;
  /** Another store on the same database (another relay, or the operator's command). */
  another(ids: Ids): Promise<ConsentStore>;
  /** Write nonsense into a request's act, behind the store's back. */
  corruptAct(id: string): Promise<void>;
  /** Close every store and remove the database. */
  dispose(): Promise<void>;
}

export interface StoreBackend {
  name: string;
  /** Why it cannot run here, or null. */
  skip: string | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  world(clock: Clock, ids: Ids): Promise<StoreWorld>;
}

export const sqliteBackend: StoreBackend = {
  name: "SQLite",
  skip: null,
  start: async () => undefined,
  stop: async () => undefined,
  async world(clock, ids) {
    const dir = mkdtempSync(join(tmpdir(), "consent-contract-"));
    const path = join(dir, "state", "consent.db");
    const stores: ConsentStore[] = [];
    const open = (with_: Ids): ConsentStore => {
      const store = value(openSqliteStore(path, { clock, ids: with_, busyTimeoutMs: 500 }));
      stores.push(store);
      return store;
    };
    return {
      store: open(ids),
      another: async (other) => open(other),
      async corruptAct(id) {
        const raw = new Database(path);
        raw.prepare("UPDATE requests SET act = '{not json' WHERE id = ?").run(id);
        raw.close();
      },
      async dispose() {
        await Promise.all(stores.map((store) => store.close()));
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/** PostgreSQL: one cluster for the file, one database per world, one pool per store. */
export function postgresBackend(): StoreBackend & { cluster(): PostgresCluster } {
  let cluster: PostgresCluster | undefined;
  let count = 0;
  const running = (): PostgresCluster => {
    if (!cluster) throw new Error("the PostgreSQL cluster is not started");
    return cluster;
  };
  return {
    name: "PostgreSQL",
    skip: POSTGRES_SKIP_REASON,
    cluster: running,
    async start() {
      cluster = await startPostgres();
    },
    async stop() {
      await cluster?.stop();
    },
    async world(clock, ids) {
      count += 1;
      const database = `contract_${count}`;
      const url = await running().createDatabase(database);
      const states: PgState[] = [];
      const stores: ConsentStore[] = [];
      const open = async (with_: Ids): Promise<ConsentStore> => {
        const state = value(openPgState(url, { instance: `store-${states.length}`, poolMax: 4 }));
        states.push(state);
        const store = value(await openPgStore(state, { clock, ids: with_ }));
        stores.push(store);
        return store;
      };
      return {
        store: await open(ids),
        another: open,
        async corruptAct(id) {
          await running().psql(`UPDATE consent_requests SET act = '{not json' WHERE id = '${id}'`, database);
        },
        async dispose() {
          await Promise.all(stores.map((store) => store.close()));
          await Promise.all(states.map((state) => state.close()));
        },
      };
    },
  };
}
