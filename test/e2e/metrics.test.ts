import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnHttpServer } from "../helpers/server.js";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

const FAMILIES = [
  ["relay_shell_tool_calls_total", "counter"],
  ["relay_shell_seccomp_notify_events_total", "counter"],
  ["relay_shell_seccomp_notify_overflow_total", "counter"],
  ["relay_shell_active_sessions", "gauge"],
  ["relay_shell_active_forwards", "gauge"],
  ["relay_shell_audit_degraded", "gauge"],
] as const;

/** The value of one sample line, or 0 when the series does not exist yet. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const calls = (outcome: string, tier: number, tool: string) =>
  `relay_shell_tool_calls_total{mode="open",outcome="${outcome}",tier="${tier}",tool="${tool}"}`;

describe("GET /metrics on the HTTP transport", () => {
  let dir: string;
  let child: ChildProcess;
  let base: string;
  let client: Client;
  const scrape = async () => {
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    return { type: r.headers.get("content-type"), text: await r.text() };
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-metrics-"));
    const port = await freePort();
    ({ child } = await spawnHttpServer(dir, port, {
      RELAY_SHELL_POLICY_DENY: "forbidden-word",
      RELAY_SHELL_SSH_CONFIG: join(dir, "none"),
    }));
    base = `http://127.0.0.1:${port}`;
    client = new Client({ name: "metrics-tests", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  });
  afterAll(async () => {
    await client?.close();
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the six contract families in order with the contract's content type", async () => {
    const { type, text } = await scrape();
    expect(type).toBe("text/plain; version=0.0.4; charset=utf-8");
    const typed = [...text.matchAll(/^# TYPE (relay_shell_\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]);
    expect(typed.slice(0, 6)).toEqual(FAMILIES.map((f) => [...f]));
    expect(text).toMatch(/^relay_shell_active_sessions \d+\.\d+$/m);
    expect(text).toMatch(/^relay_shell_audit_degraded 0\.0$/m);
    expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
    expect(text.endsWith("\n")).toBe(true);
    expect((await fetch(`${base}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("counts ok, denied and error outcomes, reads and prompt fetches, and times every tool call", async () => {
    const before = (await scrape()).text;
    const run = (args: Record<string, unknown>) => client.callTool({ name: "shell_exec", arguments: args });
    await run({ command: "echo one" });
    await run({ command: "echo two" });
    const denied = await run({ command: "echo forbidden-word" });
    expect((denied.content as Array<{ text: string }>)[0]?.text).toMatch(/^\[DENIED/);
    const failed = await run({ command: "true", cwd: join(dir, "no-such-dir") });
    expect((failed.content as Array<{ text: string }>)[0]?.text).toMatch(/^\[ERROR/);
    await client.getPrompt({ name: "operating_guide" });
    const after = (await scrape()).text;

    const delta = (series: string) => sample(after, series) - sample(before, series);
    // echo and true are proven to only read: Tier 0 (docs/policy.md, Tier 0).
    expect(delta(calls("ok", 0, "shell_exec"))).toBe(2);
    expect(
      sample(after, calls("denied", 0, "shell_exec")) + sample(after, calls("denied", 3, "shell_exec")),
    ).toBe(1);
    expect(delta(calls("error", 0, "shell_exec"))).toBe(1);
    expect(delta(calls("ok", 0, "prompt:operating_guide"))).toBe(1);
    expect(delta('relay_shell_tool_call_duration_seconds_count{tool="shell_exec"}')).toBe(4);
    expect(delta('relay_shell_tool_call_duration_seconds_bucket{le="+Inf",tool="shell_exec"}')).toBe(4);
  });

  it("reads the session gauge live at every scrape", async () => {
    const spawned = await client.callTool({ name: "shell_spawn", arguments: { command: "cat" } });
    const id = /(sh-[0-9a-f]{12})/.exec((spawned.content as Array<{ text: string }>)[0]?.text ?? "")?.[1];
    expect(id).toBeTruthy();
    expect(sample((await scrape()).text, "relay_shell_active_sessions")).toBe(1);
    await client.callTool({ name: "session_kill", arguments: { session_id: id } });
    expect(sample((await scrape()).text, "relay_shell_active_sessions")).toBe(0);
    expect(sample((await scrape()).text, "relay_shell_active_forwards")).toBe(0);
  });
});
