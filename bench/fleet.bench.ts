import { spawn } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { FLEET_SKIP_REASON, type Fleet, startFleet } from "../test/fixtures/fleet.js";
import { FLEET_COMMAND, type FleetRun, measureRun } from "./fleet-measure.js";
import { type FleetPeer, type FleetRunOptions, fleetPeers, peerRuns, runLimitMs } from "./fleet-peers.js";
import { type BenchServer, ROOT, startBenchServer } from "./harness.js";
import type { Bench, BenchFigure } from "./types.js";

/**
 * `ssh_fanout` over a fleet of distinct loopback targets (test/fixtures/fleet.ts) beside the
 * fan-out tools operators use (parallel-ssh, ClusterShell, ansible), all at one parallelism:
 * wall time cold and warm, peak RSS of each tool's process tree, machine CPU per host, and a
 * count of the hosts that answered each run (docs/performance.md, "The fleet bench").
 */

export interface FleetBenchOptions extends FleetRunOptions {
  /** Fleet sizes, each measured on a fleet of its own. */
  sizes: number[];
}

const RELAY = "relay-shell";
const FLOOR = "ssh2 floor";
const COLD_BOUND = 1;
const WARM_BOUND = 0.25;
const RSS_BOUND_MIB = 300;
/** Bytes of the fan-out's output budget per host: each host's one line fits its share. */
const BUDGET_PER_HOST = 512;
const MIN_BUDGET = 65_536;
const MIN_HARD = 1_048_576;
/** Time for the connections of one tool to close on the servers before the next tool starts. */
const SETTLE_MS = 500;
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

function positiveInts(name: string, text: string): number[] {
  const values = text.split(",").map((part) => Number(part.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new Error(`${name} must be positive integers separated by commas, not ${JSON.stringify(text)}`);
  }
  return values;
}

/**
 * The sizes and the parallelism, from RELAY_SHELL_BENCH_FLEET_N (sizes, comma-separated,
 * default 200,1000), RELAY_SHELL_BENCH_FLEET_CONCURRENCY (default 64) and
 * RELAY_SHELL_BENCH_FLEET_TIMEOUT (seconds per host, default 120).
 */
export function fleetOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): FleetBenchOptions {
  const one = (name: string, fallback: string) => positiveInts(name, env[name] ?? fallback)[0] ?? 1;
  return {
    sizes: positiveInts("RELAY_SHELL_BENCH_FLEET_N", env.RELAY_SHELL_BENCH_FLEET_N ?? "200,1000"),
    concurrency: one("RELAY_SHELL_BENCH_FLEET_CONCURRENCY", "64"),
    timeoutSeconds: one("RELAY_SHELL_BENCH_FLEET_TIMEOUT", "120"),
  };
}

/** The concurrency the relay says it used, when its answer is the fan-out's JSON object. */
function concurrencyOf(text: string): number | null {
  try {
    const used = (JSON.parse(text) as { concurrency?: unknown }).concurrency;
    return typeof used === "number" ? used : null;
  } catch {
    return null;
  }
}

