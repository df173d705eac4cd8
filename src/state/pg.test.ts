import { createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../../test/helpers/postgres.js";
import type { Logger } from "../core/index.js";
import type { StateError } from "./errors.js";
import { openPgState, type PgState, type PgStateOptions } from "./pg.js";

function opened(url: string, options: Partial<PgStateOptions> = {}): PgState {
  const state = openPgState(url, { instance: "pg-test", ...options });
  if (!state.ok) throw new Error(`expected a state, got ${state.error.failure}: ${state.error.detail}`);
  return state.value;
}

/** What a rejected transaction means, as the caller reads it. */
async function rejection(state: PgState, work: Promise<unknown>): Promise<StateError | null> {
  try {
    await work;
  } catch (err) {
    return state.classify(err);
  }
  throw new Error("expected the transaction to fail");
}

/** A port on 127.0.0.1 nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}

const SECRET = "s3cret-Passw0rd";

describe("opening the state database", () => {
  it("refuses a URL of another scheme, or no URL, without echoing it", () => {
    for (const url of [`mysql://relay:${SECRET}@127.0.0.1/relay`, `http://relay:${SECRET}@x/y`]) {
      const state = openPgState(url, { instance: "t" });
      expect(state.ok).toBe(false);
      if (!state.ok) {
        expect(state.error.failure).toBe("unavailable");
        expect(state.error.detail).toMatch(/must start with postgres:\/\/ or postgresql:\/\//);
        expect(state.error.detail).not.toContain(SECRET);
      }
    }
    const junk = openPgState(`relay:${SECRET} at somewhere`, { instance: "t" });
    expect(junk.ok).toBe(false);
    if (!junk.ok) expect(junk.error.detail).not.toContain(SECRET);
    const hostless = openPgState("postgres:///relay", { instance: "t" });
    expect(hostless.ok ? "" : hostless.error.detail).toMatch(/names no host/);
    expect(openPgState("postgresql://relay@127.0.0.1:5433/relay", { instance: "t" }).ok).toBe(true);
  });

  it("says a server that is not there is unavailable, naming it and not the password", async () => {
    const port = await closedPort();
    const state = opened(`postgres://relay:${SECRET}@127.0.0.1:${port}/relay`, { connectTimeoutMs: 2000 });
    try {
      const error = await rejection(
        state,
        state.transaction(async (client) => client.query("SELECT 1")),
      );
      expect(error).toEqual({
        failure: "unavailable",
        detail: `PostgreSQL at 127.0.0.1:${port} is unreachable (ECONNREFUSED)`,
      });
    } finally {
      await state.close();
    }
  });

  it("leaves an error that is not the database's to the caller", () => {
    const state = opened("postgres://relay@127.0.0.1:5433/relay");
    expect(state.classify(new Error("request abc expired"))).toBeNull();
    expect(state.classify("a string")).toBeNull();
    void state.close();
  });
});

describe.skipIf(POSTGRES_SKIP_REASON !== null)("the PostgreSQL state", () => {
  let cluster: PostgresCluster;
  const states: PgState[] = [];
  const track = (state: PgState): PgState => {
    states.push(state);
    return state;
  };

  beforeAll(async () => {
    cluster = await startPostgres();
    await cluster.psql("CREATE TABLE counters (n integer PRIMARY KEY); ALTER TABLE counters OWNER TO relay");
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  afterEach(async () => {
    await Promise.all(states.splice(0).map((state) => state.close()));
    await cluster.psql("DELETE FROM counters");
  });

  it("sets each connection's timeouts and names the relay", async () => {
    const state = track(opened(cluster.url, { instance: "relay-a", statementTimeoutMs: 1500 }));
    const seen = await state.transaction(async (client) => {
      const row = await client.query(
        `SELECT current_setting('application_name') AS app, current_setting('statement_timeout') AS st,
           current_setting('lock_timeout') AS lt, current_setting('idle_in_transaction_session_timeout') AS it`,
      );
      return row.rows[0];
    });
    expect(seen).toEqual({ app: "relay-shell:relay-a", st: "1500ms", lt: "1500ms", it: "3s" });
  });

  it("refuses a wrong password as unavailable, without printing it", async () => {
    const url = cluster.url.replace(cluster.password, SECRET);
    const state = track(opened(url));
    const error = await rejection(
      state,
      state.transaction(async (client) => client.query("SELECT 1")),
    );
    expect(error?.failure).toBe("unavailable");
    expect(error?.detail).toMatch(
      new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${cluster.port} refused the login`),
    );
    expect(error?.detail).not.toContain(SECRET);
  });

  it("commits the work, or rolls all of it back on an error", async () => {
    const state = track(opened(cluster.url));
    await state.transaction(async (client) => client.query("INSERT INTO counters VALUES (1)"));
    await expect(
      state.transaction(async (client) => {
        await client.query("INSERT INTO counters VALUES (2)");
        throw new Error("changed my mind");
      }),
    ).rejects.toThrow("changed my mind");
    expect(await cluster.psql("SELECT string_agg(n::text, ',' ORDER BY n) FROM counters")).toBe("1");
    // The connection went back to the pool usable, outside any transaction.
    const status = await state.transaction(async (client) => (await client.query("SELECT 2 AS two")).rows[0]);
    expect(status).toEqual({ two: 2 });
  });

  it("runs the work again after a serialization failure, a bounded number of times", async () => {
    const state = track(opened(cluster.url));
    let attempts = 0;
    const conflictTwice = await state.transaction(async (client) => {
      attempts += 1;
      if (attempts <= 2) await client.query("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40001'; END $$");
      return attempts;
    });
    expect(conflictTwice).toBe(3);

    attempts = 0;
    const error = await rejection(
      state,
      state.transaction(
        async (client) => {
          attempts += 1;
          await client.query("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40P01'; END $$");
        },
        { retries: 3 },
      ),
    );
    expect(attempts).toBe(4);
    expect(error?.failure).toBe("locked");
    expect(error?.detail).toMatch(/kept conflicting with concurrent transactions/);
  });

  it("serializable transactions that conflict for real all end committed, once each", async () => {
    const state = track(opened(cluster.url, { poolMax: 6 }));
    const next = () =>
      state.transaction(
        async (client) => {
          const max = await client.query<{ n: number | null }>("SELECT max(n) AS n FROM counters");
          const n = (max.rows[0]?.n ?? 0) + 1;
          await new Promise((resolve) => setTimeout(resolve, 5));
          await client.query("INSERT INTO counters VALUES ($1)", [n]);
          return n;
        },
        { isolation: "serializable", retries: 10 },
      );
    const got = await Promise.all([next(), next(), next(), next()]);
    expect([...got].sort()).toEqual([1, 2, 3, 4]);
  });

  it("says a statement or a lock wait cut at its timeout is locked", async () => {
    const state = track(opened(cluster.url, { statementTimeoutMs: 200 }));
    const slow = await rejection(
      state,
      state.transaction(async (client) => client.query("SELECT pg_sleep(2)")),
    );
    expect(slow?.failure).toBe("locked");
    await cluster.psql("INSERT INTO counters VALUES (7)");
    let release: () => void = () => undefined;
    const holder = state
      .transaction(async (client) => {
        await client.query("SELECT n FROM counters WHERE n = 7 FOR UPDATE");
        await new Promise<void>((resolve) => {
          release = resolve;
        });
      })
      .catch((err: unknown) => err);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const waited = await rejection(
      state,
      state.transaction(async (client) => client.query("SELECT n FROM counters WHERE n = 7 FOR UPDATE")),
    );
    release();
    expect(await holder).toBeUndefined();
    expect(waited?.failure).toBe("locked");
  });

  it("keeps the pool within its bound", async () => {
    const state = track(opened(cluster.url, { poolMax: 2 }));
    let most = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        state.transaction(async (client) => {
          most = Math.max(most, state.pool.totalCount);
          await client.query("SELECT pg_sleep(0.05)");
        }),
      ),
    );
    expect(most).toBeLessThanOrEqual(2);
  });

  it("survives an idle connection killed by the server, and reports it", async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      info: () => undefined,
      error: () => undefined,
      warn: (_o, msg) => warnings.push(msg),
    };
    const state = track(opened(cluster.url, { instance: "idle-victim", logger }));
    await state.transaction(async (client) => client.query("SELECT 1"));
    await cluster.psql(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'relay-shell:idle-victim'",
    );
    for (let i = 0; i < 50 && warnings.length === 0; i += 1) await new Promise((r) => setTimeout(r, 20));
    expect(warnings).toEqual(["an idle PostgreSQL connection failed"]);
    expect(await state.transaction(async (client) => (await client.query("SELECT 3 AS n")).rows[0])).toEqual({
      n: 3,
    });
  });

  it("is unavailable while the server is stopped, and works again once it is back", async () => {
    const state = track(opened(cluster.url, { connectTimeoutMs: 1000 }));
    await state.transaction(async (client) => client.query("SELECT 1"));
    await cluster.stopServer();
    try {
      const error = await rejection(
        state,
        state.transaction(async (client) => client.query("SELECT 1")),
      );
      expect(error?.failure).toBe("unavailable");
      expect(error?.detail).toMatch(new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${cluster.port} `));
    } finally {
      await cluster.startServer();
    }
    expect(await state.transaction(async (client) => (await client.query("SELECT 4 AS n")).rows[0])).toEqual({
      n: 4,
    });
  });

  it("after close, a transaction fails as unavailable and close can be called again", async () => {
    const state = opened(cluster.url);
    await state.close();
    await state.close();
    const error = await rejection(
      state,
      state.transaction(async (client) => client.query("SELECT 1")),
    );
    expect(error?.failure).toBe("unavailable");
  });
});
