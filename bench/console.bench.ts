import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import {
  CONSOLE_ACCOUNT_SKIP_REASON,
  createConsoleWorld,
  freePort,
  startHttpRelay,
} from "../test/helpers/console.js";
import { REPO_ROOT } from "../test/helpers/server.js";
import { childOf, followEvents, loginOverHttp, rssOf, softwarePasskey } from "./console-sse.js";
import { type Bench, type BenchFigure, median, percentile } from "./types.js";

const WRITER = join(REPO_ROOT, "test", "audit", "audit-writer.mjs");
const FOLLOWER = join(REPO_ROOT, "test", "audit", "audit-follower.mjs");

const RATE = 500;
const SECONDS = 10;
const RECORDS = RATE * SECONDS;
/** Every record on screen within a second of being written. */
const DELAY_BUDGET_MS = 1000;
/** The console's memory budget over idle while one console follows. */
const RSS_BUDGET_MIB = 20;
/** How long the follower quietly watches the file before the writer starts: its idle RSS. */
const IDLE_MS = 1000;
/** After the writer is done, how long the last records may take before they count as lost. */
const DRAIN_MS = 5000;

interface FollowerRun {
  delays: number[];
  /** Line numbers delivered, so a line delivered twice cannot hide one lost. */
  lines: Set<number>;
  notVerified: number;
  rss: number[];
  done: boolean;
}

function startFollower(path: string): { child: ChildProcess; run: FollowerRun; ready: Promise<void> } {
  const child = spawn(process.execPath, [FOLLOWER, path, String(RECORDS)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const run: FollowerRun = { delays: [], lines: new Set(), notVerified: 0, rss: [], done: false };
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    const [kind, first, status, delay] = line.split(" ");
    if (kind === "line") {
      run.delays.push(Number(delay));
      run.lines.add(Number(first));
      if (status !== "verified") run.notVerified += 1;
    } else if (kind === "rss") run.rss.push(Number(first));
    else if (kind === "ready") onReady();
    else if (kind === "done") run.done = true;
  });
  return { child, run, ready };
}

