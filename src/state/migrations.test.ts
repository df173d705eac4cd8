import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../../test/helpers/postgres.js";
import type { StateResult } from "./errors.js";
import { MIGRATIONS, type Migration, migrate } from "./migrations.js";
import { openPgState, type PgState } from "./pg.js";

function value<T>(result: StateResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

/** The tables migration 1 creates, as the consent store uses them. */
/** The first released step (the consent store) alone: the tests below add their own steps after it. */
const BASE: readonly Migration[] = MIGRATIONS.slice(0, 1);

const CONSENT_TABLES = [
  "consent_epoch",
  "consent_leases",
  "consent_meta",
  "consent_nonces",
  "consent_requests",
  "consent_sessions",
];

describe.skipIf(POSTGRES_SKIP_REASON !== null)("migrations of the state database", () => {
  let cluster: PostgresCluster;
  let databases = 0;
  const states: PgState[] = [];

  /** A fresh database, and `count` relays (each its own pool) pointed at it. */
  async function relays(count: number): Promise<{ url: string; states: PgState[] }> {
    databases += 1;
    const url = await cluster.createDatabase(`migrate_${databases}`);
    const opened = Array.from({ length: count }, (_, i) => {
      const state = value(openPgState(url, { instance: `relay-${i}` }));
      states.push(state);
      return state;
    });
    return { url, states: opened };
  }
  const sql = (url: string, text: string) => cluster.psql(text, new URL(url).pathname.slice(1));

  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  afterEach(async () => {
    await Promise.all(states.splice(0).map((state) => state.close()));
  });

  it("creates the consent schema on a new database, once, and records who did", async () => {
    const {
      url,
      states: [state],
    } = await relays(1);
    if (!state) throw new Error("no state");
    expect(value(await migrate(state, { migrations: BASE }))).toEqual({ from: 0, to: 1, applied: [1] });
    expect(value(await migrate(state, { migrations: BASE }))).toEqual({ from: 1, to: 1, applied: [] });
    const tables = await sql(
      url,
      "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'",
    );
    expect(tables.split(",")).toEqual([...CONSENT_TABLES, "relay_schema_migrations"].sort());
    expect(
      await sql(url, "SELECT version || '|' || name || '|' || applied_by FROM relay_schema_migrations"),
    ).toBe("1|consent store|relay-0");
    expect(await sql(url, "SELECT value FROM consent_epoch")).toBe("0");
    // Every released step after it, in order, by the next relay to start.
    const versions = MIGRATIONS.map((step) => step.version);
    expect(value(await migrate(state))).toEqual({ from: 1, to: versions.at(-1), applied: versions.slice(1) });
  });

  it("refuses a second spend of one nonce in the schema itself", async () => {
    const {
      url,
      states: [state],
    } = await relays(1);
    if (!state) throw new Error("no state");
    value(await migrate(state));
    await sql(url, "INSERT INTO consent_nonces VALUES ('n1', 1)");
    await expect(sql(url, "INSERT INTO consent_nonces VALUES ('n1', 2)")).rejects.toThrow(/duplicate key/);
  });

  it("lets several relays migrate one database at once: one applies each step, all end current", async () => {
    const { url, states: many } = await relays(5);
    const slow: Migration[] = [
      ...BASE,
      { version: 2, name: "slow step", sql: "SELECT pg_sleep(0.2); CREATE TABLE slow_step (x integer)" },
      { version: 3, name: "third", sql: "ALTER TABLE slow_step ADD COLUMN y integer" },
    ];
    const reports = (await Promise.all(many.map((state) => migrate(state, { migrations: slow })))).map(value);
    expect(reports.every((report) => report.to === 3)).toBe(true);
    expect(reports.flatMap((report) => report.applied).sort()).toEqual([1, 2, 3]);
    expect(
      await sql(url, "SELECT string_agg(version::text, ',' ORDER BY version) FROM relay_schema_migrations"),
    ).toBe("1,2,3");
    // The lock was given back: nobody is left holding it.
    expect(await sql(url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")).toBe("0");
  });

  it("refuses a database newer than this relay, and writes nothing", async () => {
    const {
      url,
      states: [state],
    } = await relays(1);
    if (!state) throw new Error("no state");
    value(await migrate(state, { migrations: BASE }));
    await sql(
      url,
      "INSERT INTO relay_schema_migrations (version, name, applied_by) VALUES (3, 'future', 'x')",
    );
    const refused = await migrate(state, { migrations: BASE });
    expect(refused).toEqual({
      ok: false,
      error: {
        failure: "incompatible",
        detail:
          "the state database is at schema version 3, newer than this relay knows (1): upgrade relay-shell before starting it against this database",
      },
    });
    expect(await sql(url, "SELECT count(*) FROM relay_schema_migrations")).toBe("2");
  });

  it("refuses a history that names a step differently", async () => {
    const {
      states: [state],
    } = await relays(1);
    if (!state) throw new Error("no state");
    value(await migrate(state));
    const renamed = await migrate(state, {
      migrations: [{ ...(MIGRATIONS[0] as Migration), name: "other" }],
    });
    expect(renamed.ok ? "" : renamed.error.failure).toBe("incompatible");
  });

  it("applies a step wholly or not at all, and gives the lock back after a failure", async () => {
    const {
      url,
      states: [state],
    } = await relays(1);
    if (!state) throw new Error("no state");
    const broken: Migration[] = [
      ...BASE,
      { version: 2, name: "half", sql: "CREATE TABLE half_done (x integer); SELECT no_such_function()" },
    ];
    const failed = await migrate(state, { migrations: broken });
    expect(failed.ok ? "" : failed.error.failure).toBe("failed");
    expect(await sql(url, "SELECT string_agg(version::text, ',') FROM relay_schema_migrations")).toBe("1");
    expect(await sql(url, "SELECT count(*) FROM pg_tables WHERE tablename = 'half_done'")).toBe("0");
    const fixed: Migration[] = [
      ...BASE,
      { version: 2, name: "half", sql: "CREATE TABLE half_done (x integer)" },
    ];
    expect(value(await migrate(state, { migrations: fixed, lockWaitMs: 500 })).applied).toEqual([2]);
  });

  it("waits for a relay holding the migration lock, then says so as locked", async () => {
    const {
      states: [holder, waiter],
    } = await relays(2);
    if (!holder || !waiter) throw new Error("no state");
    const client = await holder.pool.connect();
    try {
      await client.query("SELECT pg_advisory_lock(8243113858872210280)");
      const started = Date.now();
      const refused = await migrate(waiter, { lockWaitMs: 300 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(refused.ok ? "" : refused.error.failure).toBe("locked");
      if (!refused.ok)
        expect(refused.error.detail).toMatch(/held the schema migration lock .* for more than 300 ms/);
      await client.query("SELECT pg_advisory_unlock(8243113858872210280)");
      expect(value(await migrate(waiter, { lockWaitMs: 300, migrations: BASE })).applied).toEqual([1]);
    } finally {
      client.release();
    }
  });

  it("says an unreachable server is unavailable", async () => {
    const state = value(openPgState("postgres://relay:pw@127.0.0.1:1/relay", { instance: "x" }));
    states.push(state);
    const refused = await migrate(state);
    expect(refused).toEqual({
      ok: false,
      error: {
        failure: "unavailable",
        detail: "PostgreSQL at 127.0.0.1:1 is unreachable (ECONNREFUSED)",
      },
    });
  });
});
