import { describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { type ConfirmBroker, createConfirmBroker } from "../broker/index.js";
import { cryptoIds, RelayError } from "../core/index.js";
import { createConfirmGate } from "./confirm-gate.js";
import type { CallIdentity, ToolContext } from "./tool.js";

const ctx = { signal: new AbortController().signal, requestId: "1", clientId: "", progress: () => undefined };

const call = (tier: CallIdentity["tier"], command = "rm -rf /srv/x"): CallIdentity => ({
  tool: "shell_exec",
  policyText: command,
  auditArgs: { command, cwd: "/srv" },
  tier,
  basis: "file_destruction",
  args: { command, cwd: "/srv" },
  session: "s1",
  policy: { name: "default", confirmTier3: true, consent: false },
});

describe("the Tier-3 confirmation gate", () => {
  it("plans, then lets the armed call run once, and gives the token back when asked", async () => {
    const broker = createConfirmBroker(
      { ttlSeconds: 60, rollback: false },
      { clock: manualClock(), ids: cryptoIds },
    );
    const gate = createConfirmGate(broker);
    expect(await gate.check(call(2), ctx as ToolContext)).toEqual({ kind: "proceed" });
    const first = await gate.check(call(3), ctx as ToolContext);
    expect(first).toMatchObject({ kind: "challenge", action: "confirm_plan" });
    const token = /token="([^"]+)"/.exec(first.kind === "challenge" ? first.text : "")?.[1] ?? "";
    await broker.arm(token, null);
    const run = await gate.check(call(3), ctx as ToolContext);
    expect(run).toMatchObject({ kind: "proceed", action: "confirm_execute" });
    expect(await broker.pending()).toBe(0);
    await (run.kind === "proceed" ? run.release?.() : undefined);
    expect(await broker.pending()).toBe(1);
  });

  it("refuses the call, naming why, when the store cannot be used", async () => {
    const down = (): Promise<never> =>
      Promise.reject(
        RelayError.untyped(
          "the Tier-3 confirmation store cannot be used: PostgreSQL at db:5432 is unreachable (ECONNREFUSED)",
        ),
      );
    const broker: ConfirmBroker = {
      ttlSeconds: 60,
      rollback: false,
      plan: down,
      inspect: down,
      arm: down,
      consume: down,
      pending: down,
    };
    expect(await createConfirmGate(broker).check(call(3), ctx as ToolContext)).toEqual({
      kind: "refuse",
      reason:
        "the Tier-3 confirmation store cannot be used: PostgreSQL at db:5432 is unreachable (ECONNREFUSED); nothing ran",
      action: "confirm_plan",
    });
  });
});
