import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { localBackend, type MakeBroker, postgresBackend } from "../../test/helpers/shared-state.js";
import { type Clock, cryptoIds, type Ids } from "../core/index.js";
import type { FollowUpPlan, PlannedOperation } from "./types.js";

/**
 * The broker's contract: one list of behaviours, run against the in-memory store (one relay)
 * and the PostgreSQL one (several relays on one database).
 */

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

for (const backend of [localBackend(), postgresBackend()]) {
  describe.skipIf(backend.skip !== null)(`confirmation broker: ${backend.name}`, () => {
    let make: MakeBroker;
    beforeAll(() => backend.start(), 120_000);
    afterAll(() => backend.stop());
    beforeEach(async () => {
      make = await backend.broker();
    });

    it("mints 22-character URL-safe tokens and burns an armed one exactly once", async () => {
      const broker = make({ ttlSeconds: 120, rollback: false }, { clock: fakeClock(), ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x"));
      expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(await broker.consume(op("rm -rf x"))).toBeNull(); // planned, not armed
      expect(await broker.arm(token, null)).toEqual({ kind: "armed", followUps: null });
      expect(await broker.arm(token, null)).toEqual({ kind: "armed", followUps: null }); // idempotent
      const burnt = await broker.consume(op("rm -rf x"));
      expect(burnt?.fingerprint).toBe(createHash("sha256").update(token).digest("hex").slice(0, 12));
      expect(await broker.consume(op("rm -rf x"))).toBeNull();
      expect(await broker.arm(token, null)).toEqual({ kind: "unknown" });
      expect(await broker.pending()).toBe(0);
    });

    it("binds a token to the tool, the text and the target", async () => {
      const broker = make({ ttlSeconds: 120, rollback: false }, { clock: fakeClock(), ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x", "/a"));
      await broker.arm(token, null);
      expect(await broker.consume(op("rm -rf x", "/b"))).toBeNull();
      expect(await broker.consume(op("rm -rf y", "/a"))).toBeNull();
      expect(await broker.consume(op("rm -rf x", "/a", "shell_script"))).toBeNull();
      expect(await broker.pending()).toBe(1);
      expect(await broker.consume(op("rm -rf x", "/a"))).not.toBeNull();
    });

    it("expires tokens, armed or not, with the TTL floored at one second", async () => {
      const clock = fakeClock();
      const broker = make({ ttlSeconds: 5, rollback: false }, { clock, ids: cryptoIds });
      const early = await broker.plan(op("rm -rf a"));
      const armedLate = await broker.plan(op("rm -rf b"));
      await broker.arm(armedLate, null);
      clock.advance(4_999);
      expect(await broker.pending()).toBe(2);
      clock.advance(1); // now >= expires_at
      expect(await broker.arm(early, null)).toEqual({ kind: "unknown" });
      expect(await broker.consume(op("rm -rf b"))).toBeNull();
      expect(await broker.pending()).toBe(0);

      const tiny = make({ ttlSeconds: 0, rollback: false }, { clock, ids: cryptoIds });
      expect(tiny.ttlSeconds).toBe(1);
      const t = await tiny.plan(op("rm -rf c"));
      clock.advance(999);
      expect((await tiny.arm(t, null)).kind).toBe("armed");
      clock.advance(1);
      expect(await tiny.consume(op("rm -rf c"))).toBeNull();
    });

    it("never holds more than its bound, dropping the soonest-expiring entries first", async () => {
      const clock = fakeClock();
      const broker = make({ ttlSeconds: 60, rollback: false, maxEntries: 256 }, { clock, ids: cryptoIds });
      const tokens: string[] = [];
      for (let i = 0; i < 300; i++) {
        tokens.push(await broker.plan(op(`rm -rf ${i}`)));
        clock.advance(1);
        expect(await broker.pending()).toBeLessThanOrEqual(256);
      }
      expect(await broker.pending()).toBe(256);
      expect(await broker.inspect(tokens[0] ?? "")).toBeNull();
      expect(await broker.inspect(tokens[43] ?? "")).toBeNull();
      expect(await broker.inspect(tokens[44] ?? "")).not.toBeNull();
      expect(await broker.inspect(tokens[299] ?? "")).not.toBeNull();
    });

    it("consumes the oldest of two armed tokens for the same operation", async () => {
      const broker = make({ ttlSeconds: 60, rollback: true }, { clock: fakeClock(), ids: cryptoIds });
      const first = await broker.plan(op("rm -rf x"));
      const second = await broker.plan(op("rm -rf x"));
      await broker.arm(second, plan);
      await broker.arm(first, null);
      expect((await broker.consume(op("rm -rf x")))?.followUps).toBeNull();
      expect((await broker.consume(op("rm -rf x")))?.followUps).toEqual(plan);
    });

    it("fixes verify/rollback commands at the first arm", async () => {
      const broker = make({ ttlSeconds: 60, rollback: true }, { clock: fakeClock(), ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x"));
      expect(await broker.arm(token, plan)).toEqual({ kind: "armed", followUps: plan });
      expect(await broker.arm(token, { ...plan })).toEqual({ kind: "armed", followUps: plan });
      expect(await broker.arm(token, { ...plan, rollbackCommand: "rm -rf /" })).toEqual({ kind: "conflict" });
      expect(await broker.arm(token, null)).toEqual({ kind: "conflict" });
      const other = await broker.plan(op("rm -rf y"));
      await broker.arm(other, null);
      expect(await broker.arm(other, plan)).toEqual({ kind: "conflict" });
      // The stored plan is a frozen copy: mutating the caller's object changes nothing.
      const mutable = { ...plan };
      const third = await broker.plan(op("rm -rf z"));
      await broker.arm(third, mutable);
      mutable.rollbackCommand = "rm -rf /";
      expect((await broker.consume(op("rm -rf z")))?.followUps?.rollbackCommand).toBe(plan.rollbackCommand);
    });

    it("refuses follow-ups when rollback pairing is off (an invariant, not a user error)", async () => {
      const broker = make({ ttlSeconds: 60, rollback: false }, { clock: fakeClock(), ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x"));
      await expect(broker.arm(token, plan)).rejects.toThrow(/without rollback/);
      // An empty plan is no plan.
      expect(
        await broker.arm(token, {
          verifyCommand: "",
          rollbackCommand: "",
          verifyExpect: "",
          autoRollback: false,
        }),
      ).toEqual({ kind: "armed", followUps: null });
    });

    it("lets the arm step see the planned call, and nothing for unknown or empty tokens", async () => {
      const broker = make({ ttlSeconds: 60, rollback: true }, { clock: fakeClock(), ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x", "/srv"));
      expect(await broker.inspect(token)).toEqual({
        tool: "shell_exec",
        args: { command: "rm -rf x", cwd: "/srv" },
        armed: false,
        followUps: null,
      });
      expect(await broker.inspect("")).toBeNull();
      expect(await broker.inspect(`${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`)).toBeNull();
    });

    it("never hands out the same token twice even with a broken id source", async () => {
      let n = 0;
      const ids: Ids = { hex: () => "00", token: () => (n++ < 3 ? "same-token-aaaaaaaaaaa" : `tok-${n}`) };
      const broker = make({ ttlSeconds: 60, rollback: false }, { clock: fakeClock(), ids });
      const a = await broker.plan(op("rm -rf a"));
      const b = await broker.plan(op("rm -rf b"));
      expect(a).not.toBe(b);
      expect(await broker.pending()).toBe(2);
    });

    it("puts a burnt token back, armed as it was, when a later gate stopped the call", async () => {
      const clock = fakeClock();
      const broker = make({ ttlSeconds: 60, rollback: true }, { clock, ids: cryptoIds });
      const token = await broker.plan(op("rm -rf x"));
      await broker.arm(token, plan);
      const burnt = await broker.consume(op("rm -rf x"));
      expect(await broker.pending()).toBe(0);
      await burnt?.restore();
      expect(await broker.inspect(token)).toMatchObject({ armed: true, followUps: plan });
      expect((await broker.consume(op("rm -rf x")))?.followUps).toEqual(plan);
      // Its expiry is the original one: put back after it, it is gone.
      const late = await broker.plan(op("rm -rf y"));
      await broker.arm(late, null);
      const again = await broker.consume(op("rm -rf y"));
      clock.advance(60_000);
      await again?.restore();
      expect(await broker.inspect(late)).toBeNull();
    });
  });
}
