import { MIGRATIONS, type Migration, migrate, openPgState, type PgState } from "../../src/state/index.js";
import { SHARED_SCHEMA_SQL } from "../../src/state/shared-schema.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "./postgres.js";

/**
 * PostgreSQL for the suites of the state several relays share (confirmation tokens, passkey
 * counters, console logins): one throwaway cluster per test file, a migrated database per world,
 * and one pool per relay on it, as separate relays would have.
 */

export const SHARED_SKIP_REASON = POSTGRES_SKIP_REASON;

/** The released steps and the shared tables as step 3, whether or not step 3 is released yet. */
const SHARED_MIGRATIONS: readonly Migration[] = [
  ...MIGRATIONS.filter((step) => step.version !== 3),
  { version: 3, name: "shared", sql: SHARED_SCHEMA_SQL },
];

export interface SharedCluster {
  cluster: PostgresCluster;
  /** A new migrated database and `relays` pools on it, one per relay. */
  database(relays: number): Promise<PgState[]>;
  /** End every pool and remove the cluster. */
  stop(): Promise<void>;
}

export async function startSharedCluster(): Promise<SharedCluster> {
  const cluster = await startPostgres();
  const states: PgState[] = [];
  let count = 0;
  return {
    cluster,
    async database(relays) {
      count += 1;
      const url = await cluster.createDatabase(`shared_${count}`);
      const opened: PgState[] = [];
      for (let i = 0; i < relays; i += 1) {
        const state = openPgState(url, { instance: `relay-${String.fromCharCode(97 + i)}`, poolMax: 12 });
        if (!state.ok) throw new Error(state.error.detail);
        opened.push(state.value);
      }
      states.push(...opened);
      const first = opened[0];
      if (!first) throw new Error("a database needs at least one relay");
      const migrated = await migrate(first, { migrations: SHARED_MIGRATIONS });
      if (!migrated.ok) throw new Error(`${migrated.error.failure}: ${migrated.error.detail}`);
      return opened;
    },
    async stop() {
      await Promise.all(states.map((state) => state.close()));
      await cluster.stop();
    },
  };
}

/** One backend a contract suite runs against: started once per file, a fresh store per test. */
export interface ContractBackend<T> {
  name: string;
  skip: string | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  fresh(): Promise<T>;
}

/** A backend in this process's memory (or anything that needs no set-up): `fresh` makes a new one. */
export function localBackend<T>(name: string, fresh: () => T): ContractBackend<T> {
  return {
    name,
    skip: null,
    start: async () => undefined,
    stop: async () => undefined,
    fresh: async () => fresh(),
  };
}

/**
 * The PostgreSQL backend of a contract suite: one throwaway cluster for the file, one migrated
 * database, `tables` emptied before each test, and `make` over the relay's pool.
 */
export function postgresBackend<T>(
  tables: readonly string[],
  make: (state: PgState) => T,
): ContractBackend<T> {
  let shared: SharedCluster | undefined;
  let state: PgState | undefined;
  return {
    name: "PostgreSQL",
    skip: SHARED_SKIP_REASON,
    async start() {
      shared = await startSharedCluster();
      [state] = await shared.database(1);
    },
    stop: async () => shared?.stop(),
    async fresh() {
      const db = state as PgState;
      await db.pool.query(`TRUNCATE ${tables.join(", ")}`);
      return make(db);
    },
  };
}
