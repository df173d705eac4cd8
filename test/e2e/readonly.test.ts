import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { announceSkip, createSshFixture, SSHD_MISSING, type SshFixture } from "../fixtures/sshd.js";
import { baseEnv, SERVER_ENTRY, startServer, type TestServer } from "../helpers/server.js";

announceSkip("readonly over SSH");

/**
 * `readonly` admits exactly Tier 0, and commands proven to only read are
 * Tier 0 (ADR 0033): through the built server and the SDK client, a proven
 * read runs and everything else is refused. Writing commands aim only at a
 * canary directory in the suite's temp directory.
 */
describe("readonly mode through the built server", () => {
  let s: TestServer;
  let canary: string;

  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_POLICY_MODE: "readonly", RELAY_SHELL_UNSAFE_NOTICES: "false" });
    canary = join(s.dir, "canary");
    mkdirSync(canary, { recursive: true });
    writeFileSync(join(canary, "keep.log"), "one\nERROR two\nthree\n");
  });
  afterAll(async () => {
    await s?.close();
  });

  it.each([
    ["ls", "keep.log"],
    ["cat keep.log | grep -c ERROR", "1"],
    ["wc -l < keep.log 2>/dev/null", "3"],
    ['for f in *.log; do head -n 1 "$f"; done', "one"],
    ["awk 'NR==2 {print $2}' keep.log", "two"],
    ["sed -n 3p keep.log", "three"],
  ])("runs the proven read %s", async (command, out) => {
    const r = await s.call("shell_exec", { command, cwd: canary });
    expect(r.text).toBe(`[exit 0]\n${out}\n`);
    expect(r.structured).toMatchObject({ tier: 0, basis: "proven_read", denied: false });
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_exec", tier: 0, denied: false, exit_code: 0 });
  });

  it.each([
    ["touch new-file", 1],
    ["echo x > new-file", 1],
    ["sort -o new-file keep.log", 1],
    ["sed -i s/one/1/ keep.log", 2],
    ["bash -c 'touch new-file'", 1],
    ["PATH=. ls", 1],
    ["find . -name keep.log -delete", 3],
    ["rm -rf ./*", 3],
  ])("refuses %s (Tier %i) and runs nothing", async (command, tier) => {
    const r = await s.call("shell_exec", { command, cwd: canary });
    const names = ["READ_ONLY", "REVERSIBLE", "STATEFUL", "IRREVERSIBLE"];
    expect(r.text).toBe(
      `[DENIED tier ${tier} (${names[tier]}): readonly mode refuses Tier ${tier} (${names[tier]})]`,
    );
    expect(existsSync(join(canary, "new-file"))).toBe(false);
    expect(existsSync(join(canary, "keep.log"))).toBe(true);
  });

  it("refuses a Python script, which is never proven, and admits a shell script that only reads", async () => {
    const py = await s.call("shell_script", { interpreter: "python3", script: "print(1)" });
    expect(py.text).toMatch(/^\[DENIED tier [12] /);
    const sh = await s.call("shell_script", { interpreter: "bash", script: `ls ${canary}\n` });
    expect(sh.text).toBe("[exit 0]\nkeep.log\n");
  });

  it("refuses everything with the deny pattern docs/wire-contract.md §14.17 gives", async () => {
    const strict = await startServer({
      RELAY_SHELL_POLICY_MODE: "readonly",
      RELAY_SHELL_POLICY_DENY:
        "^(shell_exec|shell_script|shell_spawn|session_send|ssh_exec|ssh_fanout|ssh_spawn) ",
    });
    try {
      const r = await strict.call("shell_exec", { command: "ls", cwd: canary });
      expect(r.text).toBe("[DENIED tier 0 (READ_ONLY): matched RELAY_SHELL_POLICY_DENY]");
      expect((await strict.call("server_info")).text).toContain('"policy_mode": "readonly"');
    } finally {
      await strict.close();
    }
  });

  it("--check-config says what readonly admits", () => {
    const r = spawnSync(process.execPath, [SERVER_ENTRY, "--check-config"], {
      env: baseEnv({
        RELAY_SHELL_POLICY_MODE: "readonly",
        RELAY_SHELL_AUDIT_PATH: join(s.dir, "check.jsonl"),
      }),
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      "relay_shell: policy readonly: only Tier 0 is admitted: the read-only tools and commands proven to only read",
    );
  });
});

describe.skipIf(SSHD_MISSING)("readonly mode over SSH against real sshd", () => {
  let fx: SshFixture;
  let s: TestServer;

  beforeAll(async () => {
    fx = createSshFixture();
    const sshd = await fx.start({ ports: 2 });
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({
        a: { hostname: "127.0.0.1", port: sshd.ports[0], user: fx.user },
        b: { hostname: "127.0.0.1", port: sshd.ports[1], user: fx.user },
      }),
    );
    s = await startServer({
      RELAY_SHELL_POLICY_MODE: "readonly",
      RELAY_SHELL_UNSAFE_NOTICES: "false",
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_KNOWN_HOSTS: "accept-new",
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
    });
  });
  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("runs a proven read with ssh_exec and ssh_fanout, classified from the command alone", async () => {
    const one = await s.call("ssh_exec", { host: "a", command: "uname -s" });
    expect(one.text).toBe("[exit 0]\nLinux\n");
    expect(one.structured).toMatchObject({ tier: 0, basis: "proven_read" });
    const many = await s.call("ssh_fanout", { hosts: "a,b", command: "echo up" });
    expect(many.structured).toMatchObject({ tier: 0, host_count: 2 });
  });

  it("refuses a remote write", async () => {
    const marker = join(fx.dir, "remote-canary");
    const r = await s.call("ssh_exec", { host: "a", command: `touch ${marker}` });
    expect(r.text).toBe("[DENIED tier 1 (REVERSIBLE): readonly mode refuses Tier 1 (REVERSIBLE)]");
    expect(existsSync(marker)).toBe(false);
  });
});
