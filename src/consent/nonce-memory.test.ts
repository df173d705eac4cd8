import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cryptoIds } from "../core/index.js";
import { rememberConsumedNonces } from "./nonce-memory.js";
import { actDigest } from "./payload.js";
import { openSqliteStore } from "./sqlite-store.js";
import type { ConsentAct, ConsentStore, StoreResult } from "./types.js";

const T0 = Date.UTC(2026, 11, 1, 12);

function value<T>(result: StoreResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

const ACT: ConsentAct = { tool: "shell_exec", tier: 3, bound: { command: "rm canary" } };

describe("the in-process memory of consumed nonces", () => {
  let dir: string;
  let path: string;
  let at: number;
  let store: ConsentStore;
  const clock = { now: () => at, monotonic: () => at };

  beforeEach(() => {
    at = T0;
    dir = mkdtempSync(join(tmpdir(), "consent-nonces-"));
    path = join(dir, "consent.db");
    store = rememberConsumedNonces(
      value(openSqliteStore(path, { clock, ids: cryptoIds, busyTimeoutMs: 500 })),
      clock,
    );
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a replay after the database was edited back to approved, until the approval expires", async () => {
    const r = value(
      await store.createRequest({
        act: ACT,
        actDigest: actDigest(ACT),
        basis: "b",
        session: "s",
        clientId: "c",
        ttlSeconds: 60,
      }),
    );
    value(await store.approve(r.id, { channel: "sshsig", proof: "sig", claimedSigner: "k", at: T0 }));
    value(await store.consume(r.id, r.nonce));

    // What a command running as the relay's user could do to the file.
    const edit = new Database(path);
    edit.prepare("UPDATE requests SET status = 'approved', consumed_at = NULL WHERE id = ?").run(r.id);
    edit.prepare("DELETE FROM nonces").run();
    edit.close();

    const replay = await store.consume(r.id, r.nonce);
    expect(replay.ok).toBe(false);
    if (!replay.ok) expect(replay.error.failure).toBe("consumed");
    expect(value(await store.consumeNonce(r.nonce, r.expiresAt))).toBe(false);
    expect(value(await store.getRequest(r.id)).status).toBe("approved");
  });

  it("remembers foreign nonces too, and forgets a nonce only after its expiry", async () => {
    expect(value(await store.consumeNonce("n-1", T0 + 1000))).toBe(true);
    const edit = new Database(path);
    edit.prepare("DELETE FROM nonces").run();
    edit.close();
    expect(value(await store.consumeNonce("n-1", T0 + 1000))).toBe(false);
    at = T0 + 1000;
    expect(value(await store.consumeNonce("n-1", T0 + 5000))).toBe(true);
  });
});
