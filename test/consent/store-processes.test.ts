import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actDigest } from "../../src/consent/payload.js";
import { openSqliteStore } from "../../src/consent/sqlite-store.js";
import type { ConsentAct, ConsentStore, StoreResult } from "../../src/consent/types.js";
import { cryptoIds, systemClock } from "../../src/core/index.js";
import { type StoreWorker, sendAll, startWorker } from "./store-workers.js";

/** Long enough that a write never waits this long under load: a "locked" here would be a real bug. */
const PATIENT_MS = 10_000;
const WORKERS = 8;

function value<T>(result: StoreResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "touch canary", cwd: "/tmp" } };

describe("one consent database shared by several processes", () => {
  let dir: string;
  let path: string;
  let store: ConsentStore;
  let workers: StoreWorker[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "consent-procs-"));
    path = join(dir, "consent.db");
    // All of them open a database that does not exist yet, at once: one creates it, all share it.
    workers = await Promise.all(Array.from({ length: WORKERS }, () => startWorker(path, PATIENT_MS)));
    store = value(openSqliteStore(path, { clock: systemClock, ids: cryptoIds, busyTimeoutMs: PATIENT_MS }));
  });
  afterAll(async () => {
    for (const worker of workers) worker.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is created once: every process sees the same instance id", () => {
    expect(new Set(workers.map((w) => w.instanceId))).toEqual(new Set([store.instanceId]));
  });

  it("lets exactly one of eight racing processes consume an approval, round after round", async () => {
    for (let round = 0; round < 6; round += 1) {
      const request = value(
        await store.createRequest({
          act: ACT,
          actDigest: actDigest(ACT),
          basis: "write",
          session: "s",
          clientId: "c",
          ttlSeconds: 300,
        }),
      );
      value(
        await store.approve(request.id, {
          channel: "sshsig",
          proof: "sig",
          claimedSigner: "SHA256:x",
          at: Date.now(),
        }),
      );
      const answers = await sendAll(workers, { op: "consume", id: request.id, nonce: request.nonce });
      const winners = answers.filter((a) => a.ok === true);
      const refusals = answers.filter((a) => a.ok === false);
      expect(winners).toHaveLength(1);
      expect(refusals).toHaveLength(WORKERS - 1);
      for (const refusal of refusals) expect(["consumed", "locked"]).toContain(refusal.failure);
      expect(value(await store.getRequest(request.id)).status).toBe("consumed");
    }
  });

  it("never lets processes sharing a lease take more reads than its budget (property)", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: WORKERS }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 40 }),
        async (k, m, budget) => {
          run += 1;
          const session = `prop-${run}`;
          value(await store.touchSession(session, "c"));
          const now = Date.now();
          const lease = value(
            await store.openLease({
              session,
              openedBy: "0000000000",
              mode: "window",
              createdAt: now,
              expiresAt: now + 600_000,
              remaining: budget,
            }),
          );
          const answers = await sendAll(workers.slice(0, k), {
            op: "take",
            session,
            idleMs: 600_000,
            times: m,
          });
          const taken = answers.reduce((sum, a) => sum + Number(a.taken), 0);
          const locked = answers.reduce((sum, a) => sum + Number(a.locked) + Number(a.other), 0);
          expect(locked).toBe(0);
          expect(taken).toBe(Math.min(budget, k * m));
          const left = value(await store.listLeases()).find((l) => l.id === lease.id);
          expect(left?.remaining).toBe(budget - taken);
        },
      ),
      { numRuns: 8 },
    );
  });

  it("refuses a write as locked while another process holds the lock past the busy timeout", async () => {
    const impatient = value(
      openSqliteStore(path, { clock: systemClock, ids: cryptoIds, busyTimeoutMs: 200 }),
    );
    const holder = workers[0] as StoreWorker;
    try {
      const request = value(
        await impatient.createRequest({
          act: ACT,
          actDigest: actDigest(ACT),
          basis: "write",
          session: "s",
          clientId: "c",
          ttlSeconds: 300,
        }),
      );
      value(
        await impatient.approve(request.id, { channel: "sshsig", proof: "sig", claimedSigner: "k", at: 0 }),
      );
      expect(await holder.send({ op: "hold" })).toEqual({ held: true });
      const started = performance.now();
      const refused = await impatient.consume(request.id, request.nonce);
      const waited = performance.now() - started;
      expect(refused.ok).toBe(false);
      if (!refused.ok) expect(refused.error.failure).toBe("locked");
      expect(waited).toBeGreaterThanOrEqual(150);
      expect((await impatient.touchSession("locked-out", "c")).ok).toBe(false);
      // Opening an existing database only reads it, so it does not wait for the writer.
      const reader = openSqliteStore(path, { clock: systemClock, ids: cryptoIds, busyTimeoutMs: 200 });
      expect(reader.ok).toBe(true);
      if (reader.ok) await reader.value.close();
      // Reads go on under write-ahead logging, and nothing was written behind the lock.
      expect(value(await impatient.getRequest(request.id)).status).toBe("approved");
      expect(await holder.send({ op: "release" })).toEqual({ released: true });
      expect(value(await impatient.consume(request.id, request.nonce)).status).toBe("consumed");
    } finally {
      await impatient.close();
    }
  });
});
