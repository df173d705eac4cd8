import { type ChildProcess, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildServer } from "../../src/cli/build.js";
import { loadSettings } from "../../src/config/index.js";
import { silentLogger } from "../../src/core/index.js";
import { createHttpEdge, type HttpEdge } from "../../src/server/http-edge.js";
import { baseEnv, SERVER_ENTRY, spawnHttpServer, startServer, type TestServer } from "../helpers/server.js";

interface HttpServer {
  base: string;
  port: number;
  dir: string;
  auditPath: string;
  child: ChildProcess;
  stderr(): string;
  records(): Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

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

/** Start the BUILT server on streamable HTTP in its own temp dir; resolves once it listens. */
async function startHttp(settings: Record<string, string> = {}): Promise<HttpServer> {
  const dir = mkdtempSync(join(tmpdir(), "relay-shell-http-"));
  const auditPath = join(dir, "audit.jsonl");
  const port = await freePort();
  const { child, stderr } = await spawnHttpServer(dir, port, settings);
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    dir,
    auditPath,
    child,
    stderr,
    records: () =>
      readFileSync(auditPath, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function connect(base: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`));
  const client = new Client({ name: "relay-shell-http-tests", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

async function callText(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  const text = (result.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
  return { text, structured: (result.structuredContent ?? {}) as Record<string, unknown> };
}

/** A raw HTTP exchange (fetch cannot set Host). */
function raw(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: options.method ?? "POST",
        path: options.path ?? "/mcp",
        headers: options.headers,
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString("utf8");
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const JSON_HEADERS = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
const SETTINGS = (dir: string) => ({
  RELAY_SHELL_SSH_CONFIG: join(dir, "no-ssh-config"),
  RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(dir, "known_hosts"),
});

/**
 * One harmless call per tool. `exact` results must match stdio byte for byte
 * once ids are masked; the others carry live state (pids, ids, timings) and
 * are compared by their structured verdict.
 */
const CALLS: Record<string, { args: Record<string, unknown>; exact: boolean }> = {
  shell_exec: { args: { command: "echo same-over-both" }, exact: true },
  shell_script: { args: { script: "echo one\necho two" }, exact: true },
  shell_spawn: { args: { command: "cat" }, exact: false },
  session_send: { args: { session_id: "$SESSION", data: "x" }, exact: false },
  session_recv: { args: { session_id: "$SESSION", timeout: 1 }, exact: false },
  session_resize: { args: { session_id: "$SESSION", cols: 100, rows: 30 }, exact: false },
  session_list: { args: {}, exact: false },
  session_kill: { args: { session_id: "$SESSION" }, exact: false },
  ssh_exec: { args: { host: "127.0.0.1", port: 1, command: "true", timeout: 5 }, exact: true },
  ssh_fanout: { args: { command: "true" }, exact: true },
  ssh_fanout_result: { args: { fanout_id: "fo-000000000000" }, exact: true },
  ssh_check: { args: {}, exact: true },
  ssh_keyscan: { args: { hosts: "127.0.0.1", port: 1, timeout: 2 }, exact: false },
  ssh_hosts: { args: {}, exact: true },
  ssh_spawn: { args: { host: "127.0.0.1", port: 1 }, exact: true },
  ssh_upload: {
    args: { host: "127.0.0.1", port: 1, local_path: "/nonexistent-src", remote_path: "/tmp/x" },
    exact: true,
  },
  ssh_download: {
    args: { host: "127.0.0.1", port: 1, remote_path: "/tmp/x", local_path: "/tmp/relay-dl" },
    exact: true,
  },
  ssh_forward: { args: { host: "127.0.0.1", port: 1, spec: "L:0:127.0.0.1:9" }, exact: true },
  ssh_forward_list: { args: {}, exact: true },
  ssh_forward_close: { args: { forward_id: "fw-000000000000" }, exact: true },
  server_info: { args: {}, exact: false },
  audit_tail: { args: { lines: 1 }, exact: false },
  policy_explain: { args: { tool: "shell_exec", arguments: { command: "rm -rf /tmp/x" } }, exact: true },
  operation_confirm: { args: { token: "not-a-token" }, exact: true },
};

const mask = (text: string) =>
  text.replace(/\b(sh|ssh|fw)-[0-9a-f]{12}\b/g, "$1-ID").replace(/\d+(\.\d+)? ?(ms|s)\b/g, "N$2");

describe("streamable HTTP transport", () => {
  let http: HttpServer;
  let stdio: TestServer;
  let scratch: string;
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "relay-shell-http-both-"));
    [http, stdio] = await Promise.all([startHttp(SETTINGS(scratch)), startServer(SETTINGS(scratch))]);
  });
  afterAll(async () => {
    await Promise.all([http?.stop(), stdio?.close()]);
    rmSync(scratch, { recursive: true, force: true });
  });

  it("reaches every tool with the same results as stdio", async () => {
    const { client, transport } = await connect(http.base);
    const overHttp = (await client.listTools()).tools;
    const overStdio = (await stdio.client.listTools()).tools;
    expect(overHttp).toEqual(overStdio);
    expect(overHttp.map((t) => t.name).sort()).toEqual(Object.keys(CALLS).sort());

    const sessions: Record<"http" | "stdio", string> = { http: "", stdio: "" };
    for (const tool of overHttp) {
      const entry = CALLS[tool.name];
      if (!entry) throw new Error(`no call for ${tool.name}`);
      const argsFor = (side: "http" | "stdio") =>
        JSON.parse(JSON.stringify(entry.args).replaceAll("$SESSION", sessions[side])) as Record<
          string,
          unknown
        >;
      const [a, b] = await Promise.all([
        callText(client, tool.name, argsFor("http")),
        stdio.call(tool.name, argsFor("stdio")),
      ]);
      if (tool.name === "shell_spawn") {
        sessions.http = /(sh-[0-9a-f]{12})/.exec(a.text)?.[1] ?? "";
        sessions.stdio = /(sh-[0-9a-f]{12})/.exec(b.text)?.[1] ?? "";
        expect(sessions.http, a.text).not.toBe("");
      }
      expect(a.structured.tool, tool.name).toBe(tool.name);
      for (const key of ["tool", "tier", "denied", "action"]) {
        expect(a.structured[key], `${tool.name}.${key}`).toEqual(b.structured[key]);
      }
      if (entry.exact) expect(mask(a.text), tool.name).toBe(mask(b.text));
    }
    // Every call was audited once per transport, the HTTP ones with the HTTP request ids.
    const names = http.records().map((r) => r.tool);
    for (const name of Object.keys(CALLS)) expect(names, name).toContain(name);
    await transport.terminateSession();
    await client.close();
  });

  it("gives each client its own MCP session and forgets a terminated one", async () => {
    const one = await connect(http.base);
    const two = await connect(http.base);
    expect(one.transport.sessionId).toBeTruthy();
    expect(one.transport.sessionId).not.toBe(two.transport.sessionId);
    expect((await callText(two.client, "shell_exec", { command: "echo two" })).text).toBe("[exit 0]\ntwo\n");
    const id = one.transport.sessionId ?? "";
    await one.transport.terminateSession();
    await one.client.close();
    const after = await raw(http.port, {
      headers: { ...JSON_HEADERS, "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(after.status).toBe(404);
    expect(JSON.parse(after.body)).toEqual({
      jsonrpc: "2.0",
      error: { code: -32001, message: "Session not found" },
      id: null,
    });
    await two.client.close();
  });

  it("answers a load balancer's health check on /healthz, outside OAuth and MCP", async () => {
    const health = await raw(http.port, { method: "GET", path: "/healthz" });
    expect(health.status).toBe(200);
    expect(health.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(health.body)).toEqual({ status: "ok" });
    expect((await raw(http.port, { method: "HEAD", path: "/healthz" })).status).toBe(200);
    expect((await raw(http.port, { method: "POST", path: "/healthz", body: "{}" })).status).toBe(405);
    // The Host check holds here too: a rebinding page learns nothing.
    expect(
      (await raw(http.port, { method: "GET", path: "/healthz", headers: { Host: "rebind.evil" } })).status,
    ).toBe(403);
  });

  describe("bad input gets a clear error, leaks nothing and breaks nothing", () => {
    const secret = "s3cr3t-marker-in-the-request";
    let sessionId: string;
    let keep: { client: Client; transport: StreamableHTTPClientTransport };
    beforeAll(async () => {
      keep = await connect(http.base);
      sessionId = keep.transport.sessionId ?? "";
    });
    afterAll(async () => {
      await keep.client.close();
    });
    const withSession = () => ({
      ...JSON_HEADERS,
      "Mcp-Session-Id": sessionId,
      "Mcp-Protocol-Version": "2025-06-18",
    });

    it.each([
      ["malformed JSON", { headers: JSON_HEADERS, body: `{"jsonrpc":"2.0","id":1,${secret}` }, 400, -32700],
      [
        "JSON that is not JSON-RPC",
        { headers: "session", body: JSON.stringify({ hello: secret }) },
        400,
        -32700,
      ],
      [
        "a request without a session",
        {
          headers: JSON_HEADERS,
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { x: secret } }),
        },
        400,
        -32000,
      ],
      [
        "an unknown session id",
        { headers: { ...JSON_HEADERS, "Mcp-Session-Id": secret }, body: "{}" },
        404,
        -32001,
      ],
      [
        "a wrong content type",
        { headers: { ...JSON_HEADERS, "Content-Type": "text/plain" }, body: secret },
        415,
        -32000,
      ],
      [
        "a form body",
        {
          headers: { ...JSON_HEADERS, "Content-Type": "application/x-www-form-urlencoded" },
          body: `a=${secret}`,
        },
        415,
        -32000,
      ],
      ["GET without a session", { method: "GET", headers: { Accept: "text/event-stream" } }, 400, -32000],
      ["an unsupported method", { method: "PUT", headers: JSON_HEADERS, body: secret }, 405, -32000],
      [
        "a missing Accept header",
        {
          headers: "session-no-accept",
          body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
        },
        406,
        -32000,
      ],
      ["an unknown path", { path: `/${secret}`, method: "GET" }, 404, -32000],
    ] as const)("%s", async (_name, spec, status, code) => {
      const s = spec as { method?: string; path?: string; headers?: unknown; body?: string };
      let headers: Record<string, string> | undefined;
      if (s.headers === "session") headers = withSession();
      else if (s.headers === "session-no-accept") {
        const { Accept: _drop, ...rest } = withSession();
        headers = rest;
      } else headers = s.headers as Record<string, string> | undefined;
      const r = await raw(http.port, {
        ...(s.method ? { method: s.method } : {}),
        ...(s.path ? { path: s.path } : {}),
        ...(headers ? { headers } : {}),
        ...(s.body !== undefined ? { body: s.body } : {}),
      });
      expect(r.status).toBe(status);
      expect(r.body).not.toContain(secret);
      const body = JSON.parse(r.body) as { error: { code: number } };
      expect(body.error.code).toBe(code);
    });

    it("refuses a bad Host header and a foreign Origin with 403", async () => {
      const evil = await raw(http.port, {
        headers: { ...JSON_HEADERS, Host: "evil.example" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize" }),
      });
      expect(evil.status).toBe(403);
      expect(JSON.parse(evil.body).error.message).toBe("Invalid Host header");
      const origin = await raw(http.port, {
        headers: { ...withSession(), Origin: "https://evil.example" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      });
      expect(origin.status).toBe(403);
      expect(
        (await raw(http.port, { method: "GET", path: "/metrics", headers: { Host: "rebind.evil" } })).status,
      ).toBe(403);
      const local = await raw(http.port, {
        headers: {
          ...withSession(),
          Host: `localhost:${http.port}`,
          Origin: `http://localhost:${http.port}`,
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/list" }),
      });
      expect(local.status).toBe(200);
    });

