import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type Clock, cryptoIds, type Ids } from "../core/index.js";
import { createConfirmBroker } from "./broker.js";
import type { FollowUpPlan, PlannedOperation } from "./types.js";

function fakeClock(): Clock & { advance(ms: number): void } {
  let mono = 1_000;
  return {
    now: () => 1_700_000_000_000 + mono,
    monotonic: () => mono,
    advance(ms) {
      mono += ms;
    },
  };
}

const op = (command: string, cwd = "/a", tool = "shell_exec"): PlannedOperation => ({
  tool,
  policyText: command,
  auditArgs: { command, cwd },
  args: { command, cwd },
});

const plan: FollowUpPlan = {
  verifyCommand: "test -e /a/x",
  rollbackCommand: "cp /a/x.bak /a/x",
  verifyExpect: "",
  autoRollback: true,
};

describe("confirmation broker", () => {
  it("mints 22-character URL-safe tokens and burns an armed one exactly once", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 120, rollback: false },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const token = broker.plan(op("rm -rf x"));
    expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(broker.consume(op("rm -rf x"))).toBeNull(); // planned, not armed
    expect(broker.arm(token, null)).toEqual({ kind: "armed", followUps: null });
    expect(broker.arm(token, null)).toEqual({ kind: "armed", followUps: null }); // idempotent
    const burnt = broker.consume(op("rm -rf x"));
    expect(burnt?.fingerprint).toBe(createHash("sha256").update(token).digest("hex").slice(0, 12));
    expect(broker.consume(op("rm -rf x"))).toBeNull();
    expect(broker.arm(token, null)).toEqual({ kind: "unknown" });
    expect(broker.pending()).toBe(0);
  });

  it("binds a token to the tool, the text and the target", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 120, rollback: false },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const token = broker.plan(op("rm -rf x", "/a"));
    broker.arm(token, null);
    expect(broker.consume(op("rm -rf x", "/b"))).toBeNull();
    expect(broker.consume(op("rm -rf y", "/a"))).toBeNull();
    expect(broker.consume(op("rm -rf x", "/a", "shell_script"))).toBeNull();
    expect(broker.pending()).toBe(1);
    expect(broker.consume(op("rm -rf x", "/a"))).not.toBeNull();
  });

  it("expires tokens on the monotonic clock, armed or not, with the TTL floored at one second", () => {
    const clock = fakeClock();
    const broker = createConfirmBroker({ ttlSeconds: 5, rollback: false }, { clock, ids: cryptoIds });
    const early = broker.plan(op("rm -rf a"));
    const armedLate = broker.plan(op("rm -rf b"));
    broker.arm(armedLate, null);
    clock.advance(4_999);
    expect(broker.pending()).toBe(2);
    clock.advance(1); // now >= expires_at
    expect(broker.arm(early, null)).toEqual({ kind: "unknown" });
    expect(broker.consume(op("rm -rf b"))).toBeNull();
    expect(broker.pending()).toBe(0);

    const tiny = createConfirmBroker({ ttlSeconds: 0, rollback: false }, { clock, ids: cryptoIds });
    expect(tiny.ttlSeconds).toBe(1);
    const t = tiny.plan(op("rm -rf c"));
    clock.advance(999);
    expect(tiny.arm(t, null).kind).toBe("armed");
    clock.advance(1);
    expect(tiny.consume(op("rm -rf c"))).toBeNull();
  });

  it("never holds more than its bound, dropping the soonest-expiring entries first", () => {
    const clock = fakeClock();
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: false, maxEntries: 256 },
      { clock, ids: cryptoIds },
    );
    const tokens: string[] = [];
    for (let i = 0; i < 300; i++) {
      tokens.push(broker.plan(op(`rm -rf ${i}`)));
      clock.advance(1);
      expect(broker.pending()).toBeLessThanOrEqual(256);
    }
    expect(broker.pending()).toBe(256);
    expect(broker.inspect(tokens[0] ?? "")).toBeNull();
    expect(broker.inspect(tokens[43] ?? "")).toBeNull();
    expect(broker.inspect(tokens[44] ?? "")).not.toBeNull();
    expect(broker.inspect(tokens[299] ?? "")).not.toBeNull();
  });

  it("consumes the oldest of two armed tokens for the same operation", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: true },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const first = broker.plan(op("rm -rf x"));
    const second = broker.plan(op("rm -rf x"));
    broker.arm(second, plan);
    broker.arm(first, null);
    expect(broker.consume(op("rm -rf x"))?.followUps).toBeNull();
    expect(broker.consume(op("rm -rf x"))?.followUps).toEqual(plan);
  });

  it("fixes verify/rollback commands at the first arm", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: true },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const token = broker.plan(op("rm -rf x"));
    expect(broker.arm(token, plan)).toEqual({ kind: "armed", followUps: plan });
    expect(broker.arm(token, { ...plan })).toEqual({ kind: "armed", followUps: plan });
    expect(broker.arm(token, { ...plan, rollbackCommand: "rm -rf /" })).toEqual({ kind: "conflict" });
    expect(broker.arm(token, null)).toEqual({ kind: "conflict" });
    const other = broker.plan(op("rm -rf y"));
    broker.arm(other, null);
    expect(broker.arm(other, plan)).toEqual({ kind: "conflict" });
    // The stored plan is a frozen copy: mutating the caller's object changes nothing.
    const mutable = { ...plan };
    const third = broker.plan(op("rm -rf z"));
    broker.arm(third, mutable);
    mutable.rollbackCommand = "rm -rf /";
    expect(broker.consume(op("rm -rf z"))?.followUps?.rollbackCommand).toBe(plan.rollbackCommand);
  });

  it("refuses follow-ups when rollback pairing is off (an invariant, not a user error)", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: false },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const token = broker.plan(op("rm -rf x"));
    expect(() => broker.arm(token, plan)).toThrow(/without rollback/);
    // An empty plan is no plan.
    expect(
      broker.arm(token, { verifyCommand: "", rollbackCommand: "", verifyExpect: "", autoRollback: false }),
    ).toEqual({ kind: "armed", followUps: null });
  });

  it("lets the arm step see the planned call, and nothing for unknown or empty tokens", () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: true },
      { clock: fakeClock(), ids: cryptoIds },
    );
    const token = broker.plan(op("rm -rf x", "/srv"));
    expect(broker.inspect(token)).toEqual({
      tool: "shell_exec",
      args: { command: "rm -rf x", cwd: "/srv" },
      armed: false,
      followUps: null,
    });
    expect(broker.inspect("")).toBeNull();
    expect(broker.inspect(`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`)).toBeNull();
  });

  it("never hands out the same token twice even with a broken id source", () => {
    let n = 0;
    const ids: Ids = { hex: () => "00", token: () => (n++ < 3 ? "same-token-aaaaaaaaaaa" : `tok-${n}`) };
    const broker = createConfirmBroker({ ttlSeconds: 60, rollback: false }, { clock: fakeClock(), ids });
    const a = broker.plan(op("rm -rf a"));
    const b = broker.plan(op("rm -rf b"));
    expect(a).not.toBe(b);
    expect(broker.pending()).toBe(2);
  });
});
