import { createHash } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/** The Tier-3 confirmation broker (ADR 0009) through the built server and the SDK client. */

const CHALLENGE =
  /^\[CONFIRM REQUIRED tier 3 \(IRREVERSIBLE\): this irreversible operation needs a second step\. Call operation_confirm\(token="([A-Za-z0-9_-]{22})"\) then re-issue this exact call within (\d+)s\.\]$/;
const ARMED = "[armed: re-issue the exact Tier-3 call now to execute it]";
const INVALID = "[invalid or expired confirmation token]";

const fingerprint = (token: string) => createHash("sha256").update(token).digest("hex").slice(0, 12);

function tokenOf(text: string): string {
  const match = CHALLENGE.exec(text);
  if (!match?.[1]) throw new Error(`not a challenge: ${text}`);
  return match[1];
}

/** A canary file in the test's own temp dir: the only thing a destructive command here may aim at. */
function canary(dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, name);
  writeFileSync(path, "canary\n");
  return path;
}

async function pending(s: TestServer): Promise<number> {
  const info = JSON.parse((await s.call("server_info")).text) as { confirm: { pending: number } };
  return info.confirm.pending;
}

describe("confirmation broker off (the default)", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s.close();
  });

  it("runs a Tier-3 call at once and writes the record without an action field", async () => {
    const victim = canary(join(s.dir, "off"), "victim.txt");
    const r = await s.call("shell_exec", { command: "rm -f victim.txt", cwd: join(s.dir, "off") });
    expect(r.text.startsWith("[exit 0]\n")).toBe(true);
    expect(existsSync(victim)).toBe(false);
    expect(r.structured.action).toBeNull();
    const rec = s.records().at(-1) ?? {};
    // Byte-identical in shape to a build without the broker: these keys, in this order, and no others.
    expect(Object.keys(rec)).toEqual([
      "ts",
      "tool",
      "tier",
      "denied",
      "args",
      "output_sha256",
      "output_len",
      "exit_code",
      "request_id",
    ]);
    expect(rec).toMatchObject({ tool: "shell_exec", tier: 3, denied: false, exit_code: 0 });
    expect(s.auditText()).not.toContain('"action"');
  });

  it("operation_confirm exists, is Tier 0, and says the broker is disabled", async () => {
    const r = await s.call("operation_confirm", { token: "anything", verify_command: "true" });
    expect(r.text).toBe("[confirmation broker disabled (RELAY_SHELL_CONFIRM_TIER3 is off)]");
    expect(r.structured.tier).toBe(0);
    const rec = s.records().at(-1);
    expect(rec?.args).toEqual({ token_sha256: fingerprint("anything") });
    expect(rec).not.toHaveProperty("action");
    const info = JSON.parse((await s.call("server_info")).text) as { confirm: Record<string, unknown> };
    expect(info.confirm).toEqual({ tier3: false, ttl: 120, pending: 0, rollback: false });
  });
});

