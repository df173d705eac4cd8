import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_ENTRY, startServer, type TestServer } from "../helpers/server.js";

/** Rollback/verify pairing (ADR 0010) through the built server and the SDK client. */

const TOKEN = /operation_confirm\(token="([A-Za-z0-9_-]{22})"\)/;
const ARMED = "[armed: re-issue the exact Tier-3 call now to execute it]";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function tokenOf(text: string): string {
  const token = TOKEN.exec(text)?.[1];
  if (!token) throw new Error(`not a challenge: ${text}`);
  return token;
}

/** A fresh directory with a canary `victim.txt` and its `backup.txt`. */
function workspace(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "victim.txt"), "precious\n");
  writeFileSync(join(dir, "backup.txt"), "precious\n");
  return dir;
}

describe("rollback/verify pairing", () => {
  let s: TestServer;
  const tokens: string[] = [];

  /** Plan the call, arm it with `follow`, execute it. */
  async function confirmed(call: Record<string, unknown>, follow: Record<string, unknown>) {
    const token = tokenOf((await s.call("shell_exec", call)).text);
    tokens.push(token);
    const arm = await s.call("operation_confirm", { token, ...follow });
    expect(arm.text).toBe(ARMED);
    return s.call("shell_exec", call);
  }

  beforeAll(async () => {
    s = await startServer({
      RELAY_SHELL_CONFIRM_TIER3: "true",
      RELAY_SHELL_CONFIRM_ROLLBACK: "true",
      RELAY_SHELL_POLICY_DENY: "forbidden",
    });
  });
  afterAll(async () => {
    const audit = s.auditText();
    for (const token of tokens) expect(audit).not.toContain(token);
    await s.close();
  });

  it("a failed verify triggers exactly one rollback, and each step is its own audited record", async () => {
    const dir = workspace(s.dir, "restore");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const follow = {
      verify_command: "test -e victim.txt",
      rollback_command: "cp backup.txt victim.txt && echo restored",
      auto_rollback: true,
    };
    const r = await confirmed(call, follow);
    expect(r.text).toBe(
      "[exit 0]\n[verify exit 1]\n[verify failed: exit status 1; running the bound rollback once]\n" +
        `[rollback exit 0]\nrestored\n\n${(r.structured.notices as string[]).join("\n")}`,
    );
    expect(readFileSync(join(dir, "victim.txt"), "utf8")).toBe("precious\n");
    expect(r.structured).toMatchObject({
      action: "confirm_execute",
      // The verify step only tests a file: proven to only read, Tier 0.
      verify: { action: "confirm_verify", ran: true, tier: 0, exit_code: 1, failed: true },
      rollback: { action: "confirm_rollback", ran: true, tier: 1, exit_code: 0, failed: false },
    });

    const records = s.records().slice(-4);
    expect(records.map((rec) => rec.action)).toEqual([
      "confirm_arm",
      "confirm_execute",
      "confirm_verify",
      "confirm_rollback",
    ]);
    const [arm, execute, verify, rollback] = records;
    // The arm record names the bound commands: intent is on the trail before anything runs.
    expect(arm?.args).toEqual({
      token_sha256: expect.stringMatching(/^[0-9a-f]{12}$/),
      verify_command: follow.verify_command,
      rollback_command: follow.rollback_command,
      verify_expect: "",
      auto_rollback: true,
    });
    expect(execute).toMatchObject({ tier: 3, exit_code: 0, output_sha256: sha256("[exit 0]\n") });
    expect(verify).toMatchObject({
      tool: "shell_exec",
      tier: 0,
      exit_code: 1,
      output_sha256: sha256("[exit 1]\n"),
      args: { command: "test -e victim.txt", cwd: dir, stdin: "" },
    });
    expect(rollback).toMatchObject({
      tier: 1,
      exit_code: 0,
      output_sha256: sha256("[exit 0]\nrestored\n"),
      args: { command: follow.rollback_command, cwd: dir },
    });
  });

  it("a failing rollback is reported loudly and not repeated", async () => {
    const dir = workspace(s.dir, "failing");
    const r = await confirmed(
      { command: "rm -f victim.txt", cwd: dir },
      {
        verify_command: "test -e victim.txt",
        rollback_command: "echo attempt >> attempts.log; exit 3",
        auto_rollback: true,
      },
    );
    expect(r.text).toContain(
      "[rollback exit 3]\n[ROLLBACK FAILED: exit status 3. It is not retried; the target may be in a partial state, check it by hand]",
    );
    expect(readFileSync(join(dir, "attempts.log"), "utf8")).toBe("attempt\n");
    expect(
      s
        .records()
        .filter((rec) => rec.action === "confirm_rollback" && (rec.args as { cwd: string }).cwd === dir),
    ).toHaveLength(1);
    expect(r.structured.rollback).toMatchObject({ exit_code: 3, failed: true });
  });

  it("a passing verify runs no rollback; verify_expect makes the predicate stricter", async () => {
    const pass = workspace(s.dir, "pass");
    const ok = await confirmed(
      { command: "rm -f victim.txt", cwd: pass },
      { verify_command: "test ! -e victim.txt", rollback_command: "touch rolled-back", auto_rollback: true },
    );
    expect(ok.text).toContain("[verify exit 0]");
    expect(ok.text).not.toContain("rollback exit");
    expect(existsSync(join(pass, "rolled-back"))).toBe(false);

    const expect_ = workspace(s.dir, "expect");
    const missing = await confirmed(
      { command: "rm -f victim.txt", cwd: expect_ },
      {
        verify_command: "echo state=pending",
        verify_expect: "state=done",
        rollback_command: "touch rolled-back",
        auto_rollback: true,
      },
    );
    expect(missing.text).toContain(
      "[verify exit 0]\nstate=pending\n[verify failed: the expected text is not in its output",
    );
    expect(existsSync(join(expect_, "rolled-back"))).toBe(true);

    const manual = workspace(s.dir, "manual");
    const noAuto = await confirmed(
      { command: "rm -f victim.txt", cwd: manual },
      { verify_command: "test -e victim.txt", rollback_command: "touch rolled-back" },
    );
    expect(noAuto.text).toContain("[verify failed: exit status 1; no rollback ran (auto_rollback is off)]");
    expect(existsSync(join(manual, "rolled-back"))).toBe(false);
  });

  it("a Tier-3 rollback is still Tier 3, and runs without a second token", async () => {
    const dir = workspace(s.dir, "tier3");
    mkdirSync(join(dir, "scratch"));
    const r = await confirmed(
      { command: "rm -f victim.txt", cwd: dir },
      { verify_command: "test -e victim.txt", rollback_command: "rm -rf scratch", auto_rollback: true },
    );
    expect(r.text).not.toContain("CONFIRM REQUIRED");
    expect(existsSync(join(dir, "scratch"))).toBe(false);
    expect(s.records().at(-1)).toMatchObject({ action: "confirm_rollback", tier: 3, exit_code: 0 });
    const info = JSON.parse((await s.call("server_info")).text) as { confirm: Record<string, unknown> };
    expect(info.confirm).toEqual({ tier3: true, ttl: 120, pending: 0, rollback: true });
  });

  it("arming twice with different commands is refused; the first binding stays", async () => {
    const dir = workspace(s.dir, "rearm");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const token = tokenOf((await s.call("shell_exec", call)).text);
    tokens.push(token);
    const first = {
      verify_command: "test -e victim.txt",
      rollback_command: "touch first",
      auto_rollback: true,
    };
    expect((await s.call("operation_confirm", { token, ...first })).text).toBe(ARMED);
    const swap = await s.call("operation_confirm", { token, ...first, rollback_command: "touch second" });
    expect(swap.text).toMatch(/^\[ERROR: this token is already armed with other verify\/rollback commands/);
    const drop = await s.call("operation_confirm", { token });
    expect(drop.text).toMatch(/^\[ERROR: this token is already armed/);
    expect((await s.call("operation_confirm", { token, ...first })).text).toBe(ARMED);
    await s.call("shell_exec", call);
    expect(existsSync(join(dir, "first"))).toBe(true);
    expect(existsSync(join(dir, "second"))).toBe(false);
  });

  it("a rollback the deny list matches is refused at arm time; the token stays unarmed", async () => {
    const dir = workspace(s.dir, "denied");
    const call = { command: "rm -f victim.txt", cwd: dir };
    const token = tokenOf((await s.call("shell_exec", call)).text);
    tokens.push(token);
    const r = await s.call("operation_confirm", {
      token,
      verify_command: "test -e victim.txt",
      rollback_command: "touch forbidden-marker",
      auto_rollback: true,
    });
    expect(r.text).toBe(
      "[ERROR: rollback_command cannot be bound: shell_exec would refuse it as tier 1 (REVERSIBLE): " +
        "matched RELAY_SHELL_POLICY_DENY; the token was not armed]",
    );
    const verify = await s.call("operation_confirm", { token, verify_command: "cat forbidden" });
    expect(verify.text).toMatch(/^\[ERROR: verify_command cannot be bound: shell_exec would refuse it/);
    // Not armed: the call is challenged again and nothing ran.
    tokens.push(tokenOf((await s.call("shell_exec", call)).text));
    expect(existsSync(join(dir, "victim.txt"))).toBe(true);
    expect(existsSync(join(dir, "forbidden-marker"))).toBe(false);
  });

  it("refuses follow-up combinations that could never work as asked", async () => {
    const token = tokenOf((await s.call("shell_exec", { command: "rm -rf ./none", cwd: s.dir })).text);
    tokens.push(token);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ verify_expect: "ok" }, "verify_expect needs a verify_command"],
      [{ verify_command: "true", auto_rollback: true }, "auto_rollback needs a rollback_command"],
      [{ rollback_command: "true", auto_rollback: true }, "auto_rollback needs a verify_command"],
    ];
    for (const [params, message] of cases) {
      const r = await s.call("operation_confirm", { token, ...params });
      expect(r.text).toMatch(new RegExp(`^\\[ERROR: ${message}`));
    }
  });
});

