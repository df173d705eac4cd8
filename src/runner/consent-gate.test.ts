import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FollowUpPlan } from "../broker/index.js";
import {
  type ApprovalVerifier,
  type ConsentStore,
  openSqliteStore,
  rememberConsumedNonces,
} from "../consent/index.js";
import { type Clock, cryptoIds, type Tier } from "../core/index.js";
import { type ConsentGate, type ConsentGateSettings, createConsentGate } from "./consent-gate.js";
import type { CallIdentity, GateVerdict, ToolContext } from "./tool.js";

/**
 * The consent gate over the real SQLite store with an injected clock. The
 * proof here is a keyed digest of the payload, checked by a stand-in
 * verifier, so these tests are about the gate's decisions; real OpenSSH
 * signatures are verified in test/e2e/consent.test.ts.
 */
const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const SECRET = "operator-secret";

function fakeClock(): Clock & { advance(ms: number): void } {
  let at = T0;
  return { now: () => at, monotonic: () => at, advance: (ms) => (at += ms) };
}

const proofOf = (payload: string) => createHash("sha256").update(`${SECRET}\0${payload}`).digest("hex");

const verifier: ApprovalVerifier = {
  verify(approval, payload) {
    return approval.proof === proofOf(payload)
      ? { ok: true, value: { signer: "operator@test", key: "SHA256:test", channel: approval.channel } }
      : { ok: false, error: "signature does not verify" };
  },
};

const ctx: ToolContext = {
  signal: new AbortController().signal,
  requestId: "1",
  clientId: "client-a",
  progress: () => undefined,
};

/** A shell_exec call; at Tier 0 it is a command proven to only read (basis proven_read). */
function call(command: string, tier: Tier, session = "s1", followUps?: FollowUpPlan): CallIdentity {
  return {
    tool: "shell_exec",
    policyText: command,
    auditArgs: { command },
    tier,
    basis: tier === 0 ? "proven_read" : "test",
    args: { command },
    session,
    policy: { name: "default", confirmTier3: false, consent: true },
    ...(followUps ? { followUps } : {}),
  };
}

const SETTINGS: ConsentGateSettings = {
  leaseMode: "manual",
  leaseTtlSeconds: 90,
  leaseBudget: 3,
  sessionIdleSeconds: 3600,
  approvalTtlSeconds: 300,
  waitSeconds: 0,
};