    it("answers an oversized tool call with the audited Tier-3 refusal, and other oversized bodies with 413", async () => {
      const huge = "y".repeat(9 * 1024 * 1024);
      const call = await raw(http.port, {
        headers: withSession(),
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 77,
          method: "tools/call",
          params: { name: "shell_exec", arguments: { command: `echo ${huge}` } },
        }),
      });
      expect(call.status).toBe(200);
      const answer = JSON.parse(call.body) as { id: number; result: { content: Array<{ text: string }> } };
      expect(answer.id).toBe(77);
      expect(answer.result.content[0]?.text).toMatch(
        /^\[DENIED tier 3 \(IRREVERSIBLE\): input of \d+ bytes exceeds/,
      );
      expect(call.body.length).toBeLessThan(10_000);
      const record = http.records().at(-1);
      expect(record).toMatchObject({ tool: "shell_exec", denied: true, tier: 3, request_id: "77" });

      const other = await raw(http.port, {
        headers: withSession(),
        body: JSON.stringify({ jsonrpc: "2.0", id: 78, method: "tools/list", params: { pad: huge } }),
      });
      expect(other.status).toBe(413);
      expect(JSON.parse(other.body).error.message).toMatch(/^message of \d+ bytes exceeds the size limit$/);
    });

    it("still serves normally afterwards", async () => {
      expect((await callText(keep.client, "shell_exec", { command: "echo alive" })).text).toBe(
        "[exit 0]\nalive\n",
      );
      expect(http.child.exitCode).toBeNull();
    });
  });
});