describe("confirmation broker on", () => {
  let s: TestServer;
  const tokens: string[] = [];
  const plan = async (args: Record<string, unknown>, tool = "shell_exec") => {
    const r = await s.call(tool, args);
    const token = tokenOf(r.text);
    tokens.push(token);
    return { token, result: r };
  };

  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_CONFIRM_TIER3: "true" });
  });
  afterAll(async () => {
    // The raw token never reaches the audit file, whatever path it took (SC: ADR 0009).
    const audit = s.auditText();
    expect(tokens.length).toBeGreaterThan(5);
    for (const token of tokens) expect(audit).not.toContain(token);
    await s.close();
  });

  it("plans without running, arms, executes once, then challenges again", async () => {
    const dir = join(s.dir, "flow");
    const victim = canary(dir, "victim.txt");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const { token, result } = await plan(call);
    expect(Number(CHALLENGE.exec(result.text)?.[2])).toBe(120);
    expect(existsSync(victim)).toBe(true); // the plan step ran nothing
    expect(result.structured).toMatchObject({
      tier: 3,
      action: "confirm_plan",
      exit_code: null,
      notices: [],
    });
    expect(s.records().at(-1)).toMatchObject({
      tool: "shell_exec",
      tier: 3,
      denied: false,
      exit_code: null,
      action: "confirm_plan",
    });
    expect(await pending(s)).toBe(1);

    expect((await s.call("operation_confirm", { token })).text).toBe(ARMED);
    expect((await s.call("operation_confirm", { token })).text).toBe(ARMED); // idempotent
    const arm = s.records().at(-1);
    expect(arm).toMatchObject({
      tool: "operation_confirm",
      tier: 0,
      args: { token_sha256: fingerprint(token) },
    });
    expect(Object.keys(arm?.args as object)).toEqual(["token_sha256"]);
    expect(arm).not.toHaveProperty("action");
    expect(existsSync(victim)).toBe(true);

    const run = await s.call("shell_exec", call);
    expect(run.text.startsWith("[exit 0]\n")).toBe(true);
    expect(run.structured.action).toBe("confirm_execute");
    expect(run.structured.notices).toEqual([expect.stringContaining("it was explicitly confirmed first")]);
    expect(existsSync(victim)).toBe(false);
    expect(s.records().at(-1)).toMatchObject({ action: "confirm_execute", exit_code: 0, tier: 3 });
    expect(await pending(s)).toBe(0);

    // Single use: the same call is challenged again, and the spent token arms nothing.
    canary(dir, "victim.txt");
    await plan(call);
    expect((await s.call("operation_confirm", { token })).text).toBe(INVALID);
    expect(existsSync(victim)).toBe(true);
  });

  it("binds the token to the target: armed for cwd A it neither runs nor is spent in cwd B", async () => {
    const a = join(s.dir, "A");
    const b = join(s.dir, "B");
    const keepA = canary(a, "keep.txt");
    const keepB = canary(b, "keep.txt");
    const { token } = await plan({ command: "rm -rf ./keep.txt", cwd: a });
    expect((await s.call("operation_confirm", { token })).text).toBe(ARMED);
    const other = await s.call("shell_exec", { command: "rm -rf ./keep.txt", cwd: b });
    tokens.push(tokenOf(other.text));
    expect(existsSync(keepB)).toBe(true);
    // Same text on another tool, another text on the same tool: not this operation either.
    tokens.push(tokenOf((await s.call("shell_script", { script: "rm -rf ./keep.txt", cwd: a })).text));
    tokens.push(tokenOf((await s.call("shell_exec", { command: "rm -rf ./keep.txt ", cwd: a })).text));
    expect(existsSync(keepA)).toBe(true);
    // The armed token was not consumed by those attempts: A still executes.
    const run = await s.call("shell_exec", { command: "rm -rf ./keep.txt", cwd: a });
    expect(run.structured.action).toBe("confirm_execute");
    expect(existsSync(keepA)).toBe(false);
    expect(existsSync(keepB)).toBe(true);
  });

  it("re-challenges bogus and tampered tokens and leaves calls below Tier 3 alone", async () => {
    const dir = join(s.dir, "bogus");
    const victim = canary(dir, "victim.txt");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const { token } = await plan(call);
    const last = token.at(-1) === "A" ? "B" : "A";
    for (const bad of [`${token.slice(0, -1)}${last}`, "not-a-token", "", `${token} `]) {
      expect((await s.call("operation_confirm", { token: bad })).text).toBe(INVALID);
    }
    await plan(call);
    expect(existsSync(victim)).toBe(true);
    expect(
      s
        .records()
        .find(
          (r) => r.tool === "operation_confirm" && (r.args as { token_sha256: string }).token_sha256 === "",
        ),
    ).toBeDefined();

    const tier2 = await s.call("shell_exec", { command: "truncate -s 0 victim.txt", cwd: dir });
    expect(tier2.text.startsWith("[exit 0]\n")).toBe(true);
    expect(tier2.structured).toMatchObject({ tier: 2, action: null });
    const tier1 = await s.call("shell_exec", { command: "echo hi" });
    expect(tier1.text).toBe("[exit 0]\nhi\n");
  });

  it("rejects verify/rollback parameters while rollback pairing is off, and does not arm", async () => {
    const dir = join(s.dir, "norollback");
    const victim = canary(dir, "victim.txt");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const { token } = await plan(call);
    const r = await s.call("operation_confirm", { token, rollback_command: "touch victim.txt" });
    expect(r.text).toBe(
      "[ERROR: verify_command, rollback_command, verify_expect and auto_rollback need RELAY_SHELL_CONFIRM_ROLLBACK=true; the token was not armed]",
    );
    await plan(call);
    expect(existsSync(victim)).toBe(true);
  });

  it("records only the fingerprint even for a malformed arm call", async () => {
    const { token } = await plan({ command: "rm -rf ./nothing-here", cwd: s.dir });
    const r = await s.call("operation_confirm", { token, auto_rollback: "maybe" });
    expect(r.text).toMatch(/^\[DENIED tier 0 \(READ_ONLY\): invalid arguments: auto_rollback/);
    expect(s.records().at(-1)?.args).toEqual({ token_sha256: fingerprint(token), auto_rollback: "maybe" });
  });
});

