import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { rssBytes, SERVER_ENTRY, startBenchServer, timeEach } from "./harness.js";
import { type Bench, type BenchFigure, median, percentile } from "./types.js";

const CLIENTS = 64;
const CALLS_PER_CLIENT = 200;
const SEQUENTIAL = 200;
const WARMUP = 20;
const RSS_GROWTH_LIMIT = 1.5;

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

/** The built server on streamable HTTP (loopback, no OAuth), as an operator would start it. */
async function startHttpServer(dir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dir,
      RELAY_SHELL_TRANSPORT: "http",
      RELAY_SHELL_HTTP_PORT: String(port),
      RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
    },
    cwd: dir,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      if (stderr.includes('"msg":"serving"')) resolve();
    });
    child.once("exit", (code) => reject(new Error(`HTTP server exited ${code}: ${stderr.slice(-500)}`)));
  });
  // Keep draining the log so a chatty server never blocks on a full pipe.
  child.stderr?.resume();
  return child;
}

async function connectHttp(base: string): Promise<Client> {
  const client = new Client({ name: "bench-http", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
  return client;
}

async function execTrue(client: Client): Promise<boolean> {
  const r = await client.callTool({ name: "shell_exec", arguments: { command: "true" } });
  const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
  return r.isError !== true && text === "[exit 0]\n";
}

/**
 * 64 MCP clients over streamable HTTP, each with its own session, each making
 * 200 `shell_exec true` calls at once: errors, latency percentiles and the
 * server's memory before and after. Then one client's sequential median over
 * HTTP against stdio on the same machine in the same run: the cost of the
 * HTTP edge per call.
 */
export const httpBench: Bench = {
  name: "http",
  async run(): Promise<BenchFigure[]> {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-bench-http-"));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const child = await startHttpServer(dir, port);
    const pid = child.pid ?? -1;
    const clients: Client[] = [];
    try {
      for (let i = 0; i < CLIENTS; i++) clients.push(await connectHttp(base));
      await Promise.all(clients.map((c) => execTrue(c)));
      const rssCold = rssBytes(pid);
      // A short burst at full concurrency first (a tenth of the load), so that the launcher, the
      // classifier, every session and V8's heap sizing are warm: what the run then shows is growth
      // under sustained load (a leak), not the heap reaching its working size. The cold figure is
      // reported too.
      await Promise.all(
        clients.map(async (c) => {
          for (let i = 0; i < WARMUP; i++) await execTrue(c);
        }),
      );
      const rssStart = rssBytes(pid);

      const latencies: number[] = [];
      let errors = 0;
      const started = performance.now();
      await Promise.all(
        clients.map(async (client) => {
          for (let i = 0; i < CALLS_PER_CLIENT; i++) {
            const t0 = performance.now();
            try {
              if (!(await execTrue(client))) errors++;
            } catch {
              errors++;
            }
            latencies.push(performance.now() - t0);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      const rssEnd = rssBytes(pid);

      // Sequential single-client latency, HTTP against stdio, interleaved so background load hits both alike.
      const stdio = await startBenchServer();
      const http = clients[0] as Client;
      const once = { http: () => execTrue(http), stdio: () => stdio.call("shell_exec", { command: "true" }) };
      await timeEach(WARMUP, once.stdio);
      await timeEach(WARMUP, once.http);
      const overHttp: number[] = [];
      const overStdio: number[] = [];
      for (let round = 0; round < 4; round++) {
        overHttp.push(...(await timeEach(SEQUENTIAL / 4, once.http)));
        overStdio.push(...(await timeEach(SEQUENTIAL / 4, once.stdio)));
      }
      await stdio.close();
      rmSync(stdio.dir, { recursive: true, force: true });
      const total = CLIENTS * CALLS_PER_CLIENT;
      const growth = rssEnd / rssStart;
      return [
        {
          name: `${CLIENTS} clients x ${CALLS_PER_CLIENT} shell_exec true: errors`,
          value: errors,
          unit: "calls",
          target: "0",
          met: errors === 0,
        },
        {
          name: "concurrent calls completed",
          value: latencies.length,
          unit: "calls",
          target: String(total),
          met: latencies.length === total,
        },
        {
          name: "concurrent latency p50",
          value: median(latencies),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "concurrent latency p99",
          value: percentile(latencies, 99),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "concurrent throughput",
          value: total / seconds,
          unit: "calls/s",
          target: "reported",
          met: null,
        },
        {
          name: "server RSS after one call per client (cold)",
          value: rssCold / 2 ** 20,
          unit: "MiB",
          target: "reported",
          met: null,
        },
        {
          name: "server RSS end / cold",
          value: rssEnd / rssCold,
          unit: "x",
          target: "reported",
          met: null,
        },
        {
          name: "server RSS at start (after the warm-up burst)",
          value: rssStart / 2 ** 20,
          unit: "MiB",
          target: "reported",
          met: null,
        },
        { name: "server RSS at end", value: rssEnd / 2 ** 20, unit: "MiB", target: "reported", met: null },
        {
          name: "server RSS end / start",
          value: growth,
          unit: "x",
          target: `<= ${RSS_GROWTH_LIMIT}x`,
          met: growth <= RSS_GROWTH_LIMIT,
        },
        {
          name: "sequential shell_exec true over HTTP, median",
          value: median(overHttp),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "sequential shell_exec true over stdio, median",
          value: median(overStdio),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "HTTP overhead per call (median HTTP - median stdio)",
          value: median(overHttp) - median(overStdio),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "HTTP / stdio (median)",
          value: median(overHttp) / median(overStdio),
          unit: "x",
          target: "reported",
          met: null,
        },
      ];
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
