import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../../test/helpers/postgres.js";
import { value } from "../../test/helpers/shared-state.js";
import { cryptoIds, systemClock } from "../core/index.js";
import { openPgState, type PgState, type PgStateOptions } from "../state/index.js";
import { actDigest } from "./payload.js";
import { openPgStore } from "./pg-store.js";
import type { ConsentAct, ConsentStore, NewRequest, StoredApproval } from "./types.js";

/**
 * What only a shared database has: several relays (each its own pool, as separate processes would
 * be) racing on the same rows, and a server that goes away and comes back. The behaviours both
 * stores share are in store-contract.test.ts.
 */

const ACT: ConsentAct = { tool: "shell_exec", tier: 3, bound: { command: "rm -rf /srv/cache" } };
const REQUEST: NewRequest = {
  act: ACT,
  actDigest: actDigest(ACT),
  basis: "write",
  session: "s1",
  clientId: "c1",
  ttlSeconds: 300,
};
const PROOF: StoredApproval = { channel: "sshsig", proof: "sig", claimedSigner: "op", at: 0 };

describe.skipIf(POSTGRES_SKIP_REASON !== null)(
  "the PostgreSQL consent store, shared by several relays",
  () => {
    let cluster: PostgresCluster;
    let databases = 0;
    const states: PgState[] = [];

    /** `count` relays on one new database, each with a pool of its own. */
    async function relays(count: number, options: Partial<PgStateOptions> = {}): Promise<ConsentStore[]> {
      databases += 1;
      const url = await cluster.createDatabase(`shared_${databases}`);
      return Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const state = value(openPgState(url, { instance: `relay-${i}`, poolMax: 10, ...options }));
          states.push(state);
          return value(await openPgStore(state, { clock: systemClock, ids: cryptoIds }));
        }),
      );
    }

    beforeAll(async () => {
      cluster = await startPostgres();
    });
    afterAll(async () => {
      await cluster?.stop();
    });
    afterEach(async () => {
      await Promise.all(states.splice(0).map((state) => state.close()));
    });

    it("five relays opening a new database at once share one schema and one instance id", async () => {
      const stores = await relays(5);
      expect(new Set(stores.map((store) => store.instanceId)).size).toBe(1);
    });

    it("of 30 consumptions of one approval from 3 relays, exactly one succeeds, every round", async () => {
      const stores = await relays(3);
      for (let round = 0; round < 5; round += 1) {
        const request = value(await stores[0]!.createRequest(REQUEST));
        value(await stores[1]!.approve(request.id, PROOF));
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) => stores[i % 3]!.consume(request.id, request.nonce)),
        );
        expect(results.filter((result) => result.ok)).toHaveLength(1);
        // The others were refused by the rules, not by a lock or an error.
        expect(new Set(results.filter((r) => !r.ok).map((r) => (r.ok ? "" : r.error.failure)))).toEqual(
          new Set(["consumed"]),
        );
      }
    });

    it("reads taken at once from 3 relays never exceed the lease's budget", async () => {
      const stores = await relays(3);
      const budget = 17;
      value(await stores[0]!.touchSession("s1", "c1"));
      const now = Date.now();
      const lease = value(
        await stores[0]!.openLease({
          session: "s1",
          openedBy: "0000000001",
          mode: "window",
          createdAt: now,
          expiresAt: now + 60_000,
          remaining: budget,
        }),
      );
      const results = await Promise.all(
        Array.from({ length: 45 }, (_, i) => stores[i % 3]!.takeLeaseRead("s1", 60_000, 1 + (i % 3))),
      );
      const taken = results.map((result) => value(result)?.taken ?? 0).reduce((a, b) => a + b, 0);
      expect(taken).toBe(budget);
      expect(value(await stores[2]!.getLease(lease.id))?.remaining).toBe(0);
    });

    it("holds the bound on waiting requests across relays creating at once", async () => {
      const stores = await relays(3);
      const bounded: NewRequest = { ...REQUEST, maxPending: { session: 100, total: 7 } };
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) => stores[i % 3]!.createRequest(bounded)),
      );
      expect(results.filter((result) => result.ok)).toHaveLength(7);
      expect(results.filter((result) => !result.ok && result.error.failure === "full")).toHaveLength(17);
    });

    it("creates one consent session when relays touch a new one at once", async () => {
      const stores = await relays(3);
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => stores[i % 3]!.touchSession("s9", "c9")),
      );
      expect(results.every((result) => result.ok)).toBe(true);
      expect(value(await stores[0]!.listSessions()).map((s) => s.id)).toEqual(["s9"]);
    });

    it("grants no read once another relay's revocation has committed", async () => {
      const [reader, operator] = await relays(2);
      value(await reader!.touchSession("s1", "c1"));
      const now = Date.now();
      const base = { session: "s1", openedBy: "0000000001", mode: "window" as const, createdAt: now };
      value(await reader!.openLease({ ...base, expiresAt: now + 60_000, remaining: 1000 }));
      const reads = Array.from({ length: 20 }, () => reader!.takeLeaseRead("s1", 60_000));
      value(await operator!.revoke("s1"));
      await Promise.all(reads);
      expect(value(await reader!.takeLeaseRead("s1", 60_000))).toBeNull();
      expect(await reader!.openLease({ ...base, expiresAt: now + 60_000, remaining: 5 })).toMatchObject({
        ok: false,
        error: {
          failure: "expired",
        },
      });
    });

    it("a row held by another transaction past the timeout is locked, not a wait without end", async () => {
      const [store] = await relays(1, { statementTimeoutMs: 300 });
      const request = value(await store!.createRequest(REQUEST));
      value(await store!.approve(request.id, PROOF));
      const holder = await states[0]!.pool.connect();
      try {
        await holder.query("BEGIN");
        await holder.query("SELECT 1 FROM consent_requests WHERE id = $1 FOR UPDATE", [request.id]);
        const held = await store!.consume(request.id, request.nonce);
        expect(held).toMatchObject({ ok: false, error: { failure: "locked" } });
        await holder.query("ROLLBACK");
      } finally {
        holder.release();
      }
      expect(value(await store!.consume(request.id, request.nonce)).status).toBe("consumed");
    });

    it("answers unavailable, never rejecting, while the server is down, and works once it is back", async () => {
      const [store] = await relays(1, { connectTimeoutMs: 1000 });
      const request = value(await store!.createRequest(REQUEST));
      await cluster.stopServer();
      try {
        const answers = await Promise.all([
          store!.getRequest(request.id),
          store!.approve(request.id, PROOF),
          store!.consumeNonce("n-1", Date.now() + 1000),
          store!.changeCounter(),
          store!.touchSession("s1", "c1"),
        ]);
        for (const answer of answers) {
          expect(answer.ok).toBe(false);
          if (!answer.ok) {
            expect(answer.error.failure).toBe("unavailable");
            expect(answer.error.detail).toMatch(
              new RegExp(`^PostgreSQL at 127\\.0\\.0\\.1:${cluster.port} `),
            );
            expect(answer.error.detail).not.toContain(cluster.password);
          }
        }
      } finally {
        await cluster.startServer();
      }
      expect(value(await store!.approve(request.id, PROOF)).status).toBe("approved");
    });
  },
);
