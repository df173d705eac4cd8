import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { baseEnv, SERVER_ENTRY, startServer } from "../helpers/server.js";

function cli(args: string[], env: Record<string, string>, cwd?: string) {
  const r = spawnSync(process.execPath, [SERVER_ENTRY, ...args], {
    env: baseEnv(env),
    cwd,
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("relay-shell CLI", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-cli-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("--help lists the verbs", () => {
    const r = cli(["--help"], {});
    expect(r.code).toBe(0);
    for (const flag of ["--check-config", "--verify-audit", "--audit-path", "--segment", "CI pipelines"]) {
      expect(r.stdout).toContain(flag);
    }
    expect(cli(["--bogus"], {}).code).toBe(2);
  });

  it.each([
    [["--bogus"], "unknown argument: --bogus"],
    [["--check-config", "stray"], "unknown argument: stray"],
    [["-hx"], "unknown argument: -hx"],
    [["--json=yes"], "unknown argument: --json=yes"],
    [["--", "--help"], "unknown argument: --"],
    [["--verify-audit", "--audit-path"], "--audit-path needs a file path"],
    [["--verify-audit", "--audit-path="], "--audit-path needs a file path"],
    [["--verify-audit", "--audit-path", ""], "--audit-path needs a file path"],
  ])("refuses %j with exit 2, naming the argument, before doing anything", (args, message) => {
    const r = cli(args, {});
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.startsWith(`relay_shell: ${message}\nusage: relay-shell `)).toBe(true);
  });

  it("-h and --audit-path=PATH are read as before", () => {
    expect(cli(["-h"], {}).stdout).toContain("usage: relay-shell");
    const r = cli(["--verify-audit", `--audit-path=${join(dir, "missing.jsonl")}`], {});
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toContain("missing.jsonl");
  });

  it("stops serving stdio with exit 0 on SIGTERM", async () => {
    const child = spawn(process.execPath, [SERVER_ENTRY], {
      env: baseEnv({ RELAY_SHELL_AUDIT_PATH: join(dir, "sigterm-audit.jsonl") }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    const serving = new Promise<void>((done) => {
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('"serving"')) done();
      });
    });
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
    await serving;
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("--check-config validates, creates the audit file and prints settings and warnings", () => {
    const audit = join(dir, "check", "audit.jsonl");
    const r = cli(["--check-config"], { RELAY_SHELL_AUDIT_PATH: audit });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`relay_shell: config OK (transport=stdio, policy=open, audit=${audit})`);
    expect(r.stderr).toMatch(
      /^relay_shell: process launcher: (native \(dist\/exec\/relay-launcher|node \()/m,
    );
    expect(r.stderr).toContain("relay_shell: warning: audit hash chain is off");
    expect(r.stderr).toContain("RELAY_SHELL_MAX_INPUT=1048576");
    expect(r.stderr).toContain("RELAY_SHELL_TRANSFER_MAX_BYTES=4294967296");
    expect(r.stderr).toContain("RELAY_SHELL_TRANSFER_MAX_ENTRIES=100000");
    expect(r.stdout).toBe("");
    expect(statSync(audit).mode & 0o777).toBe(0o600);
  });

  it.each([
    [{ RELAY_SHELL_MAX_TIMEOUT: "5m" }, "RELAY_SHELL_MAX_TIMEOUT"],
    [{ RELAY_SHELL_POLICY_MODE: "lenient" }, "RELAY_SHELL_POLICY_MODE"],
    [{ RELAY_SHELL_POLICY_DENY: "(?i)rm" }, "RELAY_SHELL_POLICY_DENY"],
    [
      { RELAY_SHELL_AUDIT_CHAIN: "true", RELAY_SHELL_AUDIT_FORMAT: "cef" },
      "audit_chain=true requires audit_format=jsonl",
    ],
    [{ RELAY_SHELL_CONFIRM_ROLLBACK: "true" }, "RELAY_SHELL_CONFIRM_ROLLBACK"],
    [{ RELAY_SHELL_TRANSFER_MAX_ENTRIES: "0" }, "RELAY_SHELL_TRANSFER_MAX_ENTRIES"],
  ])("invalid settings %j exit 2 naming the problem", (env, needle) => {
    for (const args of [["--check-config"], []]) {
      const r = cli(args, { RELAY_SHELL_AUDIT_PATH: join(dir, "bad.jsonl"), ...env });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("relay_shell: invalid configuration:");
      expect(r.stderr).toContain(needle);
    }
  });

  it("--check-config fails on a degraded audit sink", () => {
    writeFileSync(join(dir, "afile"), "x");
    const r = cli(["--check-config"], { RELAY_SHELL_AUDIT_PATH: join(dir, "afile", "sub", "audit.jsonl") });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("audit sink degraded");
  });

  it("refuses an inventory that picks hosts' policies when the relay could write it, naming the file", () => {
    // The test's own account writes the inventory, and the relay runs as that account.
    const inventory = join(dir, "policy-inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ web1: { hostname: "10.0.0.5", policy: { mode: "readonly", deny: ["never-shown"] } } }),
    );
    const r = cli(["--check-config"], {
      RELAY_SHELL_AUDIT_PATH: join(dir, "policies.jsonl"),
      RELAY_SHELL_INVENTORY: inventory,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `RELAY_SHELL_INVENTORY: ${inventory}: its tags and policies decide hosts' policies, and the relay must not be able to change the policy it obeys: `,
    );
    expect(r.stderr).not.toContain("never-shown");
  });

  it("refuses to start on a policy file the relay could write, naming the file", () => {
    // The test's own account writes the file, and the relay runs as that account.
    const policy = join(dir, "policy.toml");
    writeFileSync(policy, '[tags.prod]\nmode = "readonly"\n');
    for (const args of [["--check-config"], []]) {
      const r = cli(args, {
        RELAY_SHELL_AUDIT_PATH: join(dir, "policy-file.jsonl"),
        RELAY_SHELL_POLICY_FILE: policy,
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `RELAY_SHELL_POLICY_FILE: ${policy}: the relay must not be able to change the policy it obeys: `,
      );
    }
  });

  it("serves on embedded defaults with no settings at all (audit in the XDG state dir)", async () => {
    const home = join(dir, "home");
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SERVER_ENTRY],
      env: baseEnv({ HOME: home }),
      cwd: dir,
      stderr: "pipe",
    });
    const client = new Client({ name: "defaults", version: "1" });
    await client.connect(transport);
    const r = await client.callTool({ name: "shell_exec", arguments: { command: "echo hi" } });
    expect((r.content as Array<{ text: string }>)[0]?.text).toBe("[exit 0]\nhi\n");
    await client.callTool({ name: "server_info", arguments: {} });
    await client.close();
    const audit = join(home, ".local", "state", "relay-shell", "audit.jsonl");
    // The line as the Python relay-shell writes it (its own stdio end-to-end test greps for these).
    const text = readFileSync(audit, "utf8");
    expect(text).toContain('"tool": "shell_exec"');
    expect(text).toContain('"tool": "server_info"');
    expect(text.split("\n")[0]).toMatch(/^\{"ts": "[^"]+", "tool": "shell_exec", "tier": 0, /);
    expect(statSync(join(home, ".local", "state", "relay-shell")).mode & 0o777).toBe(0o700);
  });

  describe("--verify-audit on a log written by the server", () => {
    let auditPath: string;
    let lines: string[];
    beforeAll(async () => {
      const s = await startServer({ RELAY_SHELL_AUDIT_CHAIN: "true" });
      for (const command of ["echo 1", "echo 2", "echo 3", "echo 4"]) await s.call("shell_exec", { command });
      auditPath = join(dir, "chain.jsonl");
      writeFileSync(auditPath, s.auditText());
      await s.close();
      lines = readFileSync(auditPath, "utf8").trimEnd().split("\n");
    });

    const verify = (content: string, extra: string[] = []) => {
      const path = join(dir, `v-${Math.random().toString(16).slice(2)}.jsonl`);
      writeFileSync(path, content);
      return cli(["--verify-audit", "--audit-path", path, ...extra], {});
    };

    it("an intact log verifies", () => {
      const r = verify(`${lines.join("\n")}\n`);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("relay-shell: verify-audit OK");
      expect(r.stdout).toContain("chain intact");
    });

    it.each([
      [
        "an edited line",
        (l: string[]) =>
          l.map((x, i) =>
            i === 1 ? x.replace(/"tier": (\d)/, (_m, d) => `"tier": ${d === "0" ? 1 : 0}`) : x,
          ),
      ],
      ["a dropped line", (l: string[]) => l.filter((_, i) => i !== 1)],
      ["a reordered pair", (l: string[]) => [l[0], l[2], l[1], l[3]] as string[]],
      ["an inserted line", (l: string[]) => [l[0], l[1], l[1], l[2], l[3]] as string[]],
      ["a garbage line", (l: string[]) => [l[0], "not json", l[1], l[2], l[3]] as string[]],
    ])("%s makes it fail", (_label, mutate) => {
      const r = verify(`${mutate(lines).join("\n")}\n`, ["--json"]);
      expect(r.code).toBe(2);
      const report = JSON.parse(r.stdout) as { ok: boolean; broken_at: number | null };
      expect(report.ok).toBe(false);
      expect(report.broken_at).toBeGreaterThan(0);
    });

    it("a missing file or an unchained log fails closed; a head-truncated log needs --segment", () => {
      expect(cli(["--verify-audit", "--audit-path", join(dir, "nope.jsonl")], {}).code).toBe(2);
      expect(verify('{"ts":"x","tool":"t"}\n').stdout).toContain("no chained records");
      const head = `${lines.slice(1).join("\n")}\n`;
      expect(verify(head).code).toBe(2);
      expect(verify(head, ["--segment"]).code).toBe(0);
    });
  });
});