describe("rollback/verify pairing under guarded policy", () => {
  it("a rollback the mode would refuse is refused at arm time, as the same tool and target", async () => {
    const s = await startServer({
      RELAY_SHELL_CONFIRM_TIER3: "true",
      RELAY_SHELL_CONFIRM_ROLLBACK: "true",
      RELAY_SHELL_POLICY_MODE: "guarded",
      RELAY_SHELL_POLICY_ALLOW: "victim",
    });
    try {
      const dir = workspace(s.dir, "guarded");
      const token = tokenOf((await s.call("shell_exec", { command: "rm -f victim.txt", cwd: dir })).text);
      const r = await s.call("operation_confirm", {
        token,
        verify_command: "test -e backup.txt",
        rollback_command: "chmod -R u+w .",
        auto_rollback: true,
      });
      expect(r.text).toContain(
        "rollback_command cannot be bound: shell_exec would refuse it as tier 2 (STATEFUL): guarded mode refuses Tier 2",
      );
      // The allow list admits it exactly as it would admit the call itself.
      const ok = await s.call("operation_confirm", {
        token,
        verify_command: "test -e victim.txt",
        rollback_command: "chmod -R u+w victim-dir",
        auto_rollback: true,
      });
      expect(ok.text).toBe(ARMED);
    } finally {
      await s.close();
    }
  });
});