describe("the consent gate", () => {
  let dir: string;
  let store: ConsentStore;
  let clock: ReturnType<typeof fakeClock>;
  let describable: boolean;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "consent-gate-"));
    clock = fakeClock();
    describable = true;
    const opened = openSqliteStore(join(dir, "consent.db"), { clock, ids: cryptoIds, busyTimeoutMs: 500 });
    if (!opened.ok) throw new Error(opened.error.detail);
    store = rememberConsumedNonces(opened.value, clock);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function gateWith(
    settings: Partial<ConsentGateSettings> = {},
    sleep?: (ms: number, signal: AbortSignal) => Promise<void>,
  ): ConsentGate {
    return createConsentGate({
      store,
      clock,
      ...(sleep ? { sleep } : {}),
      verifier,
      settings: { ...SETTINGS, ...settings },
      describe: (request) => `act of ${request.act.tool}`,
      async actOf(tool, args, { tier }) {
        if (!describable) return { ok: false, error: "no entry for this tool" };
        return { ok: true, value: { tool, tier, bound: { command: (args as { command: string }).command } } };
      },
    });
  }

  /** A challenge verdict naming a stored request, for approve(). */
  function challengeOf(request: { id: string }): GateVerdict {
    return {
      kind: "challenge",
      text: `[CONSENT REQUIRED id=${request.id} expires_in=1s]`,
      action: "consent_request",
    };
  }

  /** Approve the request a challenge named, as the operator would. */
  async function approve(verdict: GateVerdict, proof?: string): Promise<string> {
    if (verdict.kind !== "challenge") throw new Error(`expected a challenge, got ${verdict.kind}`);
    const id = /id=(\w+)/.exec(verdict.text)?.[1] ?? "";
    const request = await store.getRequest(id);
    if (!request.ok) throw new Error(request.error.detail);
    const approved = await store.approve(id, {
      channel: "sshsig",
      proof: proof ?? proofOf(request.value.payload),
      claimedSigner: "SHA256:test",
      at: clock.now(),
    });
    if (!approved.ok) throw new Error(approved.error.detail);
    return id;
  }

  it("lets the fixed read-only tools through and asks for everything else, proven reads included", async () => {
    const gate = gateWith();
    const info: CallIdentity = { ...call("", 0), tool: "server_info", basis: "read_only_tool" };
    expect(await gate.check(info, ctx)).toEqual({ kind: "proceed" });
    expect(await gate.check(call("ls", 0), ctx)).toMatchObject({
      kind: "challenge",
      action: "consent_request",
    });
    const asked = await gate.check(call("echo hi", 1), ctx);
    expect(asked).toMatchObject({
      kind: "challenge",
      action: "consent_request",
      outcome: "consent_required",
    });
    expect(asked.kind === "challenge" && asked.text).toMatch(
      /^\[CONSENT REQUIRED id=[0-9a-f]{10} expires_in=300s\]\nact of shell_exec$/,
    );
    // Asking again before a decision names the same request.
    const again = await gate.check(call("echo hi", 1), ctx);
    expect(again.kind === "challenge" && again.text.split("\n")[0]).toBe(
      asked.kind === "challenge" ? asked.text.split("\n")[0] : "",
    );
  });

  it("refuses an act the table cannot describe instead of asking to sign it blank", async () => {
    describable = false;
    const verdict = await gateWith().check(call("touch x", 2), ctx);
    expect(verdict).toMatchObject({ kind: "refuse", action: "consent_refuse" });
    expect(verdict.kind === "refuse" && verdict.reason).toContain("cannot be described");
    expect(await store.listRequests()).toEqual({ ok: true, value: [] });
  });

  it("runs an approved act once, with the capability, and never again", async () => {
    const gate = gateWith();
    const id = await approve(await gate.check(call("touch x", 2), ctx));
    const ran = await gate.check(call("touch x", 2), ctx);
    expect(ran).toMatchObject({
      kind: "proceed",
      action: "consent_execute",
      auditExtra: { consent: { request: id, approver: "operator@test", key: "SHA256:test" } },
      consent: { request: id, signer: "operator@test" },
    });
    expect((await gate.check(call("touch x", 2), ctx)).kind).toBe("challenge");
  });

  it("waits for the decision on the injected clock, and runs once the human approved", async () => {
    let waited = 0;
    let request = "";
    const gate = gateWith({ waitSeconds: 30 }, async (ms) => {
      waited += ms;
      clock.advance(ms);
      // The operator decides after ten seconds of the call's wait.
      if (waited >= 10_000 && request === "") {
        const pending = await store.listRequests();
        if (pending.ok && pending.value[0]) request = await approve(challengeOf(pending.value[0]));
      }
    });
    const verdict = await gate.check(call("touch waited", 2), ctx);
    expect(verdict).toMatchObject({ kind: "proceed", action: "consent_execute" });
    expect(waited).toBeGreaterThanOrEqual(10_000);
    expect(waited).toBeLessThan(30_000);
    // With nobody deciding, the wait ends at its bound and answers the challenge.
    waited = 0;
    const unanswered = await gateWith({ waitSeconds: 5 }, async (ms) => {
      waited += ms;
      clock.advance(ms);
    }).check(call("touch nobody", 2), ctx);
    expect(unanswered.kind).toBe("challenge");
    expect(waited).toBe(5_000);
  });

  it("does not run another act on an approval, nor an expired or forged one", async () => {
    const gate = gateWith();
    await approve(await gate.check(call("touch x", 2), ctx));
    expect((await gate.check(call("touch y", 2), ctx)).kind).toBe("challenge");
    expect((await gate.check(call("touch x", 3), ctx)).kind).toBe("challenge");

    await approve(await gate.check(call("touch z", 2), ctx), "0".repeat(64));
    // An approval that does not verify is no approval: the request still waits for a valid one.
    const forged = await gate.check(call("touch z", 2), ctx);
    expect(forged.kind === "challenge" && forged.text).toMatch(
      /still waits for a valid approval: its stored approval does not verify \(signature does not verify\)/,
    );

    clock.advance(301_000);
    const late = await gate.check(call("touch x", 2), ctx);
    expect(late.kind).toBe("challenge");
  });

  it("refuses a replay of a consumed approval marked unused again in the database", async () => {
    const gate = gateWith();
    const id = await approve(await gate.check(call("touch x", 2), ctx));
    expect((await gate.check(call("touch x", 2), ctx)).kind).toBe("proceed");
    const db = join(dir, "consent.db");
    const Database = (await import("better-sqlite3")).default;
    const raw = new Database(db);
    raw.prepare("UPDATE requests SET status = 'approved', consumed_at = NULL WHERE id = ?").run(id);
    raw.prepare("DELETE FROM nonces").run();
    raw.close();
    const replay = await gate.check(call("touch x", 2), ctx);
    expect(replay.kind === "refuse" && replay.reason).toMatch(/already used/);
  });

  it("binds the verify and rollback commands of a confirmed call into the act", async () => {
    const gate = gateWith();
    const plan = {
      verifyCommand: "test -f x",
      rollbackCommand: "rm x",
      verifyExpect: "",
      autoRollback: true,
    };
    await approve(await gate.check(call("touch x", 2, "s1", plan), ctx));
    expect(
      (await gate.check(call("touch x", 2, "s1", { ...plan, rollbackCommand: "rm -rf /" }), ctx)).kind,
    ).toBe("challenge");
    expect((await gate.check(call("touch x", 2), ctx)).kind).toBe("challenge");
    expect((await gate.check(call("touch x", 2, "s1", plan), ctx)).kind).toBe("proceed");
  });

  it("a signed Tier-1 call opens no lease", async () => {
    const gate = gateWith({ leaseMode: "window" });
    await approve(await gate.check(call("touch a", 1), ctx));
    expect((await gate.check(call("touch a", 1), ctx)).kind).toBe("proceed");
    expect(await store.listLeases()).toEqual({ ok: true, value: [] });
    expect((await gate.check(call("cat b", 0), ctx)).kind).toBe("challenge");
  });

  it("manual mode: every read is its own signed act", async () => {
    const gate = gateWith({ leaseMode: "manual" });
    await approve(await gate.check(call("cat a", 0), ctx));
    expect((await gate.check(call("cat a", 0), ctx)).kind).toBe("proceed");
    expect((await gate.check(call("cat b", 0), ctx)).kind).toBe("challenge");
    expect(await store.listLeases()).toEqual({ ok: true, value: [] });
  });

  it("window mode: a signed read opens a lease that ends at its TTL or its budget", async () => {
    const gate = gateWith({ leaseMode: "window", leaseTtlSeconds: 90, leaseBudget: 3 });
    await approve(await gate.check(call("cat a", 0), ctx));
    expect(await gate.check(call("cat a", 0), ctx)).toMatchObject({
      kind: "proceed",
      action: "consent_execute",
    });
    for (const file of ["b", "c", "d"]) {
      expect(await gate.check(call(`cat ${file}`, 0), ctx)).toMatchObject({ action: "consent_lease" });
    }
    expect((await gate.check(call("cat e", 0), ctx)).kind).toBe("challenge");

    // A second lease, ended by time instead.
    await approve(await gate.check(call("cat f", 0), ctx));
    expect((await gate.check(call("cat f", 0), ctx)).kind).toBe("proceed");
    clock.advance(89_000);
    expect(await gate.check(call("cat g", 0), ctx)).toMatchObject({ action: "consent_lease" });
    clock.advance(2_000);
    expect((await gate.check(call("cat h", 0), ctx)).kind).toBe("challenge");
  });

  it("a lease serves reads of its own session only, and never a mutation", async () => {
    const gate = gateWith({ leaseMode: "window" });
    await approve(await gate.check(call("cat a", 0, "s1"), ctx));
    await gate.check(call("cat a", 0, "s1"), ctx);
    expect((await gate.check(call("cat b", 0, "s2"), ctx)).kind).toBe("challenge");
    expect((await gate.check(call("touch b", 2, "s1"), ctx)).kind).toBe("challenge");
    // Tier 1 is not a read: it may write a file a later call runs (`printf … > s.sh`, then `bash < s.sh`).
    expect((await gate.check(call("printf 'rm -rf x' > s.sh", 1, "s1"), ctx)).kind).toBe("challenge");
    // A Tier-0 call that is not a proven read (a fixed tool's tier) does not take from the lease either.
    const tool: CallIdentity = { ...call("", 0, "s1"), tool: "server_info", basis: "read_only_tool" };
    expect(await gate.check(tool, ctx)).toEqual({ kind: "proceed" });
    expect(await gate.check(call("cat b", 0, "s1"), ctx)).toMatchObject({ action: "consent_lease" });
  });

  it("session mode: the lease outlives the window but ends with the session or its idle time", async () => {
    const gate = gateWith({
      leaseMode: "session",
      leaseTtlSeconds: 90,
      leaseBudget: 100,
      sessionIdleSeconds: 600,
    });
    await approve(await gate.check(call("cat a", 0), ctx));
    await gate.check(call("cat a", 0), ctx);
    clock.advance(500_000);
    expect(await gate.check(call("cat b", 0), ctx)).toMatchObject({ action: "consent_lease" });
    clock.advance(601_000);
    expect((await gate.check(call("cat c", 0), ctx)).kind).toBe("challenge");

    await approve(await gate.check(call("cat d", 0, "s2"), ctx));
    await gate.check(call("cat d", 0, "s2"), ctx);
    expect(await gate.check(call("cat e", 0, "s2"), ctx)).toMatchObject({ action: "consent_lease" });
    await gate.endSession("s2");
    expect((await gate.check(call("cat f", 0, "s2"), ctx)).kind).toBe("challenge");
  });

  it("never honours a lease row it did not open, nor a budget raised in the database", async () => {
    const gate = gateWith({ leaseMode: "window", leaseBudget: 2 });
    await approve(await gate.check(call("cat a", 0), ctx));
    await gate.check(call("cat a", 0), ctx);
    const Database = (await import("better-sqlite3")).default;
    const raw = new Database(join(dir, "consent.db"));
    raw.prepare("UPDATE leases SET remaining = 1000").run();
    raw.close();
    expect(await gate.check(call("cat b", 0), ctx)).toMatchObject({ action: "consent_lease" });
    expect(await gate.check(call("cat c", 0), ctx)).toMatchObject({ action: "consent_lease" });
    expect((await gate.check(call("cat d", 0), ctx)).kind).toBe("challenge");

    // A lease written into the store by someone else, for another session.
    const opened = await store.touchSession("s9", "client-a");
    expect(opened.ok).toBe(true);
    await store.openLease({
      session: "s9",
      openedBy: "forged",
      mode: "window",
      createdAt: clock.now(),
      expiresAt: clock.now() + 60_000,
      remaining: 50,
    });
    expect((await gate.check(call("cat e", 0, "s9"), ctx)).kind).toBe("challenge");
  });

  it("takes reads from the store in blocks, yet a revocation by the operator holds on the very next read", async () => {
    const gate = gateWith({ leaseMode: "window", leaseBudget: 100 });
    await approve(await gate.check(call("cat a", 0), ctx));
    await gate.check(call("cat a", 0), ctx);
    const operator = openSqliteStore(join(dir, "consent.db"), { clock, ids: cryptoIds, busyTimeoutMs: 500 });
    if (!operator.ok) throw new Error(operator.error.detail);
    try {
      expect(await gate.check(call("cat b", 0), ctx)).toMatchObject({ action: "consent_lease" });
      const seen = await operator.value.changeCounter();
      // Reads served from the block taken by "cat b" commit nothing.
      for (const file of ["c", "d", "e"]) {
        expect(await gate.check(call(`cat ${file}`, 0), ctx)).toMatchObject({ action: "consent_lease" });
      }
      expect(await operator.value.changeCounter()).toEqual(seen);
      expect(await operator.value.revokeAll()).toMatchObject({ ok: true, value: 1 });
      expect((await gate.check(call("cat f", 0), ctx)).kind).toBe("challenge");
    } finally {
      await operator.value.close();
    }
  });

  it("refuses a denied act with the operator's reason", async () => {
    const gate = gateWith();
    const asked = await gate.check(call("touch x", 2), ctx);
    const id = asked.kind === "challenge" ? (/id=(\w+)/.exec(asked.text)?.[1] ?? "") : "";
    expect((await store.deny(id, "alice", "not today")).ok).toBe(true);
    const verdict = await gate.check(call("touch x", 2), ctx);
    expect(verdict.kind === "refuse" && verdict.reason).toBe(
      `consent: request ${id} was denied by alice: not today`,
    );
  });

  it("waits for the decision when asked to, with progress, and runs once approved", async () => {
    const real: Clock = { now: () => Date.now(), monotonic: () => performance.now() };
    const opened = openSqliteStore(join(dir, "wait.db"), { clock: real, ids: cryptoIds, busyTimeoutMs: 500 });
    if (!opened.ok) throw new Error(opened.error.detail);
    const waitStore = opened.value;
    try {
      const gate = createConsentGate({
        store: waitStore,
        clock: real,
        verifier,
        settings: { ...SETTINGS, waitSeconds: 5 },
        describe: () => "",
        pollMs: 20,
        actOf: async (tool, _args, { tier }) => ({
          ok: true,
          value: { tool, tier, bound: { command: "touch w" } },
        }),
      });
      const progress: string[] = [];
      const pending = gate.check(call("touch w", 2), {
        ...ctx,
        progress: (_d, _t, m) => progress.push(m ?? ""),
      });
      await new Promise((r) => setTimeout(r, 100));
      const listed = await waitStore.listRequests();
      const request = listed.ok ? listed.value[0] : undefined;
      if (!request) throw new Error("no pending request");
      await waitStore.approve(request.id, {
        channel: "sshsig",
        proof: proofOf(request.payload),
        claimedSigner: "x",
        at: Date.now(),
      });
      expect(await pending).toMatchObject({ kind: "proceed", action: "consent_execute" });
      expect(progress[0]).toContain(request.id);
    } finally {
      await waitStore.close();
    }
  });
});
