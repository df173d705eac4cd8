import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../src/core/index.js";
import { type OAuthStore, openPgOAuthStore } from "../../src/server/index.js";
import type { OAuthBounds } from "../../src/server/oauth-state.js";
import { openOAuthStore } from "../../src/server/oauth-store.js";
import { MIGRATIONS, type Migration, migrate, openPgState, type PgState } from "../../src/state/index.js";
import { OAUTH_SCHEMA_SQL } from "../../src/state/oauth-schema.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "./postgres.js";

/**
 * The two OAuth state backends behind one face, so one list of behaviours runs against both
 * (src/server/oauth-store-contract.test.ts): the files in a temporary directory, and PostgreSQL in
 * a database of its own on a throwaway cluster.
 */

/** The released steps and the OAuth tables as step 2, whether or not step 2 is released yet. */
const OAUTH_MIGRATIONS: readonly Migration[] = [
  ...MIGRATIONS.filter((step) => step.version !== 2),
  { version: 2, name: "oauth", sql: OAUTH_SCHEMA_SQL },
];

/** One state for one test. */
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

export interface OAuthBackend {
  name: string;
  /** Why it cannot run here, or null. */
  skip: string | null;
  start(): Promise<void>;
  stop(): Promise<void>;
  world(bounds?: OAuthBounds): Promise<OAuthWorld>;
}

export const fileBackend: OAuthBackend = {
  name: "files",
  skip: null,
  start: async () => undefined,
  stop: async () => undefined,
  async world(bounds) {
    const root = mkdtempSync(join(tmpdir(), "oauth-contract-"));
    const dir = join(root, "oauth");
    const store = openOAuthStore(dir, silentLogger, bounds);
    return {
      store,
      peer: store,
      reopen: async () => openOAuthStore(dir, silentLogger, bounds),
      dispose: async () => rmSync(root, { recursive: true, force: true }),
    };
  },
};

/** A pool on `url` with the OAuth tables in place. */
export async function openMigratedState(url: string, instance: string): Promise<PgState> {
  const opened = openPgState(url, { instance, poolMax: 12 });
  if (!opened.ok) throw new Error(opened.error.detail);
  const migrated = await migrate(opened.value, { migrations: OAUTH_MIGRATIONS });
  if (!migrated.ok) throw new Error(migrated.error.detail);
  return opened.value;
}

/** PostgreSQL: one cluster for the file, one database per world, one pool per store. */
export function postgresBackend(): OAuthBackend & { cluster(): PostgresCluster } {
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
    async world(bounds) {
      count += 1;
      const url = await running().createDatabase(`oauth_${count}`);
      const states: PgState[] = [];
      const open = async (): Promise<OAuthStore> => {
        const state = await openMigratedState(url, `relay-${states.length}`);
        states.push(state);
        return openPgOAuthStore(state, bounds);
      };
      const store = await open();
      return {
        store,
        peer: await open(),
        reopen: open,
        dispose: async () => {
          await Promise.all(states.map((state) => state.close()));
        },
      };
    },
  };
}
