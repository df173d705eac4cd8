import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ApprovalVerifier, ConsentStore } from "../../src/consent/index.js";
import { openSqliteStore } from "../../src/consent/sqlite-store.js";
import { type Clock, cryptoIds } from "../../src/core/index.js";
import {
  type ConsentGate,
  type ConsentGateSettings,
  createConsentGate,
} from "../../src/runner/consent-gate.js";
import type { CallIdentity, GateVerdict, ToolContext } from "../../src/runner/tool.js";

/**
 * ADR 0024: the relay's own account owns the consent database, so a command it runs can rewrite a
 * lease's row. The reads a lease gives are those of the lease the signed read opened, with the
 * budget and lifetime of the relay's settings at that moment; a row raised afterwards gives no
 * more. The signature here is a keyed digest checked by a stand-in verifier (real OpenSSH
 * signatures: test/e2e/consent.test.ts); what is under test is the budget.
 */
const T0 = Date.UTC(2026, 11, 4, 9, 0, 0);
const SECRET = "operator-secret";
const proofOf = (payload: string) => createHash("sha256").update(`${SECRET}\0${payload}`).digest("hex");
const verifier: ApprovalVerifier = {
  verify: (approval, payload) =>
    approval.proof === proofOf(payload)
      ? { ok: true, value: { signer: "operator@test", key: "SHA256:test", channel: approval.channel } }
      : { ok: false, error: "signature does not verify" },
};
const ctx: ToolContext = {
  signal: new AbortController().signal,
  requestId: "1",
  clientId: "client-a",
  progress: () => undefined,
};
/** The shipped defaults: a window of 90 s or 20 reads. */
const SETTINGS: ConsentGateSettings = {
  leaseMode: "window",
  leaseTtlSeconds: 90,
  leaseBudget: 20,
  sessionIdleSeconds: 3600,
  approvalTtlSeconds: 300,
  waitSeconds: 0,
};

/** A shell_exec of a command the classifier proved to only read. */
const read = (command: string, session = "s1"): CallIdentity => ({
  tool: "shell_exec",
  policyText: command,
  auditArgs: { command },
  tier: 0,
  basis: "proven_read",
  args: { command },
  session,
  policy: { name: "default", confirmTier3: false, consent: true },
});

describe("a lease's budget is the one the signed read opened it with", () => {
  let dir: string;
  let path: string;
  let at: number;
  const clock: Clock = { now: () => at, monotonic: () => at };
  let store: ConsentStore;

  beforeEach(() => {
    at = T0;
    dir = mkdtempSync(join(tmpdir(), "consent-lease-budget-"));
    path = join(dir, "consent.db");
    const opened = openSqliteStore(path, { clock, ids: cryptoIds, busyTimeoutMs: 2000 });
    if (!opened.ok) throw new Error(opened.error.detail);
    store = opened.value;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const gateOver = (over: ConsentStore): ConsentGate =>
    createConsentGate({
      store: over,
      clock,
      verifier,
      settings: SETTINGS,
      describe: (request) => `act of ${request.act.tool}`,
      actOf: async (tool, args, { tier }) => ({
        ok: true,
        value: { tool, tier, bound: { command: (args as { command: string }).command } },
      }),
    });

  /** The operator signs the request a challenge named. */
  async function sign(verdict: GateVerdict): Promise<void> {
    if (verdict.kind !== "challenge") throw new Error(`expected a challenge, got ${verdict.kind}`);
    const id = /id=(\w+)/.exec(verdict.text)?.[1] ?? "";
    const request = await store.getRequest(id);
    if (!request.ok) throw new Error(request.error.detail);
    const approved = await store.approve(id, {
      channel: "sshsig",
      proof: proofOf(request.value.payload),
      claimedSigner: "SHA256:test",
      at: clock.now(),
    });
    if (!approved.ok) throw new Error(approved.error.detail);
  }

  /** What the relay's account can do to the file: any SQL, through its own connection. */
  async function asRelayAccount(sql: string): Promise<void> {
    const raw = new Database(path);
    try {
      raw.pragma("busy_timeout = 2000");
      raw.prepare(sql).run();
    } finally {
      await raw.close();
    }
  }

  /** Reads the gate lets through on the lease, up to `limit`, stopping at the first it does not. */
  async function leasedReads(gate: ConsentGate, limit: number, session = "s1"): Promise<number> {
    for (let n = 0; n < limit; n++) {
      const verdict = await gate.check(read(`cat file-${session}-${n}`, session), ctx);
      if (verdict.kind !== "proceed") return n;
      expect(verdict.action).toBe("consent_lease");
    }
    return limit;
  }

  async function openLease(gate: ConsentGate): Promise<string> {
    await sign(await gate.check(read("cat signed"), ctx));
    const executed = await gate.check(read("cat signed"), ctx);
    expect(executed).toMatchObject({ kind: "proceed", action: "consent_execute" });
    const lease = (executed.kind === "proceed" && executed.auditExtra?.consent) as { lease?: string };
    expect(lease.lease).toMatch(/^[0-9a-f]{10}$/);
    return lease.lease ?? "";
  }

  it("a budget raised in the database admits no read past the budget the lease was opened with", async () => {
    const gate = gateOver(store);
    const lease = await openLease(gate);
    await asRelayAccount(`UPDATE leases SET remaining = 100000 WHERE id = '${lease}'`);
    expect(await leasedReads(gate, 5)).toBe(5);
    // Raised again in the middle of a block the relay had taken from the store.
    await asRelayAccount("UPDATE leases SET remaining = 100000, mode = 'session'");
    expect(await leasedReads(gate, 100)).toBe(15);
    // The row still shows a large budget; the next read needs a signature of its own.
    const row = await store.getLease(lease);
    expect(row.ok && row.value).toMatchObject({ revoked: false, mode: "session" });
    expect(row.ok ? row.value?.remaining : 0).toBeGreaterThan(1000);
    const next = await gate.check(read("cat one-more"), ctx);
    expect(next).toMatchObject({ kind: "challenge", action: "consent_request" });
  });

  it("an expiry extended in the database ends the lease when the signed read's window does", async () => {
    const gate = gateOver(store);
    await openLease(gate);
    await asRelayAccount(`UPDATE leases SET remaining = 100000, expires_at = ${T0 + 86_400_000}`);
    expect(await leasedReads(gate, 3)).toBe(3);
    at = T0 + 90_000;
    expect((await gate.check(read("cat after-the-window"), ctx)).kind).toBe("challenge");
  });

  it("another relay process on the same database honours none of it, raised or not", async () => {
    await openLease(gateOver(store));
    await asRelayAccount("UPDATE leases SET remaining = 100000");
    const other = openSqliteStore(path, { clock, ids: cryptoIds, busyTimeoutMs: 2000 });
    if (!other.ok) throw new Error(other.error.detail);
    try {
      // The same session id, as a process that shares the file could claim it.
      expect((await gateOver(other.value).check(read("cat elsewhere"), ctx)).kind).toBe("challenge");
    } finally {
      await other.value.close();
    }
  });
});
