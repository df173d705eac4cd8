import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceSkip,
  createSshFixture,
  SSHD_MISSING,
  type Sshd,
  type SshFixture,
} from "../fixtures/sshd.js";
import { startServer, type TestServer } from "../helpers/server.js";

interface StageLine {
  label: string;
  totalUs: number;
  stages: Record<string, number>;
}

function traceLines(path: string): StageLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as StageLine);
}

/** Each line's stages are disjoint slices of the call: together they never exceed its total. */
function expectConsistent(line: StageLine): void {
  const sum = Object.values(line.stages).reduce((a, b) => a + b, 0);
  for (const [stage, us] of Object.entries(line.stages)) expect(us, stage).toBeGreaterThanOrEqual(0);
  expect(sum).toBeLessThanOrEqual(line.totalUs + 1);
}

announceSkip("stage trace over ssh_exec");

describe("RELAY_SHELL_TRACE_FILE through the built server", () => {
  it("writes nothing when the setting is absent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-trace-"));
    const s = await startServer();
    try {
      expect((await s.call("shell_exec", { command: "true" })).text).toBe("[exit 0]\n");
      expect(traceLines(join(s.dir, "trace.jsonl"))).toEqual([]);
      expect(traceLines(join(dir, "trace.jsonl"))).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("records, per shell_exec call, each pipeline stage with the launcher's spawn and drain", async () => {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-trace-"));
    const path = join(dir, "trace.jsonl");
    const s = await startServer({ RELAY_SHELL_TRACE_FILE: path });
    try {
      for (let i = 0; i < 3; i++) {
        expect((await s.call("shell_exec", { command: "true" })).text).toBe("[exit 0]\n");
      }
      const lines = traceLines(path);
      expect(lines.map((l) => l.label)).toEqual(["shell_exec", "shell_exec", "shell_exec"]);
      for (const line of lines) {
        expect(Object.keys(line.stages)).toEqual([
          "validate",
          "prepare",
          "classify",
          "policy",
          "audit_reserve",
          "gates",
          "exec_request",
          "launcher_hop",
          "plan",
          "spawn",
          "drain",
          "tool_result",
          "format",
          "audit",
          "notices",
        ]);
        expectConsistent(line);
        // The launcher's share came back from the other process: the child's spawn and its run.
        expect(line.stages.spawn).toBeGreaterThan(0);
        expect(line.stages.drain).toBeGreaterThan(0);
      }
    } finally {
      await s.close();
    }
  });

  it("a refused call stops at the stage that refused it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-trace-"));
    const path = join(dir, "trace.jsonl");
    const s = await startServer({ RELAY_SHELL_TRACE_FILE: path, RELAY_SHELL_POLICY_DENY: ".*" });
    try {
      expect((await s.call("shell_exec", { command: "true" })).text).toMatch(/^\[DENIED tier /);
      const [line] = traceLines(path);
      expect(line?.label).toBe("shell_exec");
      expect(Object.keys(line?.stages ?? {})).toEqual(["validate", "prepare", "classify", "policy"]);
    } finally {
      await s.close();
    }
  });
});

describe.skipIf(SSHD_MISSING)("RELAY_SHELL_TRACE_FILE over ssh_exec against real sshd", () => {
  let fx: SshFixture;
  let sshd: Sshd;
  let s: TestServer;
  let path: string;

  beforeAll(async () => {
    fx = createSshFixture();
    sshd = await fx.start();
    const inventory = join(fx.dir, "inventory.json");
    writeFileSync(
      inventory,
      JSON.stringify({ web: { hostname: "127.0.0.1", port: sshd.port, user: fx.user } }),
    );
    path = join(fx.dir, "trace.jsonl");
    s = await startServer({
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "known_hosts"),
      RELAY_SHELL_TRACE_FILE: path,
    });
  });

  afterAll(async () => {
    await s?.close();
    fx?.close();
  });

  it("records the connection, the channel open and the remote run of each call", async () => {
    for (let i = 0; i < 3; i++) {
      expect((await s.call("ssh_exec", { host: "web", command: "true" })).text).toMatch(/^\[exit 0\]\n/);
    }
    const lines = traceLines(path);
    expect(lines.map((l) => l.label)).toEqual(["ssh_exec", "ssh_exec", "ssh_exec"]);
    for (const line of lines) {
      const stages = Object.keys(line.stages);
      expect(stages.slice(0, 6)).toEqual([
        "validate",
        "prepare",
        "classify",
        "policy",
        "audit_reserve",
        "gates",
      ]);
      expect(stages).toEqual(
        expect.arrayContaining(["connect", "channel_open", "remote_run", "format", "audit"]),
      );
      expect(stages.indexOf("connect")).toBeLessThan(stages.indexOf("channel_open"));
      expect(stages.indexOf("channel_open")).toBeLessThan(stages.indexOf("remote_run"));
      expectConsistent(line);
    }
  });
});
