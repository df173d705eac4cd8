import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { requestInfra } from "../src/infra-protocol/index.js";
import { createInfraFixture, INFRA_SKIP_REASON } from "../test/fixtures/infra.js";
import { ROOT, startBenchServer, timeEach } from "./harness.js";
import { type Bench, type BenchFigure, median, percentile } from "./types.js";

const SAMPLES = 400;
const WARMUP = 30;
/** The target: what infra_status may cost over the server's cheapest tool. */
const OVER_FLOOR_MS = 2;

/** A broker listening in a directory, in a process of its own. */
interface BenchBroker {
  /** What answers: the daemon, or the scripted stand-in. */
  kind: string;
  socketPath: string;
  close(): Promise<void>;
}

const DAEMON_BUILT = existsSync(join(ROOT, "dist", "cli", "infra-broker.js"));

/**
 * The broker daemon of the INFRA-1 fixture (its own account, root-owned
 * profiles, a hash-chained receipt per request), when it is built and the
 * fixture can run here.
 */
async function startDaemon(): Promise<BenchBroker> {
  const fx = await createInfraFixture();
  fx.writeProfile("web");
  try {
    const daemon = await fx.startDaemon();
    return {
      kind: "the broker daemon",
      socketPath: fx.socketPath,
      close: async () => {
        await daemon.stop();
        fx.close();
      },
    };
  } catch (err) {
    fx.close();
    throw err;
  }
}

/**
 * Otherwise the scripted line broker of the end-to-end suite, in a process
 * of its own as the daemon runs: a real Unix-socket server speaking the
 * protocol and answering at once, so the figure is the cost of the MCP side
 * (tool, runner, client, socket and the hops between the processes).
 */
async function startLineBroker(dir: string): Promise<BenchBroker> {
  const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, "bench", "line-broker.ts"), dir], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const socketPath = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (out.includes("\n")) resolve(out.trim());
    });
    child.once("exit", (code) => reject(new Error(`line broker exited ${code}`)));
  });
  return {
    kind: "the scripted line broker",
    socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.stdin.end();
      }),
  };
}

async function timeOnce(once: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await once();
  return performance.now() - start;
}

/** The smallest MCP server the SDK can make, with one no-op tool, in its own process. */
async function startMinimalServer(): Promise<{ call(): Promise<unknown>; close(): Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(ROOT, "bench", "minimal-server.mjs")],
    env: { PATH: process.env.PATH ?? "" },
    stderr: "ignore",
  });
  const client = new Client({ name: "bench-minimal", version: "1" });
  await client.connect(transport);
  return { call: () => client.callTool({ name: "noop", arguments: {} }), close: () => client.close() };
}

/**
 * `infra_status` through the built server and the broker's socket, against
 * the same server's cheapest tool (`session_list`: a Tier-0 call that is
 * validated, admitted, audited and answered like any other but does no work)
 * measured in the same run, interleaved so background load hits both alike.
 */
export const infraBench: Bench = {
  name: "infra",
  async run(): Promise<BenchFigure[]> {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-bench-infra-"));
    const broker =
      INFRA_SKIP_REASON === null && DAEMON_BUILT ? await startDaemon() : await startLineBroker(dir);
    const server = await startBenchServer({ RELAY_SHELL_INFRA_SOCKET: broker.socketPath });
    const minimal = await startMinimalServer();
    try {
      const statusOnce = async () => {
        const text = await server.call("infra_status", {});
        if (!text.startsWith("ok: OK\n")) throw new Error(`infra_status failed: ${text}`);
      };
      const floorOnce = () => server.call("session_list", {});
      const socketOnce = async () => {
        const answer = await requestInfra(
          { op: "status" },
          { socketPath: broker.socketPath, timeoutMs: 5000 },
        );
        if (answer.kind !== "answered") throw new Error(`broker unreachable: ${answer.reason}`);
      };
      await timeEach(WARMUP, statusOnce);
      await timeEach(WARMUP, floorOnce);
      await timeEach(WARMUP, socketOnce);
      await timeEach(WARMUP, minimal.call);
      // Alternated call by call, so a burst of load on this shared machine hits both sides alike.
      const status: number[] = [];
      const floor: number[] = [];
      const socket: number[] = [];
      const bare: number[] = [];
      const paired: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const s = await timeOnce(statusOnce);
        const f = await timeOnce(floorOnce);
        status.push(s);
        floor.push(f);
        paired.push(s - f);
        socket.push(await timeOnce(socketOnce));
        bare.push(await timeOnce(minimal.call));
      }
      const statusMedian = median(status);
      const floorMedian = median(floor);
      const over = statusMedian - floorMedian;
      return [
        {
          name: "minimal SDK server, no-op tool, own process (median)",
          value: median(bare),
          unit: "ms",
          target: "reported (what any MCP round trip costs)",
          met: null,
        },
        {
          name: "MCP no-op floor: session_list through the relay (median)",
          value: floorMedian,
          unit: "ms",
          target: "baseline",
          met: null,
        },
        {
          name: `one request on the socket of ${broker.kind}, no MCP (median)`,
          value: median(socket),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: `infra_status through the relay and ${broker.kind} (median)`,
          value: statusMedian,
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "infra_status p95",
          value: percentile(status, 95),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "infra_status minus the floor, call by call (median of the differences)",
          value: median(paired),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "infra_status over the floor (difference of the medians)",
          value: over,
          unit: "ms",
          target: `<= ${OVER_FLOOR_MS}`,
          met: over <= OVER_FLOOR_MS,
        },
      ];
    } finally {
      await minimal.close();
      await server.close();
      await broker.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
