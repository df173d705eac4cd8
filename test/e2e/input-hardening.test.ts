import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, connect as tcpConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnHttpServer, startServer, type TestServer } from "../helpers/server.js";

const NESTED_VALUE =
  '[ERROR: ValueError: env_json: the value of "A" is an array; a variable\'s value must be a string, number, boolean or null]';

describe("env_json through the built server", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ RELAY_SHELL_UNSAFE_NOTICES: "false" });
  });
  afterAll(async () => {
    await s?.close();
  });

  const deepArray = `{"A":${"[".repeat(10_000)}${"]".repeat(10_000)}}`;
  const deepObject = `{"A":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`;

  it("answers 10,000-deep nesting with a ValueError that says what is wrong, for every tool that takes it", async () => {
    for (const [tool, args] of [
      ["shell_exec", { command: "echo ran" }],
      ["shell_script", { script: "echo ran" }],
      ["shell_spawn", { command: "true" }],
    ] as const) {
      const r = await s.call(tool, { ...args, env_json: deepArray });
      expect(r.text, tool).toBe(NESTED_VALUE);
      expect(r.structured.exit_code, tool).toBeNull();
    }
    const object = await s.call("shell_exec", { command: "echo ran", env_json: deepObject });
    expect(object.text).toMatch(/^\[ERROR: ValueError: env_json: the value of "A" is an object;/);
    // The refusal is recorded like any failed call.
    expect(s.records().at(-1)).toMatchObject({ tool: "shell_exec", denied: false, exit_code: null });
  });

  it("refuses a malformed or non-object overlay instead of running without it", async () => {
    const comma = await s.call("shell_exec", { command: "echo ran", env_json: '{"DRY_RUN":"1",}' });
    expect(comma.text).toMatch(
      /^\[ERROR: ValueError: env_json is not valid JSON \(.+\); expected a flat JSON object/,
    );
    const list = await s.call("shell_exec", { command: "echo ran", env_json: '["DRY_RUN=1"]' });
    expect(list.text).toBe(
      '[ERROR: ValueError: env_json must be a flat JSON object such as {"NAME":"value","OTHER":null}, got an array]',
    );
  });

  it("still applies a flat overlay", async () => {
    const r = await s.call("shell_exec", {
      command: 'printf "%s|%s" "$A" "$N"',
      env_json: JSON.stringify({ A: "x", N: 8080 }),
    });
    expect(r.text).toBe("[exit 0]\nx|8080");
  });
});

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

/** Send bytes exactly as written (Node's HTTP client cannot repeat a Host line) and return the status line. */
function rawExchange(port: number, head: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect(port, "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString("utf8");
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
    socket.write(`${head}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  });
}

describe("Host header against the HTTP edge of the built server", () => {
  let child: ChildProcess;
  let dir: string;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-host-"));
    port = await freePort();
    ({ child } = await spawnHttpServer(dir, port, { RELAY_SHELL_SSH_CONFIG: join(dir, "no-ssh-config") }));
  });
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const initialize = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  });
  const post = (hosts: string[]) =>
    "POST /mcp HTTP/1.1\r\n" +
    hosts.map((h) => `Host: ${h}\r\n`).join("") +
    "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  const metrics = (hosts: string[]) =>
    `GET /metrics HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join("")}`;
  const status = (answer: string) => answer.split("\r\n")[0];

  it("serves one loopback Host, in any IPv4 loopback spelling", async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `127.0.0.2:${port}`, "127.1.2.3"]) {
      expect(status(await rawExchange(port, metrics([host]), "")), host).toBe("HTTP/1.1 200 OK");
    }
    expect(status(await rawExchange(port, metrics(["evil.example"]), ""))).toBe("HTTP/1.1 403 Forbidden");
  });

  it("refuses a request with two Host headers, good then evil, with 400", async () => {
    for (const request of [post, metrics]) {
      const answer = await rawExchange(port, request([`127.0.0.1:${port}`, "evil.example"]), initialize);
      expect(status(answer)).toBe("HTTP/1.1 400 Bad Request");
      expect(answer).toContain("Multiple Host headers");
    }
    const same = await rawExchange(port, metrics([`127.0.0.1:${port}`, `127.0.0.1:${port}`]), "");
    expect(status(same)).toBe("HTTP/1.1 400 Bad Request");
  });
});
