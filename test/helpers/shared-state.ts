import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { ConfirmBrokerDeps } from "../../src/broker/broker.js";
import { type ConfirmBroker, createConfirmBroker, createPgConfirmBroker } from "../../src/broker/index.js";
import type { ConfirmBrokerConfig } from "../../src/broker/types.js";
import {
  type ConsentStore,
  createPgCounters,
  openPgStore,
  openSqliteStore,
  type PasskeyCounters,
  type StoreResult,
} from "../../src/consent/index.js";
import { fileCounters } from "../../src/consent/passkey-counters.js";
import { createPgLoginStore } from "../../src/console/index.js";
import { createLoginStore, type LoginStore } from "../../src/console/logins.js";
import { type Clock, type Ids, silentLogger } from "../../src/core/index.js";
import { type OAuthStore, openPgOAuthStore } from "../../src/server/index.js";
import type { OAuthBounds } from "../../src/server/oauth-state.js";
import { openOAuthStore } from "../../src/server/oauth-store.js";
import { migrate, openPgState, type PgState, type StateResult } from "../../src/state/index.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "./postgres.js";

/**
 * The state the store suites open, behind one face with two backends, so one list of behaviours
 * (a contract suite) runs against both: `localBackend()`, what one relay keeps by itself (the
 * consent store in SQLite, the OAuth state and the passkey counters in files, confirmation tokens
 * and console logins in memory), and `postgresBackend()`, the database several relays share, on
 * a throwaway cluster for the test file. Each is started once per file and opens a fresh store
 * of any kind per test.
 */