function runWriter(path: string): Promise<{ written: number; failed: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, path, "bench", String(RECORDS), String(RATE), "true"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`the writer exited with ${code}`));
      else resolve({ ...JSON.parse(out), ms: performance.now() - start });
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The console itself following: the built relay serves the console, a
 * client logged in with a software passkey reads /console/audit/events,
 * and another process (as the relay's account) appends 500 chained records
 * a second. Each record's delay is taken from its `ts` to its arrival over
 * SSE; the relay process's RSS is sampled before and during.
 */
async function consoleOverSse(): Promise<BenchFigure[]> {
  if (CONSOLE_ACCOUNT_SKIP_REASON) {
    return [
      {
        name: `console over SSE: skipped (${CONSOLE_ACCOUNT_SKIP_REASON})`,
        value: Number.NaN,
        unit: "",
        target: "run as root",
        met: null,
      },
    ];
  }
  const world = createConsoleWorld();
  const key = softwarePasskey(world);
  const port = await freePort();
  const relay = await startHttpRelay(world, port, { RELAY_SHELL_AUDIT_CHAIN: "true" });
  const delays: number[] = [];
  const lines = new Set<number>();
  let notVerified = 0;
  let live = false;
  const rss: number[] = [];
  let sampler: NodeJS.Timeout | null = null;
  let stream: { close(): void } | null = null;
  try {
    const pid = childOf(relay.child.pid as number);
    const cookie = await loginOverHttp(port, key);
    stream = followEvents(
      port,
      cookie,
      (data) => {
        const ts = typeof data.record?.ts === "string" ? Date.parse(data.record.ts) : Number.NaN;
        delays.push(Date.now() - ts);
        lines.add(data.line);
        if (data.chain.status !== "verified") notVerified += 1;
      },
      () => {
        live = true;
      },
    );
    while (!live) await sleep(20);
    await sleep(IDLE_MS);
    const idle = rssOf(pid);
    sampler = setInterval(() => rss.push(rssOf(pid)), 100);
    const start = performance.now();
    // Asynchronously: this process must keep reading the stream while the writer runs.
    const writer = spawn(
      "/usr/sbin/runuser",
      [
        "-u",
        world.user.name,
        "--",
        process.execPath,
        WRITER,
        world.audit,
        "bench",
        String(RECORDS),
        String(RATE),
        "true",
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    writer.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    await new Promise((resolve) => writer.once("exit", resolve));
    const ms = performance.now() - start;
    const wrote = JSON.parse(out || "{}") as { written?: number; failed?: number };
    const end = Date.now() + DRAIN_MS;
    while (lines.size < RECORDS && Date.now() < end) await sleep(20);
    const growthMiB = (Math.max(idle, ...rss) - idle) / (1024 * 1024);
    return [
      {
        name: `console over SSE: writer, ${wrote.written ?? 0} records in`,
        value: ms / 1000,
        unit: "s",
        target: `${RECORDS} at ${RATE}/s, none failed`,
        met: wrote.written === RECORDS && wrote.failed === 0,
      },
      {
        name: "console over SSE: delay p50",
        value: median(delays),
        unit: "ms",
        target: "reported",
        met: null,
      },
      {
        name: "console over SSE: delay max",
        value: delays.length === 0 ? Number.NaN : Math.max(...delays),
        unit: "ms",
        target: `<= ${DELAY_BUDGET_MS} ms`,
        met: delays.length > 0 && Math.max(...delays) <= DELAY_BUDGET_MS,
      },
      {
        name: "console over SSE: records lost",
        value: RECORDS - lines.size,
        unit: "records",
        target: "0",
        met: lines.size === RECORDS,
      },
      {
        name: "console over SSE: records not verified",
        value: notVerified,
        unit: "records",
        target: "0",
        met: notVerified === 0,
      },
      {
        name: "console over SSE: relay RSS idle",
        value: idle / (1024 * 1024),
        unit: "MiB",
        target: "reported",
        met: null,
      },
      {
        name: "console over SSE: relay RSS growth over idle",
        value: growthMiB,
        unit: "MiB",
        target: `<= ${RSS_BUDGET_MIB} MiB`,
        met: growthMiB <= RSS_BUDGET_MIB,
      },
    ];
  } finally {
    if (sampler) clearInterval(sampler);
    stream?.close();
    await relay.stop();
    world.cleanup();
  }
}

/**
 * The live audit view's backend under load: one process appends 500 chained
 * records a second for ten seconds through the real audit writer while
 * another follows the file through the built follower and timestamps each
 * delivery against the record's own `ts`. Both are separate processes, as a
 * relay and the console following its log would be.
 */
export const consoleBench: Bench = {
  name: "console",
  async run(): Promise<BenchFigure[]> {
    const dir = mkdtempSync(join(tmpdir(), "relay-bench-console-"));
    const path = join(dir, "audit.jsonl");
    const follower = startFollower(path);
    try {
      await follower.ready;
      await sleep(IDLE_MS);
      const idle = Math.max(...follower.run.rss);
      const wrote = await runWriter(path);
      const end = Date.now() + DRAIN_MS;
      while (!follower.run.done && Date.now() < end) await sleep(20);
      const { delays, lines, rss, notVerified } = follower.run;
      const growthMiB = (Math.max(...rss) - idle) / (1024 * 1024);
      return [
        {
          name: `writer: ${wrote.written} records in`,
          value: wrote.ms / 1000,
          unit: "s",
          target: `${RECORDS} at ${RATE}/s, none failed`,
          met: wrote.written === RECORDS && wrote.failed === 0,
        },
        { name: "delivery delay p50", value: median(delays), unit: "ms", target: "reported", met: null },
        {
          name: "delivery delay p99",
          value: percentile(delays, 99),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "delivery delay max",
          value: delays.length === 0 ? Number.NaN : Math.max(...delays),
          unit: "ms",
          target: `<= ${DELAY_BUDGET_MS} ms`,
          met: delays.length > 0 && Math.max(...delays) <= DELAY_BUDGET_MS,
        },
        {
          name: "records lost",
          value: RECORDS - lines.size,
          unit: "records",
          target: "0",
          met: lines.size === RECORDS,
        },
        {
          name: "records delivered twice",
          value: delays.length - lines.size,
          unit: "records",
          target: "0",
          met: delays.length === lines.size,
        },
        {
          name: "records not verified",
          value: notVerified,
          unit: "records",
          target: "0",
          met: notVerified === 0,
        },
        {
          name: "follower RSS growth over idle",
          value: growthMiB,
          unit: "MiB",
          target: `<= ${RSS_BUDGET_MIB} MiB (the console's whole budget)`,
          met: growthMiB <= RSS_BUDGET_MIB,
        },
        ...(await consoleOverSse()),
      ];
    } finally {
      follower.child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
