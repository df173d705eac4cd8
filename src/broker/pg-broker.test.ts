import { createHash } from "node:crypto";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresBackend } from "../../test/helpers/shared-state.js";
import { cryptoIds, systemClock } from "../core/index.js";
import { openPgState, type PgState } from "../state/index.js";
import { createPgConfirmBroker } from "./pg-broker.js";
import type { ConfirmBroker, PlannedOperation } from "./types.js";

/** Several relays (one pool each) on one database: what only the PostgreSQL broker has to show. */

const op = (command: string): PlannedOperation => ({
  tool: "shell_exec",
  policyText: command,
  auditArgs: { command, cwd: "/srv" },
  args: { command, cwd: "/srv" },
});

const brokerOn = (state: PgState, maxEntries?: number): ConfirmBroker =>
  createPgConfirmBroker(
    state,
    { ttlSeconds: 120, rollback: false, ...(maxEntries ? { maxEntries } : {}) },
    { clock: systemClock, ids: cryptoIds },
  );

/** A port on 127.0.0.1 nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}

describe("a confirmation store that cannot be used", () => {
  it("rejects every method with one line naming the store and the server, never the password", async () => {
    const port = await closedPort();
    const opened = openPgState(`postgres://relay:s3cret-pw@127.0.0.1:${port}/relay`, {
      instance: "t",
      connectTimeoutMs: 2000,
    });
    if (!opened.ok) throw new Error(opened.error.detail);
    const broker = brokerOn(opened.value);
    try {
      const expected = `the Tier-3 confirmation store cannot be used: PostgreSQL at 127.0.0.1:${port} is unreachable (ECONNREFUSED)`;
      await expect(broker.plan(op("rm -rf x"))).rejects.toThrow(expected);
      await expect(broker.consume(op("rm -rf x"))).rejects.toThrow(expected);
      await expect(broker.arm("abc", null)).rejects.toThrow(expected);
      await expect(broker.inspect("abc")).rejects.toThrow(expected);
      await expect(broker.pending()).rejects.not.toThrow(/s3cret/);
    } finally {
      await opened.value.close();
    }
  });
});

const postgres = postgresBackend();

describe.skipIf(postgres.skip !== null)("the confirmation broker across relays", () => {
  let a: ConfirmBroker;
  let b: ConfirmBroker;
  let c: ConfirmBroker;
  let states: PgState[];
  let db: PgState;

  beforeAll(async () => {
    await postgres.start();
    states = await postgres.relays(3);
    [a, b, c] = states.map((state) => brokerOn(state)) as [ConfirmBroker, ConfirmBroker, ConfirmBroker];
    db = states[0] as PgState;
  }, 120_000);
  afterAll(() => postgres.stop());

  it("lets a token planned on one relay and armed on another be consumed exactly once by ten at once", async () => {
    for (let round = 0; round < 5; round += 1) {
      const operation = op(`rm -rf /srv/build-${round}`);
      const token = await a.plan(operation);
      expect(await b.arm(token, null)).toEqual({ kind: "armed", followUps: null });
      const relays = [a, b, c];
      const taken = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (relays[i % 3] as ConfirmBroker).consume(operation)),
      );
      expect(taken.filter((t) => t !== null)).toHaveLength(1);
      expect(await c.inspect(token)).toBeNull();
      expect(await a.consume(operation)).toBeNull();
    }
  });

  it("keeps the digest of a token, never the token", async () => {
    const token = await a.plan(op("rm -rf /srv/secret"));
    const rows = await db.pool.query("SELECT * FROM confirm_tokens");
    const dump = JSON.stringify(rows.rows);
    expect(dump).not.toContain(token);
    expect(dump).toContain(createHash("sha256").update(token).digest("hex"));
    // A relay that never saw the plan arms it and sees the planned call.
    expect(await c.inspect(token)).toMatchObject({ tool: "shell_exec", args: { cwd: "/srv" }, armed: false });
  });

  it("holds its bound for the whole database when relays plan at once", async () => {
    await db.pool.query("TRUNCATE confirm_tokens");
    const bounded = states.map((state) => brokerOn(state, 5));
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (bounded[i % 3] as ConfirmBroker).plan(op(`rm -rf ${i}`))),
    );
    expect(await (bounded[1] as ConfirmBroker).pending()).toBe(5);
  });

  it("gives a burnt token back through any relay, so the next try on another one finds it", async () => {
    const operation = op("rm -rf /srv/old");
    const token = await a.plan(operation);
    await a.arm(token, null);
    const burnt = await b.consume(operation);
    expect(burnt).not.toBeNull();
    await burnt?.restore();
    expect(await c.inspect(token)).toMatchObject({ armed: true });
    expect(await c.consume(operation)).not.toBeNull();
  });
});