export function value<T>(result: StoreResult<T> | StateResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

/** One consent store for one test, and more connections to the same data. */
export interface ConsentWorld {
  store: ConsentStore;
  /** Another store on the same data (another relay, or the operator's command). */
  another(ids: Ids): Promise<ConsentStore>;
  /** Write nonsense into a request's act, behind the store's back. */
  corruptAct(id: string): Promise<void>;
  /** Close every store and remove what the world wrote. */
  dispose(): Promise<void>;
}

/** One OAuth state for one test. */
export interface OAuthWorld {
  store: OAuthStore;
  /**
   * What races with `store` as separate relays would: for PostgreSQL another pool on the same
   * database; for the files, the same store (one relay is all the files serve).
   */
  peer: OAuthStore;
  /** Another store opened now on the same state: a restart of the files, another relay's pool. */
  reopen(): Promise<OAuthStore>;
  dispose(): Promise<void>;
}

/** Confirmation brokers over one state with no token in it. */
export type MakeBroker = (config: ConfirmBrokerConfig, deps: ConfirmBrokerDeps) => ConfirmBroker;
/** Login stores over one state with no login in it. */
export type MakeLogins = (idleSeconds: number, clock: Clock) => LoginStore;

export interface StateBackend {
  /** What the suite's title names: "local" or "PostgreSQL". */
  name: string;
  /** Why it cannot run here, or null. */
  skip: string | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  consent(clock: Clock, ids: Ids): Promise<ConsentWorld>;
  oauth(bounds?: OAuthBounds): Promise<OAuthWorld>;
  broker(): Promise<MakeBroker>;
  logins(): Promise<MakeLogins>;
  /** Sign counters that have seen no authenticator; `clock` is for a store that keeps time. */
  counters(clock: Clock): Promise<PasskeyCounters>;
}

/**
 * One relay's own state: a temporary directory for the test file, every store that keeps files in
 * a directory of its own under it; the rest in memory.
 */
export function localBackend(): StateBackend {
  let root = "";
  let count = 0;
  /** A new empty directory under the root. */
  const fresh = (kind: string): string => {
    count += 1;
    const dir = join(root, `${kind}-${count}`);
    mkdirSync(dir);
    return dir;
  };
  return {
    name: "local",
    skip: null,
    async start() {
      root = mkdtempSync(join(tmpdir(), "state-contract-"));
    },
    stop: async () => rmSync(root, { recursive: true, force: true }),
    consent: async (clock, ids) => sqliteConsentWorld(fresh("consent"), clock, ids),
    async oauth(bounds) {
      const world = fresh("oauth");
      const dir = join(world, "oauth");
      const store = openOAuthStore(dir, silentLogger, bounds);
      return {
        store,
        peer: store,
        reopen: async () => openOAuthStore(dir, silentLogger, bounds),
        dispose: async () => rmSync(world, { recursive: true, force: true }),
      };
    },
    broker: async () => createConfirmBroker,
    logins: async () => createLoginStore,
    counters: async () => fileCounters(join(fresh("counters"), "counters.json")),
  };
}

/** The consent store in SQLite, in `dir`, with every store of the world on the same file. */
function sqliteConsentWorld(dir: string, clock: Clock, ids: Ids): ConsentWorld {
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
}

export interface PostgresBackend extends StateBackend {
  /** The cluster of this file, once started: to stop and start its server, or to run SQL on it. */
  cluster(): PostgresCluster;
  /** A new migrated database and `count` pools on it, one per relay, as separate relays would have. */
  relays(count: number): Promise<PgState[]>;
}

/**
 * PostgreSQL: one throwaway cluster for the file. The consent and OAuth stores get a database
 * per world, with a pool per store that the world closes; brokers, logins and counters share one
 * database whose tables are emptied for each. `stop` closes the pools of `relays` and that one.
 */
export function postgresBackend(): PostgresBackend {
  let cluster: PostgresCluster | undefined;
  let count = 0;
  const pools: PgState[] = [];
  let scratch: PgState | undefined;
  const running = (): PostgresCluster => {
    if (!cluster) throw new Error("the PostgreSQL cluster is not started");
    return cluster;
  };
  const database = async (prefix: string): Promise<{ name: string; url: string }> => {
    count += 1;
    const name = `${prefix}_${count}`;
    return { name, url: await running().createDatabase(name) };
  };
  /** A pool on `url`, kept in `into` for whoever closes it. */
  const pool = (url: string, instance: string, poolMax: number, into: PgState[]): PgState => {
    const state = value(openPgState(url, { instance, poolMax }));
    into.push(state);
    return state;
  };
  const relays = async (relayCount: number): Promise<PgState[]> => {
    const { url } = await database("shared");
    const opened: PgState[] = [];
    for (let i = 0; i < relayCount; i += 1) {
      pool(url, `relay-${String.fromCharCode(97 + i)}`, 12, opened);
    }
    pools.push(...opened);
    const first = opened[0];
    if (!first) throw new Error("a database needs at least one relay");
    value(await migrate(first));
    return opened;
  };
  /** The database of the stores a test empties instead of replacing, with `tables` emptied now. */
  const emptied = async (tables: readonly string[]): Promise<PgState> => {
    if (!scratch) [scratch] = await relays(1);
    const db = scratch as PgState;
    await db.pool.query(`TRUNCATE ${tables.join(", ")}`);
    return db;
  };
  return {
    name: "PostgreSQL",
    skip: POSTGRES_SKIP_REASON,
    cluster: running,
    relays,
    async start() {
      cluster = await startPostgres();
    },
    async stop() {
      await Promise.all(pools.splice(0).map((state) => state.close()));
      await cluster?.stop();
    },
    async consent(clock, ids) {
      const { name, url } = await database("consent");
      const states: PgState[] = [];
      const stores: ConsentStore[] = [];
      const open = async (with_: Ids): Promise<ConsentStore> => {
        // The store migrates the database itself, as a relay's does.
        const state = pool(url, `store-${states.length}`, 4, states);
        const store = value(await openPgStore(state, { clock, ids: with_ }));
        stores.push(store);
        return store;
      };
      return {
        store: await open(ids),
        another: open,
        async corruptAct(id) {
          await running().psql(`UPDATE consent_requests SET act = '{not json' WHERE id = '${id}'`, name);
        },
        async dispose() {
          await Promise.all(stores.map((store) => store.close()));
          await Promise.all(states.map((state) => state.close()));
        },
      };
    },
    async oauth(bounds) {
      const { url } = await database("oauth");
      const states: PgState[] = [];
      const open = async (): Promise<OAuthStore> => {
        const state = pool(url, `relay-${states.length}`, 12, states);
        value(await migrate(state));
        return openPgOAuthStore(state, bounds);
      };
      return {
        store: await open(),
        peer: await open(),
        reopen: open,
        dispose: async () => {
          await Promise.all(states.map((state) => state.close()));
        },
      };
    },
    async broker() {
      const db = await emptied(["confirm_tokens"]);
      return (config, deps) => createPgConfirmBroker(db, config, deps);
    },
    async logins() {
      const db = await emptied(["console_logins"]);
      return (idleSeconds, clock) => createPgLoginStore(db, idleSeconds, clock);
    },
    async counters(clock) {
      const db = await emptied(["passkey_counters", "passkey_assertions"]);
      return createPgCounters(db, { clock });
    },
  };
}
