import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { actDigest, type ConsentAct, openPgStore } from "../../src/consent/index.js";
import { cryptoIds, systemClock } from "../../src/core/index.js";
import { openPgState, type PgState } from "../../src/state/index.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../helpers/postgres.js";
import { value } from "../helpers/shared-state.js";

const WORKER = join(import.meta.dirname, "pg-consume-worker.mjs");
const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "systemctl restart web" } };

/**
 * A relay killed in the middle of spending an approval (docs/adr/0038-several-relays-share-one-postgresql-state.md):
 * the transaction had recorded the nonce and not yet marked the request when the process died. The
 * database undoes it, and the approval is then spent exactly once by another relay.
 */
describe.skipIf(POSTGRES_SKIP_REASON !== null)("a relay killed mid-transaction", () => {
  let cluster: PostgresCluster;
  let state: PgState;
  let url: string;

  beforeAll(async () => {
    cluster = await startPostgres();
    url = await cluster.createDatabase("killed");
    state = value(openPgState(url, { instance: "survivor" }));
  });
  afterAll(async () => {
    await state?.close();
    await cluster?.stop();
  });

  it("leaves no half-spent approval", async () => {
    const store = value(await openPgStore(state, { clock: systemClock, ids: cryptoIds }));
    const request = value(
      await store.createRequest({
        act: ACT,
        actDigest: actDigest(ACT),
        basis: "service",
        session: "s1",
        clientId: "c1",
        ttlSeconds: 300,
      }),
    );
    value(await store.approve(request.id, { channel: "sshsig", proof: "sig", claimedSigner: "op", at: 0 }));

    // Writers to the requests table wait behind this lock; readers and the nonce insert do not. So
    // the doomed relay gets as far as recording the nonce, then waits to mark the request.
    const blocker = await state.pool.connect();
    await blocker.query("BEGIN");
    await blocker.query("LOCK TABLE consent_requests IN SHARE MODE");
    const doomed = spawn(process.execPath, [WORKER, url, request.id, request.nonce], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    doomed.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    doomed.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    try {
      let waiting = false;
      for (let i = 0; i < 200 && !waiting; i += 1) {
        // As the cluster's superuser: the relays' role sees no other connection's activity.
        const found = await cluster.psql(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE '%doomed-relay%' AND wait_event_type = 'Lock'",
        );
        waiting = found.trim() === "1";
        if (!waiting) await new Promise((r) => setTimeout(r, 50));
      }
      expect(waiting, output).toBe(true);
      // Mid-transaction: its nonce is recorded, invisible to others until a commit that never comes.
      const exited = new Promise((r) => doomed.once("exit", r));
      doomed.kill("SIGKILL");
      await exited;
    } finally {
      await blocker.query("COMMIT");
      blocker.release();
    }
    expect(output).toBe("consuming\n");

    // The server noticed the dead connection and rolled its work back: the approval is whole.
    const after = value(await store.getRequest(request.id));
    expect(after.status).toBe("approved");
    const spends = await Promise.all(
      Array.from({ length: 5 }, () => store.consume(request.id, request.nonce)),
    );
    expect(spends.filter((s) => s.ok)).toHaveLength(1);
    expect(spends.filter((s) => !s.ok).map((s) => (s.ok ? "" : s.error.failure))).toEqual(
      Array(4).fill("consumed"),
    );
  });
});