/** The pid of the server process started for `auditPath` (it carries the path in its environment). */
function serverPid(auditPath: string): number {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8");
      if (!cmdline.includes(SERVER_ENTRY)) continue;
      if (
        readFileSync(`/proc/${name}/environ`, "utf8")
          .split("\0")
          .includes(`RELAY_SHELL_AUDIT_PATH=${auditPath}`)
      ) {
        return Number(name);
      }
    } catch {
      // A process that exited while we looked, or one we may not read: not ours.
    }
  }
  throw new Error(`no server process for ${auditPath}`);
}

describe("rollback/verify pairing across a crash", () => {
  it("a server killed between execute and verify leaves the plan on the trail and nothing to replay", async () => {
    const settings = { RELAY_SHELL_CONFIRM_TIER3: "true", RELAY_SHELL_CONFIRM_ROLLBACK: "true" };
    const first = await startServer(settings);
    try {
      const dir = workspace(first.dir, "crash");
      const call = { command: "rm -f victim.txt", cwd: dir };
      const token = tokenOf((await first.call("shell_exec", call)).text);
      const armed = await first.call("operation_confirm", {
        token,
        verify_command: "touch verify-started; sleep 30; exit 1",
        rollback_command: "touch rolled-back",
        auto_rollback: true,
      });
      expect(armed.text).toBe(ARMED);
      const pendingCall = first.call("shell_exec", call).catch((err: unknown) => err);
      const deadline = Date.now() + 10_000;
      while (!existsSync(join(dir, "verify-started")) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(existsSync(join(dir, "verify-started"))).toBe(true);
      process.kill(serverPid(first.auditPath), "SIGKILL");
      expect(await pendingCall).toBeInstanceOf(Error);

      // Only the server's own records exist: plan, arm, execute. No verify, no rollback, no promise kept anywhere.
      expect(first.records().map((rec) => rec.action)).toEqual([
        "confirm_plan",
        "confirm_arm",
        "confirm_execute",
      ]);
      expect(existsSync(join(dir, "victim.txt"))).toBe(false);
      expect(existsSync(join(dir, "rolled-back"))).toBe(false);

      const second = await startServer({ ...settings, RELAY_SHELL_AUDIT_PATH: first.auditPath });
      try {
        const info = JSON.parse((await second.call("server_info")).text) as { confirm: { pending: number } };
        expect(info.confirm.pending).toBe(0);
        expect((await second.call("operation_confirm", { token })).text).toBe(
          "[invalid or expired confirmation token]",
        );
        writeFileSync(join(dir, "victim.txt"), "again\n");
        expect(TOKEN.test((await second.call("shell_exec", call)).text)).toBe(true);
        expect(existsSync(join(dir, "rolled-back"))).toBe(false);
      } finally {
        await second.close();
      }
    } finally {
      await first.close().catch(() => undefined);
    }
  }, 30_000);
});