describe("binding safety", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-bind-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const cli = (args: string[], env: Record<string, string>) => {
    const r = spawnSync(process.execPath, [SERVER_ENTRY, ...args], {
      env: baseEnv({
        RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
        RELAY_SHELL_AUTH_STATE_DIR: join(dir, "oauth"),
        RELAY_SHELL_TRANSPORT: "http",
        ...env,
      }),
      cwd: dir,
      encoding: "utf8",
      timeout: 20_000,
    });
    return { code: r.status, stderr: r.stderr };
  };

  it.each(["0.0.0.0", "::", "192.0.2.10"])("refuses an unauthenticated listener on %s (exit 2)", (host) => {
    for (const args of [[], ["--check-config"]]) {
      const r = cli(args, { RELAY_SHELL_HTTP_HOST: host, RELAY_SHELL_HTTP_PORT: "1" });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("relay_shell: invalid configuration: refusing to serve HTTP");
      expect(r.stderr).toContain("RELAY_SHELL_ALLOW_UNAUTH_NETWORK");
      expect(r.stderr).toContain("RELAY_SHELL_AUTH_ENABLED");
    }
  });

  it("accepts it with RELAY_SHELL_ALLOW_UNAUTH_NETWORK=true, with a warning", () => {
    const r = cli(["--check-config"], {
      RELAY_SHELL_HTTP_HOST: "0.0.0.0",
      RELAY_SHELL_ALLOW_UNAUTH_NETWORK: "true",
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("relay_shell: config OK (transport=http");
    expect(r.stderr).toContain("warning: unauthenticated HTTP listener on a non-loopback address");
  });

  it("accepts a non-loopback bind with OAuth and single-client lockdown", () => {
    const r = cli(["--check-config"], { RELAY_SHELL_HTTP_HOST: "0.0.0.0", RELAY_SHELL_AUTH_ENABLED: "true" });
    expect(r.code).toBe(0);
  });

  it("treats OAuth without lockdown like no OAuth on a non-loopback address", () => {
    const r = cli(["--check-config"], {
      RELAY_SHELL_HTTP_HOST: "0.0.0.0",
      RELAY_SHELL_AUTH_ENABLED: "true",
      RELAY_SHELL_AUTH_SINGLE_CLIENT: "false",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("build_server failed: refusing to serve HTTP");
    expect(r.stderr).toContain("RELAY_SHELL_AUTH_SINGLE_CLIENT=false");
  });

  it("exits 1 when the port cannot be bound", async () => {
    const blocker = createServer();
    const port = await new Promise<number>((resolve) =>
      blocker.listen(0, "127.0.0.1", () => {
        const a = blocker.address();
        resolve(typeof a === "object" && a ? a.port : 0);
      }),
    );
    const r = cli([], { RELAY_SHELL_HTTP_PORT: String(port) });
    blocker.close();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("EADDRINUSE");
  });
});

describe("MCP session limits (in-process edge, controlled clock)", () => {
  let dir: string;
  let edge: HttpEdge;
  let port: number;
  let now = 5_000_000;
  let close: () => void;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "relay-shell-http-limits-"));
    const clock = { now: () => now, monotonic: () => now };
    const settings = loadSettings(
      {
        RELAY_SHELL_TRANSPORT: "http",
        RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
        RELAY_SHELL_SSH_CONFIG: join(dir, "none"),
        RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(dir, "known_hosts"),
      },
      { cwd: dir, homeDir: dir },
    );
    const built = await buildServer({
      settings,
      env: { PATH: process.env.PATH },
      logger: silentLogger,
      clock,
    });
    await built.ready;
    close = () => built.close();
    edge = createHttpEdge({
      settings: { ...settings, httpPort: 0 },
      mcp: built.mcp,
      calls: built.metrics,
      gauges: built.gauges,
      maxBodyBytes: 64 * 1024,
      logger: silentLogger,
      clock,
      connections: { maxConnections: 2, idleMs: 60_000, sweepIntervalMs: 25 },
    });
    port = (await edge.listen()).port;
  });
  afterAll(async () => {
    await edge?.close();
    close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a session beyond the cap with 503 and closes idle ones", async () => {
    const base = `http://127.0.0.1:${port}`;
    const a = await connect(base);
    const b = await connect(base);
    const third = new Client({ name: "third", version: "1" });
    await expect(third.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))).rejects.toThrow(
      /Too many MCP sessions/,
    );
    expect(edge.mcpConnections).toBe(2);

    // A client that holds its event stream open is alive, however quiet. One that went away without
    // ending its session (closed sockets, no DELETE) is closed once idle past the limit.
    const idle = a.transport.sessionId ?? "";
    now += 61_000;
    await new Promise((r) => setTimeout(r, 100));
    expect(edge.mcpConnections).toBe(2);
    await Promise.all([a.client.close(), b.client.close()]);
    await new Promise((r) => setTimeout(r, 50));
    now += 61_000;
    await new Promise((r) => setTimeout(r, 150));
    expect(edge.mcpConnections).toBe(0);
    const gone = await raw(port, {
      headers: { ...JSON_HEADERS, "Mcp-Session-Id": idle, "Mcp-Protocol-Version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(gone.status).toBe(404);
    const fresh = await connect(base);
    expect((await fresh.client.listTools()).tools.length).toBeGreaterThan(0);
    await fresh.client.close();
  });
});