/** One `ssh_fanout` over the whole inventory, which is the fleet (empty `hosts`); its text. */
async function callFanout(server: BenchServer, o: FleetRunOptions, limitMs: number): Promise<string> {
  const result = await server.client.callTool(
    {
      name: "ssh_fanout",
      arguments: { command: FLEET_COMMAND, hosts: "", concurrency: o.concurrency, timeout: o.timeoutSeconds },
    },
    undefined,
    { timeout: limitMs },
  );
  return (result.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
}

/** The built relay over stdio: one fan-out on a fresh server (cold), then one more on it (warm). */
async function relayRuns(fleet: Fleet, o: FleetRunOptions): Promise<FleetRun[]> {
  const n = fleet.hosts.length;
  const budget = Math.max(MIN_BUDGET, BUDGET_PER_HOST * n);
  const server = await startBenchServer({
    ...fleet.relaySettings(),
    // A warm pool holds every host: none is closed to make room for another.
    RELAY_SHELL_MAX_CONNS: String(Math.min(4096, Math.max(256, n))),
    RELAY_SHELL_MAX_OUTPUT: String(budget),
    RELAY_SHELL_MAX_OUTPUT_HARD: String(Math.max(MIN_HARD, budget)),
  });
  const limitMs = runLimitMs(n, o);
  let noted = false;
  const fanout = async () => {
    let text: string;
    try {
      text = await callFanout(server, o, limitMs);
    } catch (err) {
      return { output: "", failure: `the call failed: ${err instanceof Error ? err.message : String(err)}` };
    }
    if (!text.startsWith("{")) {
      return { output: text, failure: `the relay refused the call: ${text.split("\n")[0]?.slice(0, 300)}` };
    }
    const used = concurrencyOf(text);
    if (used !== null && used !== o.concurrency && !noted) {
      noted = true;
      console.log(`  ${RELAY} ran at concurrency ${used}, not the ${o.concurrency} asked for`);
    }
    return { output: text, failure: null };
  };
  const watch = { roots: () => [server.pid] };
  try {
    // A client's first turn: the tools listed, a moment passed, so the server's own start-up
    // work after `initialized` is not counted in the first fan-out.
    await server.client.listTools();
    await settle();
    return [
      await measureRun(RELAY, "cold", fleet.hosts, watch, fanout),
      await measureRun(RELAY, "warm", fleet.hosts, watch, fanout),
    ];
  } finally {
    await server.close();
    rmSync(server.dir, { recursive: true, force: true });
  }
}

/**
 * The floor (bench/floors/fleet-floor.mjs): one process with nothing but ssh2, the same command on
 * every host at the same concurrency, cold then warm. What no fan-out from one process can beat.
 */
async function floorRuns(fleet: Fleet, o: FleetRunOptions): Promise<FleetRun[]> {
  const targets = join(fleet.dir, "floor-hosts.json");
  writeFileSync(targets, JSON.stringify(fleet.hosts.map(({ address, port }) => ({ address, port }))));
  const script = join(ROOT, "bench", "floors", "fleet-floor.mjs");
  const args = [script, targets, fleet.user, fleet.clientKey, String(o.concurrency), FLEET_COMMAND];
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const pending: string[] = [];
  let waiting: ((text: string) => void) | null = null;
  lines.on("line", (line) => {
    if (line !== "done") pending.push(line);
    else {
      const text = pending.splice(0).join("\n");
      waiting?.(text);
      waiting = null;
    }
  });
  const round = () =>
    new Promise<{ output: string; failure: string | null }>((resolve) => {
      waiting = (output) => resolve({ output, failure: null });
      child.stdin.write("run\n");
    });
  const watch = { roots: () => (child.pid === undefined ? [] : [child.pid]) };
  try {
    return [
      await measureRun(FLOOR, "cold", fleet.hosts, watch, round),
      await measureRun(FLOOR, "warm", fleet.hosts, watch, round),
    ];
  } finally {
    child.stdin.end();
    child.kill();
  }
}

/** Why a figure measured over `runs` says nothing of the whole fleet, or null when every run reached it. */
function failureOf(runs: readonly FleetRun[]): string | null {
  const failed = runs.find((r) => r.failure !== null);
  return failed ? `FAILED: ${failed.phase}: ${failed.failure}` : null;
}

function runFigures(n: number, run: FleetRun): BenchFigure[] {
  const label = `${n} hosts, ${run.tool} ${run.phase}`;
  const failed = failureOf([run]);
  return [
    {
      name: `${label}: wall time`,
      value: run.wallMs,
      unit: "ms",
      target: failed
        ? `every host answers (${failed})`
        : `reported (${run.answered}/${run.hosts} hosts answered)`,
      met: failed ? false : null,
    },
    {
      name: `${label}: machine CPU per host`,
      value: run.cpuMsPerHost,
      unit: "ms",
      target: failed ? "every host answers (FAILED: see the wall time)" : "reported",
      met: failed ? false : null,
    },
  ];
}

function rssFigure(n: number, tool: string, runs: readonly FleetRun[]): BenchFigure {
  const own = runs.filter((r) => r.tool === tool);
  const peak = Math.max(...own.map((r) => r.peakRssMiB));
  const failed = failureOf(own);
  const relay = tool === RELAY;
  const target = relay ? `<= ${RSS_BOUND_MIB} (the bound is set for 1,000 hosts)` : "reported";
  return {
    name: `${n} hosts, ${tool}: peak RSS of the process tree`,
    value: peak,
    unit: "MiB",
    target: failed ? `${target} (${failed})` : target,
    met: failed ? false : relay ? peak <= RSS_BOUND_MIB : null,
  };
}

/** The relay's run of `phase` over the fastest peer's run of the same phase that reached every host. */
function ratioFigure(
  n: number,
  phase: "cold" | "warm",
  bound: number,
  runs: readonly FleetRun[],
): BenchFigure {
  const relay = runs.find((r) => r.tool === RELAY && r.phase === phase);
  const peers = runs.filter((r) => r.tool !== RELAY && r.tool !== FLOOR && r.phase === phase);
  const fastest = peers
    .filter((r) => r.failure === null)
    .sort((a, b) => a.wallMs - b.wallMs)
    .at(0);
  const name = `${n} hosts, ${RELAY} ${phase} / fastest peer ${phase}${fastest ? ` (${fastest.tool})` : ""}`;
  if (!relay || relay.failure !== null) {
    return {
      name,
      value: Number.NaN,
      unit: "x",
      target: `<= ${bound} (FAILED: ${relay?.failure})`,
      met: false,
    };
  }
  if (!fastest) {
    const why = peers.length === 0 ? "no peer installed" : "no peer reached every host";
    return { name, value: Number.NaN, unit: "x", target: `<= ${bound} (${why})`, met: null };
  }
  const ratio = relay.wallMs / fastest.wallMs;
  return { name, value: ratio, unit: "x", target: `<= ${bound}`, met: ratio <= bound };
}

/** The relay over the floor, cold and warm: what the relay's own work adds to a fan-out. */
function floorFigures(n: number, runs: readonly FleetRun[]): BenchFigure[] {
  return (["cold", "warm"] as const).map((phase) => {
    const relay = runs.find((r) => r.tool === RELAY && r.phase === phase);
    const floor = runs.find((r) => r.tool === FLOOR && r.phase === phase);
    const name = `${n} hosts, ${RELAY} ${phase} / ${FLOOR} ${phase}`;
    const failed = failureOf([relay, floor].filter((r) => r !== undefined));
    if (!relay || !floor || failed) {
      return {
        name,
        value: Number.NaN,
        unit: "x",
        target: `reported (${failed ?? "not measured"})`,
        met: null,
      };
    }
    return { name, value: relay.wallMs / floor.wallMs, unit: "x", target: "reported", met: null };
  });
}

/**
 * Every tool over one running fleet: the relay, then each installed peer. A
 * peer that is not installed is printed as such and left out.
 */
export async function benchFleet(
  fleet: Fleet,
  o: FleetRunOptions,
  peers: readonly FleetPeer[] = fleetPeers(),
): Promise<BenchFigure[]> {
  const n = fleet.hosts.length;
  console.log(`  ${n} hosts at concurrency ${o.concurrency}, \`${FLEET_COMMAND}\` on each`);
  const runs: FleetRun[] = [];
  // Said as soon as a tool is done: at 1,000 hosts the next one may take many minutes.
  const add = (done: readonly FleetRun[]) => {
    for (const run of done) {
      if (run.failure !== null) console.log(`  ${run.tool} ${run.phase}: FAILED: ${run.failure}`);
    }
    runs.push(...done);
  };
  add(await relayRuns(fleet, o));
  await settle();
  add(await floorRuns(fleet, o));
  for (const peer of peers) {
    if (peer.missing !== null) {
      console.log(`  ${peer.name}: ${peer.missing}`);
      continue;
    }
    await settle();
    add(await peerRuns(peer, fleet, o));
  }
  const tools = [...new Set(runs.map((r) => r.tool))];
  return [
    ...runs.flatMap((run) => runFigures(n, run)),
    ...tools.map((tool) => rssFigure(n, tool, runs)),
    ratioFigure(n, "cold", COLD_BOUND, runs),
    ratioFigure(n, "warm", WARM_BOUND, runs),
    ...floorFigures(n, runs),
  ];
}

/** The fleet bench at each size, on a fleet started for it and stopped after it. */
export function createFleetBench(options?: FleetBenchOptions): Bench {
  return {
    name: "fleet",
    async run(): Promise<BenchFigure[]> {
      if (FLEET_SKIP_REASON !== null) throw new Error(`cannot run: ${FLEET_SKIP_REASON}`);
      const o = options ?? fleetOptionsFromEnv();
      const figures: BenchFigure[] = [];
      for (const size of o.sizes) {
        const fleet = await startFleet(size);
        try {
          figures.push(...(await benchFleet(fleet, o)));
        } finally {
          fleet.stop();
        }
      }
      return figures;
    },
  };
}

export const fleetBench = createFleetBench();
