import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "../helpers/server.js";

/** Every malformed call gets a bounded answer in the contract grammar, is audited, and the server keeps serving. */
describe("bad input over stdio", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer();
  });
  afterAll(async () => {
    await s.close();
  });

  async function stillServing() {
    expect((await s.call("shell_exec", { command: "echo alive" })).text).toBe("[exit 0]\nalive\n");
  }

  it.each([
    ["wrong type", "shell_exec", { command: 5 }, /^\[DENIED tier \d \(\w+\): invalid arguments: command: /],
    ["missing field", "shell_exec", {}, /^\[DENIED tier 1 \(REVERSIBLE\): invalid arguments: command: /],
    ["wrong nested type", "shell_exec", { command: "ls", timeout: "soon" }, /invalid arguments: timeout: /],
    [
      "NUL in command",
      "shell_exec",
      { command: "echo a\u0000b" },
      /invalid arguments: command: must not contain NUL/,
    ],
    ["NUL in cwd", "shell_exec", { command: "ls", cwd: "/tmp\u0000x" }, /invalid arguments: cwd: /],
    ["wrong audit_tail type", "audit_tail", { denied: "maybe" }, /invalid arguments: denied: /],
    ["float for an integer", "audit_tail", { lines: 2.5 }, /invalid arguments: lines: /],
  ])("%s is refused and audited", async (_label, tool, args, pattern) => {
    const before = s.records().length;
    const r = await s.call(tool, args as Record<string, unknown>);
    expect(r.text).toMatch(pattern);
    expect(r.structured.denied).toBe(true);
    const records = s.records();
    expect(records.length).toBe(before + 1);
    expect(records.at(-1)).toMatchObject({ tool, denied: true, exit_code: null });
    await stillServing();
  });

  it("a wrongly typed destructive command is still classified from its strings", async () => {
    const r = await s.call("shell_exec", { command: ["rm", "-rf", "/"], timeout: 1 });
    expect(r.text).toMatch(/^\[DENIED tier 3 \(IRREVERSIBLE\): invalid arguments/);
  });

  it("unknown fields are ignored and numeric strings are accepted", async () => {
    const r = await s.call("shell_exec", { command: "echo ok", bogus: 1, timeout: "5" });
    expect(r.text).toBe("[exit 0]\nok\n");
    expect(s.records().at(-1)?.args).toMatchObject({ timeout: 5 });
  });

  it("an unknown tool is an audited error, not a crash", async () => {
    const r = await s.call("no_such_tool", { x: 1 });
    expect(r.text).toBe("[ERROR: ValueError: unknown tool: no_such_tool]");
    expect(s.records().at(-1)).toMatchObject({ tool: "unknown_tool", denied: true });
    await stillServing();
  });

  it("empty commands get a clear error", async () => {
    expect((await s.call("shell_exec", { command: "" })).text).toBe("[ERROR: empty command]");
    expect((await s.call("shell_exec", { command: "   ", use_shell: false })).text).toBe(
      "[ERROR: empty command]",
    );
    expect((await s.call("shell_exec", { command: "echo 'open", use_shell: false })).text).toMatch(
      /^\[ERROR: ValueError: No closing quotation/,
    );
    expect((await s.call("shell_script", { script: "" })).text).toBe("[exit 0]\n");
  });

  it("a cwd that does not exist and a missing binary are errors in the grammar", async () => {
    const r = await s.call("shell_exec", { command: "ls", cwd: "/definitely/not/here" });
    expect(r.text).toBe("[ERROR: FileNotFoundError: cwd does not exist: /definitely/not/here]");
    const bin = await s.call("shell_exec", { command: "no-such-binary-xyz", use_shell: false });
    expect(bin.text).toMatch(/^\[ERROR: FileNotFoundError: .*no-such-binary-xyz/);
    const sh = await s.call("shell_exec", { command: "no-such-binary-xyz" });
    expect(sh.text).toMatch(/^\[exit 127\]\n.*not found/);
    await stillServing();
  });

  it("invalid UTF-8 and NUL bytes in output come back as text", async () => {
    const r = await s.call("shell_exec", { command: "printf 'a\\377\\376b\\000c'" });
    // NUL is a C0 control: shown as a visible escape (docs/tools.md, terminal control sequences).
    expect(r.text).toBe("[exit 0]\na\uFFFD\uFFFDb\\x00c");
  });

  it("a command printing 1 GiB is bounded and reports the real size", async () => {
    const r = await s.call("shell_exec", {
      command: "head -c 1073741824 /dev/zero | tr '\\0' x",
      timeout: 120,
    });
    expect(r.text.startsWith("[exit 0]\nxxxx")).toBe(true);
    expect(r.text.endsWith("[TRUNCATED - 1073741824 bytes total, 65536 shown]")).toBe(true);
    expect(Buffer.byteLength(r.text)).toBeLessThan(65536 + 200);
    expect(r.structured.truncated).toBe(true);
    await stillServing();
  }, 180_000);

  it("a child that ignores SIGTERM is killed at the timeout", async () => {
    const started = Date.now();
    const r = await s.call("shell_exec", { command: "trap '' TERM; sleep 60", timeout: 1 });
    expect(r.text).toBe("[TIMEOUT after 1s]");
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("a 5 MiB stdin is refused before any scan with its exact size, and audited", async () => {
    const r = await s.call("shell_exec", { command: "wc -c", stdin: "y".repeat(5 * 1024 * 1024) });
    expect(r.text).toBe(
      `[DENIED tier 3 (IRREVERSIBLE): input of ${5 * 1024 * 1024 + 6} bytes exceeds RELAY_SHELL_MAX_INPUT (1048576)]`,
    );
    const rec = s.records().at(-1);
    expect(rec).toMatchObject({ tool: "shell_exec", tier: 3, denied: true });
    // Audit args are bounded: the record stays small.
    expect(JSON.stringify(rec).length).toBeLessThan(4096);
  });

  it("a 200 MiB request is answered, audited and never read whole", async () => {
    const r = await s.call("shell_exec", { command: "wc -c", stdin: "y".repeat(200 * 1024 * 1024) });
    const match =
      /^\[DENIED tier 3 \(IRREVERSIBLE\): input of (\d+) bytes exceeds RELAY_SHELL_MAX_INPUT \(1048576\)\]$/.exec(
        r.text,
      );
    expect(Number(match?.[1])).toBeGreaterThan(200 * 1024 * 1024);
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_exec", tier: 3, denied: true, exit_code: null });
    await stillServing();
  }, 120_000);
});
