import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { redactString } from "../src/audit/index.js";
import { createClassifier } from "../src/policy/index.js";
import { GOLDEN_ROWS } from "../test/policy/golden/index.js";
import { corpusFigures } from "./corpus.bench.js";
import {
  bareSpawn,
  ROOT,
  rssBytes,
  SERVER_ENTRY,
  startBenchServer,
  throughput,
  timeEach,
} from "./harness.js";
import { type Bench, type BenchFigure, median } from "./types.js";

const ratio = (a: number, b: number) => a / b;

async function execFigures(): Promise<BenchFigure[]> {
  const server = await startBenchServer();
  try {
    // Warm both paths before measuring.
    await timeEach(30, bareSpawn);
    await timeEach(30, () => server.call("shell_exec", { command: "true" }));
    const bare: number[] = [];
    const relay: number[] = [];
    // Interleave rounds so background load hits both sides alike.
    for (let round = 0; round < 6; round++) {
      bare.push(...(await timeEach(50, bareSpawn)));
      relay.push(...(await timeEach(50, () => server.call("shell_exec", { command: "true" }))));
    }
    const bareMedian = median(bare);
    const relayMedian = median(relay);
    const bareRate = await throughput(400, 8, bareSpawn);
    const relayRate = await throughput(400, 8, () => server.call("shell_exec", { command: "true" }));
    return [
      { name: "bare spawn sh -c true, median", value: bareMedian, unit: "ms", target: "baseline", met: null },
      {
        name: "shell_exec true over stdio, median",
        value: relayMedian,
        unit: "ms",
        target: "reported",
        met: null,
      },
      {
        name: "shell_exec / bare spawn (median)",
        value: ratio(relayMedian, bareMedian),
        unit: "x",
        target: "<= 1.2",
        met: ratio(relayMedian, bareMedian) <= 1.2,
      },
      {
        name: "calls/s with 8 in flight, shell_exec / bare spawn",
        value: ratio(relayRate, bareRate),
        unit: "x",
        target: ">= 0.9",
        met: ratio(relayRate, bareRate) >= 0.9,
      },
    ];
  } finally {
    await server.close();
  }
}

async function classifierFigures(): Promise<BenchFigure[]> {
  const classifier = await createClassifier();
  for (const row of GOLDEN_ROWS) classifier.classify(row.text, { windows: row.windows ?? false });
  const perRow: number[] = [];
  for (const row of GOLDEN_ROWS) {
    const options = { windows: row.windows ?? false };
    const start = performance.now();
    for (let i = 0; i < 20; i++) classifier.classify(row.text, options);
    perRow.push(((performance.now() - start) / 20) * 1000);
  }
  const big = Array.from({ length: 40_000 }, (_, i) => `echo item${i} --token=abc${i} | grep x; `).join("");
  const mib = big.slice(0, 1024 * 1024);
  const times = await timeEach(5, async () => {
    classifier.classify(mib);
    redactString(mib);
  });
  const medianRow = median(perRow);
  const bigMedian = median(times);
  return [
    {
      name: `classifier median per golden row (${GOLDEN_ROWS.length} rows)`,
      value: medianRow,
      unit: "µs",
      target: "<= 50",
      met: medianRow <= 50,
    },
    {
      name: "1 MiB command classified and redacted",
      value: bigMedian,
      unit: "ms",
      target: "<= 100",
      met: bigMedian <= 100,
    },
  ];
}

async function timeToInitialized(
  args: string[],
  env: Record<string, string>,
): Promise<{ ms: number; pid: number }> {
  const start = performance.now();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    env,
    stderr: "ignore",
    cwd: ROOT,
  });
  const client = new Client({ name: "bench-startup", version: "1" });
  await client.connect(transport);
  const ms = performance.now() - start;
  const pid = transport.pid ?? -1;
  await client.close();
  return { ms, pid };
}

async function startupFigures(): Promise<BenchFigure[]> {
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? "/tmp",
    RELAY_SHELL_AUDIT_PATH: "/tmp/relay-shell-bench-startup.jsonl",
  };
  const minimal = join(ROOT, "bench", "minimal-server.mjs");
  const ours: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < 8; i++) {
    base.push((await timeToInitialized([minimal], env)).ms);
    ours.push((await timeToInitialized([SERVER_ENTRY], env)).ms);
  }
  const server = await startBenchServer();
  await server.call("server_info", {});
  await new Promise((r) => setTimeout(r, 500));
  const rss = rssBytes(server.pid) / (1024 * 1024);
  await server.close();
  const r = median(ours) / median(base);
  return [
    {
      name: "start-up to initialized, minimal SDK server",
      value: median(base),
      unit: "ms",
      target: "baseline",
      met: null,
    },
    {
      name: "start-up to initialized, relay-shell",
      value: median(ours),
      unit: "ms",
      target: "reported",
      met: null,
    },
    { name: "start-up ratio relay-shell / minimal", value: r, unit: "x", target: "<= 1.5", met: r <= 1.5 },
    { name: "idle RSS after first call", value: rss, unit: "MiB", target: "<= 100", met: rss <= 100 },
  ];
}

export const coreBench: Bench = {
  name: "core: local exec, classifier, start-up",
  async run() {
    return [
      ...(await classifierFigures()),
      ...(await corpusFigures()),
      ...(await startupFigures()),
      ...(await execFigures()),
    ];
  },
};