describe("confirmation tokens expire", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_CONFIRM_TIER3: "true", RELAY_SHELL_CONFIRM_TTL: "5" });
  });
  afterAll(async () => {
    await s.close();
  });

  it("an expired token, armed or not, re-challenges and arms nothing", async () => {
    const dir = join(s.dir, "ttl");
    const victim = canary(dir, "victim.txt");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const first = tokenOf((await s.call("shell_exec", call)).text);
    expect(CHALLENGE.exec((await s.call("shell_exec", { ...call, cwd: s.dir })).text)?.[2]).toBe("5");
    const unarmed = tokenOf((await s.call("shell_exec", call)).text);
    expect((await s.call("operation_confirm", { token: first })).text).toBe(ARMED);
    expect(await pending(s)).toBe(3);
    await new Promise((r) => setTimeout(r, 5200));
    expect(await pending(s)).toBe(0);
    expect((await s.call("operation_confirm", { token: unarmed })).text).toBe(INVALID);
    expect(tokenOf((await s.call("shell_exec", call)).text)).not.toBe(first);
    expect(existsSync(victim)).toBe(true);
  }, 20_000);
});

describe("refusals never reach the broker", () => {
  it.each([
    [{ RELAY_SHELL_POLICY_MODE: "readonly" }, "readonly mode refuses Tier 3 (IRREVERSIBLE)"],
    [{ RELAY_SHELL_POLICY_MODE: "guarded" }, "guarded mode refuses Tier 3 (IRREVERSIBLE) without an"],
    [{ RELAY_SHELL_POLICY_DENY: "victim" }, "matched RELAY_SHELL_POLICY_DENY"],
  ])("%j", async (env, reason) => {
    const s = await startServer({ RELAY_SHELL_CONFIRM_TIER3: "true", ...env });
    try {
      const victim = canary(join(s.dir, "refused"), "victim.txt");
      const r = await s.call("shell_exec", { command: "rm -f victim.txt", cwd: join(s.dir, "refused") });
      expect(r.text).toBe(
        `[DENIED tier 3 (IRREVERSIBLE): ${reason}${reason.endsWith("an") ? " RELAY_SHELL_POLICY_ALLOW match" : ""}]`,
      );
      expect(r.structured).toMatchObject({ denied: true, action: null, notices: [] });
      expect(existsSync(victim)).toBe(true);
      expect(s.records().at(-1)).not.toHaveProperty("action");
      expect(await pending(s)).toBe(0);
    } finally {
      await s.close();
    }
  });

  it("a guarded call admitted by the allow list is still confirmed", async () => {
    const s = await startServer({
      RELAY_SHELL_CONFIRM_TIER3: "true",
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_POLICY_ALLOW: "victim",
    });
    try {
      const victim = canary(join(s.dir, "allowed"), "victim.txt");
      const r = await s.call("shell_exec", { command: "rm -f victim.txt", cwd: join(s.dir, "allowed") });
      expect(CHALLENGE.test(r.text)).toBe(true);
      expect(existsSync(victim)).toBe(true);
      expect(await pending(s)).toBe(1);
    } finally {
      await s.close();
    }
  });
});
