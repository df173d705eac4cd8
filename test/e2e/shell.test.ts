import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isAlive } from "../helpers/processes.js";
import { startServer, type TestServer } from "../helpers/server.js";

describe("shell tools over stdio", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s.close();
  });

  it("lists the tools with schemas, annotations and cross-references", async () => {
    const { tools } = await s.client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual([
      "audit_tail",
      "operation_confirm",
      "policy_explain",
      "server_info",
      "session_kill",
      "session_list",
      "session_recv",
      "session_resize",
      "session_send",
      "shell_exec",
      "shell_script",
      "shell_spawn",
      "ssh_check",
      "ssh_download",
      "ssh_exec",
      "ssh_fanout",
      "ssh_fanout_result",
      "ssh_forward",
      "ssh_forward_close",
      "ssh_forward_list",
      "ssh_hosts",
      "ssh_keyscan",
      "ssh_spawn",
      "ssh_upload",
    ]);
    for (const tool of tools) {
      expect(tool.description?.length ?? 0).toBeGreaterThan(10);
      expect(tool.outputSchema?.type).toBe("object");
      expect(tool.annotations).toBeDefined();
    }
    const exec = tools.find((t) => t.name === "shell_exec");
    expect(exec?.description).toContain("shell_spawn");
    expect(exec?.description).toContain("shell_script");
    expect(exec?.inputSchema.required).toEqual(["command"]);
    const sshExec = tools.find((t) => t.name === "ssh_exec");
    expect(sshExec?.description).toContain("ssh_spawn");
    expect(sshExec?.description).toContain("ssh_fanout");
    expect(sshExec?.inputSchema.required).toEqual(["host", "command"]);
    expect(tools.find((t) => t.name === "ssh_check")?.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === "ssh_keyscan")?.annotations?.readOnlyHint).toBe(false);
    expect(exec?.annotations?.readOnlyHint).toBe(false);
    expect(tools.find((t) => t.name === "server_info")?.annotations?.readOnlyHint).toBe(true);
  });

  it("runs a command and records its hash, never its output", async () => {
    const marker = `marker-${process.pid}-output`;
    const r = await s.call("shell_exec", { command: `echo ${marker}` });
    expect(r.text).toBe(`[exit 0]\n${marker}\n`);
    expect(r.structured).toMatchObject({
      tool: "shell_exec",
      tier: 0,
      exit_code: 0,
      denied: false,
      truncated: false,
    });
    const rec = s.records().at(-1);
    expect(rec).toMatchObject({ tool: "shell_exec", tier: 0, denied: false, exit_code: 0 });
    expect(rec?.output_len).toBe(Buffer.byteLength(r.text));
    expect(Object.keys(rec ?? {}).slice(0, 8)).toEqual([
      "ts",
      "tool",
      "tier",
      "denied",
      "args",
      "output_sha256",
      "output_len",
      "exit_code",
    ]);
    // The command (an argument) is recorded; the output line never is.
    expect(s.auditText()).not.toContain(`${marker}\n`);
    expect(s.auditText().split(marker).length - 1).toBe(1);
  });

  it("reports exit codes, signals, stdin, env overlay, cwd and stderr ordering", async () => {
    expect((await s.call("shell_exec", { command: "exit 7" })).text).toBe("[exit 7]\n");
    // Signalling a process is Tier 2 (process_change), so a notice follows the result.
    expect((await s.call("shell_exec", { command: "kill -TERM $$" })).text).toMatch(
      /^\[exit -15\]\n(?:\n\[NOTICE |$)/,
    );
    expect((await s.call("shell_exec", { command: "cat", stdin: "from stdin" })).text).toBe(
      "[exit 0]\nfrom stdin",
    );
    const env = await s.call("shell_exec", {
      command: 'echo "$A|${HOME:-unset}|$DEBIAN_FRONTEND|$FLAG"',
      env_json: JSON.stringify({ A: "1", HOME: null, FLAG: true }),
    });
    expect(env.text).toBe("[exit 0]\n1|unset|noninteractive|true\n");
    mkdirSync(join(s.dir, "sub"));
    expect((await s.call("shell_exec", { command: "pwd", cwd: join(s.dir, "sub") })).text).toBe(
      `[exit 0]\n${join(s.dir, "sub")}\n`,
    );
    const split = await s.call("shell_exec", { command: "echo err >&2; echo out", merge_stderr: false });
    expect(split.text).toBe("[exit 0]\nout\nerr\n");
    const argv = await s.call("shell_exec", { command: "printf '%s|' 'a b' c", use_shell: false });
    expect(argv.text).toBe("[exit 0]\na b|c|");
  });

  it("runs scripts with strict mode per interpreter", async () => {
    const bash = await s.call("shell_script", { script: "false | true\necho not-reached" });
    expect(bash.text).toBe("[exit 1]\n");
    const lax = await s.call("shell_script", { script: "false | true\necho reached", strict: false });
    expect(lax.text).toBe("[exit 0]\nreached\n");
    const sh = await s.call("shell_script", { script: "echo $0 ok", interpreter: "sh" });
    expect(sh.text).toBe("[exit 0]\n/bin/sh ok\n");
    const py = await s.call("shell_script", {
      script: "import sys\nprint(sys.version_info[0])",
      interpreter: "Python",
    });
    expect(py.text).toBe("[exit 0]\n3\n");
    const bad = await s.call("shell_script", { script: "x", interpreter: "ruby" });
    expect(bad.text).toBe("[ERROR: unsupported interpreter: ruby]");
    // Names of the lookup object's prototype are not interpreters either.
    for (const name of ["constructor", "toString", "__proto__"]) {
      const proto = await s.call("shell_script", { script: "x", interpreter: name });
      expect(proto.text).toBe(`[ERROR: unsupported interpreter: ${name}]`);
    }
  });

  it("times out by killing the process group", async () => {
    const pidFile = join(s.dir, "bg.pid");
    const started = Date.now();
    const r = await s.call("shell_exec", { command: `sleep 30 & echo $! > ${pidFile}; wait`, timeout: 1 });
    expect(r.text).toBe("[TIMEOUT after 1s]");
    expect(r.structured.timed_out).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
    const pid = Number.parseInt(readFileSync(pidFile, "utf8"), 10);
    // Gone, or a zombie waiting for a reaper that is not ours: either way it no longer runs.
    expect(isAlive(pid)).toBe(false);
  });

  it("a Tier-3 command runs in the default open mode and is recorded as Tier 3", async () => {
    const canary = join(s.dir, "canary-open");
    writeFileSync(canary, "x");
    const r = await s.call("shell_exec", { command: `rm -rf ${canary}` });
    // The result is followed by the Tier-3 notice (ADR 0011); the record describes the text before it.
    expect(r.text).toBe(`[exit 0]\n\n${(r.structured.notices as string[]).join("\n")}`);
    expect(r.structured.notices).toHaveLength(1);
    expect(r.structured.tier).toBe(3);
    expect(existsSync(canary)).toBe(false);
    expect(s.records().at(-1)).toMatchObject({ tier: 3, denied: false });
  });
});
