import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { createSshFixture, SSHD_MISSING, SSHD_SKIP_REASON, type SshFixture } from "../test/fixtures/sshd.js";
import { inFlightSample } from "./floors/sample.mjs";
import {
  type BenchServer,
  buildNativeFloor,
  connectMcp,
  type FloorSample,
  type McpCommand,
  pssBytes,
  ROOT,
  runFloor,
  SERVER_ENTRY,
  timeEach,
  treeBytes,
  treeRssBytes,
} from "./harness.js";
import {
  codexInstalled,
  NOT_INSTALLED,
  type Peer,
  type SshTarget,
  sshMcpInstalled,
  startCodex,
  startSshMcp,
} from "./peer-servers.js";
import { type Bench, type BenchFigure, median } from "./types.js";

/**
 * relay-shell beside the fastest peers and beside the floors (what the same
 * work costs with nothing around it), in one run: the median of ROUNDS
 * interleaved rounds, every server driven by the same SDK client. Then, from
 * the stage trace, where one call's time goes inside the server.
 */

/** The suite's small run (test/e2e/perf-bench.test.ts) sets this: every figure measured, on few calls. */
const SMALL = process.env.RELAY_SHELL_BENCH_PERF_SMALL === "1";
const ROUNDS = SMALL ? 1 : 3;
const SEQUENTIAL = SMALL ? 10 : 100;
// Small still spans several of /proc/stat's 10 ms ticks, so the CPU figures have something to count.
const RATE_TOTAL = SMALL ? 64 : 200;
const IN_FLIGHT = 8;
const WARMUP = SMALL ? 2 : 20;
/** ssh-mcp as shipped waits on delayed ACKs (tens of ms a call): fewer calls keep the run short. */
const SLOW_SEQUENTIAL = SMALL ? 2 : 15;
const SETTLE_MS = 500;
/** A client's first turn: it lists the tools, then the model takes at least this long to answer. */
const FIRST_TURN_MS = 1000;
const MIB = 1024 * 1024;
const MINIMAL_SERVER = join(ROOT, "bench", "minimal-server.mjs");
/**
 * Machine CPU per call with IN_FLIGHT at once, relay over floor: a throughput ratio on two CPUs only
 * measures the core count once both saturate the machine, what a call costs the machine does not.
 */
const CPU_SHARE = 1.5;

interface Sample {
  p50: number;
  rate: number;
  /** Machine CPU per call with IN_FLIGHT at once (every process, every CPU), and the busy share then. */
  cpuMs: number;
  busy: number;
}

/** Per subject, one sample per round. */
class Samples {
  private readonly by = new Map<string, Sample[]>();
  add(name: string, sample: Sample): void {
    const list = this.by.get(name) ?? [];
    list.push(sample);
    this.by.set(name, list);
  }
  has(name: string): boolean {
    return this.by.has(name);
  }
  p50(name: string): number {
    return median((this.by.get(name) ?? []).map((s) => s.p50));
  }
  rate(name: string): number {
    return median((this.by.get(name) ?? []).map((s) => s.rate));
  }
  cpuMs(name: string): number {
    return median((this.by.get(name) ?? []).map((s) => s.cpuMs));
  }
  busy(name: string): number {
    return median((this.by.get(name) ?? []).map((s) => s.busy));
  }
}

async function measure(once: () => Promise<unknown>, sequential: number, rate: boolean): Promise<Sample> {
  const p50 = median(await timeEach(sequential, once));
  if (!rate) return { p50, rate: Number.NaN, cpuMs: Number.NaN, busy: Number.NaN };
  return { p50, ...(await inFlightSample(once, RATE_TOTAL, IN_FLIGHT)) };
}

const fromFloor = (s: FloorSample): Sample => ({
  p50: median(s.times),
  rate: s.rate,
  cpuMs: s.cpuMs,
  busy: s.busy,
});

function relayCommand(dir: string, settings: Record<string, string>): McpCommand {
  return {
    command: process.execPath,
    args: [SERVER_ENTRY],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? dir,
      RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
      XDG_STATE_HOME: join(dir, "state"),
      ...settings,
    },
    cwd: dir,
  };
}

/** The MCP floor: the smallest SDK server, one tool that does nothing. */
function noopCommand(dir: string): McpCommand {
  return {
    command: process.execPath,
    args: [MINIMAL_SERVER],
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir },
    cwd: dir,
  };
}

const shellTrue = (relay: BenchServer) => async () => {
  const text = await relay.call("shell_exec", { command: "true" });
  if (text !== "[exit 0]\n") throw new Error(`shell_exec failed: ${text.slice(0, 300)}`);
};

const sshTrue = (relay: BenchServer) => async () => {
  const text = await relay.call("ssh_exec", { host: "bench", command: "true" });
  // The first call learns the host key and carries a first-contact notice after the result.
  if (!text.startsWith("[exit 0]\n")) throw new Error(`ssh_exec failed: ${text.slice(0, 300)}`);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface StartupSample {
  startupMs: number;
  firstCallMs: number;
  rssMiB: number;
  pssMiB: number;
}

/**
 * A fresh server: time to initialized, its first call, then the RSS of its
 * tree once idle. With `firstTurn`, the client lists the tools and waits
 * FIRST_TURN_MS before that call, as a client does while its model reads them.
 */
async function startupOnce(
  start: () => Promise<{ server: BenchServer; startupMs: number; first: () => Promise<unknown> }>,
  firstTurn = false,
): Promise<StartupSample> {
  const { server, startupMs, first } = await start();
  try {
    if (firstTurn) {
      await server.client.listTools();
      await sleep(FIRST_TURN_MS);
    }
    const t = performance.now();
    await first();
    const firstCallMs = performance.now() - t;
    await sleep(SETTLE_MS);
    return {
      startupMs,
      firstCallMs,
      rssMiB: treeRssBytes(server.pid) / MIB,
      pssMiB: treeBytes(server.pid, pssBytes) / MIB,
    };
  } finally {
    await server.close();
  }
}

interface Ssh {
  fx: SshFixture;
  target: SshTarget;
  settings: Record<string, string>;
}

async function startSsh(): Promise<Ssh | undefined> {
  if (SSHD_MISSING) return undefined;
  const fx = createSshFixture();
  const sshd = await fx.start();
  const inventory = join(fx.dir, "perf-inventory.json");
  writeFileSync(
    inventory,
    JSON.stringify({ bench: { hostname: "127.0.0.1", port: sshd.port, user: fx.user } }),
  );
  return {
    fx,
    target: { port: sshd.port, user: fx.user, key: fx.clientKey },
    settings: {
      HOME: fx.home,
      USER: fx.user,
      RELAY_SHELL_INVENTORY: inventory,
      RELAY_SHELL_SSH_CONFIG: join(fx.dir, "none"),
      RELAY_SHELL_SSH_KNOWN_HOSTS_FILE: join(fx.dir, "perf_known_hosts"),
    },
  };
}

const fmt = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(2)} ms` : "n/a");
const fmtRate = (r: number) => (Number.isFinite(r) ? `${r.toFixed(0)} calls/s` : "n/a");
const fmtCpu = (s: Samples, name: string) => {
  const ms = s.cpuMs(name);
  return Number.isFinite(ms) ? `${ms.toFixed(2)} ms, ${(100 * s.busy(name)).toFixed(0)}% busy` : "n/a";
};

function row(figure: string, relay: string, peer: string, floor: string): string {
  return `  ${figure.padEnd(43)} ${relay.padEnd(16)} ${peer.padEnd(50)} ${floor}`;
}

export const perfBench: Bench = {
  name: "perf: beside the peers and the floors",
  async run(): Promise<BenchFigure[]> {
    const dir = mkdtempSync(join(tmpdir(), "relay-shell-perf-"));
    const ssh = await startSsh();
    if (!ssh) console.log(`  (ssh figures skipped: ${SSHD_SKIP_REASON})`);
    const haveCodex = codexInstalled();
    const haveSshMcp = sshMcpInstalled() && ssh !== undefined;
    const samples = new Samples();
    const startups = new Map<string, StartupSample[]>();
    const addStartup = (name: string, s: StartupSample) =>
      startups.set(name, [...(startups.get(name) ?? []), s]);

    const relay = (await connectMcp(relayCommand(dir, ssh?.settings ?? {}))).server;
    const noop = (await connectMcp(noopCommand(dir))).server;
    const codex: Peer | undefined = haveCodex
      ? await startCodex(mkdtempSync(join(dir, "codex-")))
      : undefined;
    const sshMcpFast = haveSshMcp && ssh ? await startSshMcp(dir, ssh.target, true) : undefined;
    const sshMcpShipped = haveSshMcp && ssh ? await startSshMcp(dir, ssh.target, false) : undefined;
    const floorArgs = [SEQUENTIAL, RATE_TOTAL, IN_FLIGHT, WARMUP].map(String);
    const cFloor = buildNativeFloor("spawn-floor", dir);

    try {
      // Warm every warm subject once: connections dialled, launchers started, code compiled.
      await timeEach(WARMUP, shellTrue(relay));
      await timeEach(WARMUP, () => noop.call("noop", {}));
      if (codex) await timeEach(WARMUP, codex.runTrue);
      if (ssh) await timeEach(WARMUP, sshTrue(relay));
      if (sshMcpFast) await timeEach(WARMUP, sshMcpFast.runTrue);
      if (sshMcpShipped) await timeEach(3, sshMcpShipped.runTrue);

      for (let round = 0; round < ROUNDS; round++) {
        samples.add("relay shell", await measure(shellTrue(relay), SEQUENTIAL, true));
        if (codex) samples.add("codex", await measure(codex.runTrue, SEQUENTIAL, true));
        samples.add("spawn floor", fromFloor(await runFloor("spawn-floor.mjs", floorArgs)));
        samples.add("C spawn floor", fromFloor(await runFloor(cFloor, floorArgs)));
        samples.add("mcp noop", await measure(() => noop.call("noop", {}), SEQUENTIAL, true));
        if (ssh) {
          samples.add("relay ssh", await measure(sshTrue(relay), SEQUENTIAL, true));
          const { port, user, key } = ssh.target;
          samples.add(
            "ssh2 floor",
            fromFloor(await runFloor("ssh-floor.mjs", [String(port), user, key, ...floorArgs])),
          );
        }
        if (sshMcpFast) samples.add("ssh-mcp nodelay", await measure(sshMcpFast.runTrue, SEQUENTIAL, false));
        if (sshMcpShipped)
          samples.add("ssh-mcp", await measure(sshMcpShipped.runTrue, SLOW_SEQUENTIAL, false));

        // Start-up, first call and idle memory of fresh processes, in the same round.
        addStartup(
          "relay",
          await startupOnce(async () => {
            const { server, startupMs } = await connectMcp(
              relayCommand(mkdtempSync(join(dir, "start-")), {}),
            );
            return { server, startupMs, first: shellTrue(server) };
          }),
        );
        addStartup(
          "relay first turn",
          await startupOnce(async () => {
            const { server, startupMs } = await connectMcp(
              relayCommand(mkdtempSync(join(dir, "start-")), {}),
            );
            return { server, startupMs, first: shellTrue(server) };
          }, true),
        );
        // The no-op server both ways; its first turn is what a call costs after a second of idling
        // on this machine (a halted CPU waking, caches gone cold) whatever the server does.
        for (const [name, firstTurn] of [
          ["noop", false],
          ["noop first turn", true],
        ] as const) {
          addStartup(
            name,
            await startupOnce(async () => {
              const started = await connectMcp(noopCommand(dir));
              return { ...started, first: () => started.server.call("noop", {}) };
            }, firstTurn),
          );
        }
        if (haveCodex) {
          addStartup(
            "codex",
            await startupOnce(async () => {
              const peer = await startCodex(mkdtempSync(join(dir, "codex-")));
              return { server: peer.server, startupMs: peer.startupMs, first: peer.runTrue };
            }),
          );
        }
      }
    } finally {
      await relay.close();
      await noop.close();
      await codex?.server.close();
      await sshMcpFast?.server.close();
      await sshMcpShipped?.server.close();
    }

    const breakdown = await stageBreakdown(dir, ssh);
    ssh?.fx.close();
    return report(samples, startups, breakdown, { haveCodex, haveSshMcp, haveSsh: ssh !== undefined });
  },
};

interface TraceLine {
  label: string;
  totalUs: number;
  stages: Record<string, number>;
}

interface StageMedians {
  /** Median microseconds per stage, in the order the stages occur. */
  stages: Map<string, number>;
  /** Median of the time the runner held the call, microseconds. */
  serverUs: number;
}

interface Breakdown {
  label: string;
  sequential: StageMedians;
  /** Median of (client round trip - time in the runner), microseconds, sequential calls. */
  transportUs: number;
  roundTripMs: number;
  /** The same stages with IN_FLIGHT calls at once: what grows is what does not scale. */
  concurrent: StageMedians;
}

const BREAKDOWN_CALLS = SMALL ? 10 : 100;

function readTrace(path: string, label: string, last: number): TraceLine[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as TraceLine)
    .filter((l) => l.label === label)
    .slice(-last);
}

function stageMedians(lines: readonly TraceLine[]): StageMedians {
  const stages = new Map<string, number>();
  for (const line of lines) for (const stage of Object.keys(line.stages)) stages.set(stage, 0);
  for (const stage of stages.keys()) stages.set(stage, median(lines.map((l) => l.stages[stage] ?? 0)));
  return { stages, serverUs: median(lines.map((l) => l.totalUs)) };
}

/** A traced relay of its own: the trace costs a little, so the figures above never run with it. */
async function stageBreakdown(dir: string, ssh: Ssh | undefined): Promise<Breakdown[]> {
  const traceFile = join(mkdtempSync(join(dir, "trace-")), "stages.jsonl");
  const { server } = await connectMcp(
    relayCommand(mkdtempSync(join(dir, "traced-")), {
      ...(ssh?.settings ?? {}),
      RELAY_SHELL_TRACE_FILE: traceFile,
    }),
  );
  const out: Breakdown[] = [];
  try {
    const calls: Array<[string, () => Promise<void>]> = [["shell_exec", shellTrue(server)]];
    if (ssh) calls.push(["ssh_exec", sshTrue(server)]);
    for (const [label, once] of calls) {
      await timeEach(WARMUP, once);
      const roundTrips = await timeEach(BREAKDOWN_CALLS, once);
      const lines = readTrace(traceFile, label, BREAKDOWN_CALLS);
      await inFlightSample(once, RATE_TOTAL, IN_FLIGHT);
      out.push({
        label,
        sequential: stageMedians(lines),
        transportUs: median(lines.map((l, i) => (roundTrips[i] ?? Number.NaN) * 1000 - l.totalUs)),
        roundTripMs: median(roundTrips),
        concurrent: stageMedians(readTrace(traceFile, label, RATE_TOTAL)),
      });
    }
  } finally {
    await server.close();
  }
  return out;
}

function report(
  s: Samples,
  startups: Map<string, StartupSample[]>,
  breakdown: Breakdown[],
  have: { haveCodex: boolean; haveSshMcp: boolean; haveSsh: boolean },
): BenchFigure[] {
  const startup = (name: string, pick: (x: StartupSample) => number) =>
    median((startups.get(name) ?? []).map(pick));
  const noop = s.p50("mcp noop");
  const spawnFloor = s.p50("C spawn floor");
  const noopCpu = s.cpuMs("mcp noop");
  const sshFloor = s.p50("ssh2 floor");
  const relayShell = s.p50("relay shell");
  const relaySsh = s.p50("relay ssh");
  const codexP50 = have.haveCodex ? s.p50("codex") : Number.NaN;
  const codexRate = have.haveCodex ? s.rate("codex") : Number.NaN;
  const codexName = (text: string) =>
    have.haveCodex ? `codex-shell-tool-mcp 0.97 shell: ${text}` : `codex: ${NOT_INSTALLED}`;
  const sshMcpName = (text: string) => (have.haveSshMcp ? text : `ssh-mcp: ${NOT_INSTALLED}`);

  console.log(row(`figure (median of ${ROUNDS} rounds)`, "relay-shell", "peer", "floor"));
  console.log(
    row(
      "shell_exec true, sequential p50",
      fmt(relayShell),
      codexName(fmt(codexP50)),
      `C posix_spawn ${fmt(spawnFloor)} + SDK no-op ${fmt(noop)} = ${fmt(spawnFloor + noop)} (Node spawn ${fmt(s.p50("spawn floor"))})`,
    ),
  );
  console.log(
    row(
      `shell_exec true, ${IN_FLIGHT} in flight`,
      fmtRate(s.rate("relay shell")),
      codexName(fmtRate(codexRate)),
      `C posix_spawn, ${IN_FLIGHT} in flight: ${fmtRate(s.rate("C spawn floor"))}`,
    ),
  );
  console.log(
    row(
      "  machine CPU per call meanwhile",
      fmtCpu(s, "relay shell"),
      codexName(fmtCpu(s, "codex")),
      `C posix_spawn ${fmtCpu(s, "C spawn floor")} + SDK no-op ${fmtCpu(s, "mcp noop")}`,
    ),
  );
  if (have.haveSsh) {
    console.log(
      row(
        "ssh_exec true warm, sequential p50",
        fmt(relaySsh),
        sshMcpName(
          `ssh-mcp 2.11 NODELAY ${fmt(s.p50("ssh-mcp nodelay"))} (${fmt(s.p50("ssh-mcp"))} without)`,
        ),
        `ssh2 + NODELAY ${fmt(sshFloor)} + SDK no-op ${fmt(noop)} = ${fmt(sshFloor + noop)}`,
      ),
    );
    console.log(
      row(
        `ssh_exec true, ${IN_FLIGHT} in flight`,
        fmtRate(s.rate("relay ssh")),
        "—",
        `ssh2 + NODELAY, ${IN_FLIGHT} in flight: ${fmtRate(s.rate("ssh2 floor"))}`,
      ),
    );
    console.log(
      row(
        "  machine CPU per call meanwhile",
        fmtCpu(s, "relay ssh"),
        "—",
        `ssh2 ${fmtCpu(s, "ssh2 floor")} + SDK no-op ${fmtCpu(s, "mcp noop")}`,
      ),
    );
    console.log(
      `  (machine CPU counts every process on all ${availableParallelism()} CPUs: sshd, client, server)`,
    );
  }
  console.log(
    row(
      "start-up to initialized",
      fmt(startup("relay", (x) => x.startupMs)),
      codexName(fmt(startup("codex", (x) => x.startupMs))),
      `SDK no-op server: ${fmt(startup("noop", (x) => x.startupMs))}`,
    ),
  );
  console.log(
    row(
      "first shell_exec after start-up",
      fmt(startup("relay", (x) => x.firstCallMs)),
      codexName(fmt(startup("codex", (x) => x.firstCallMs))),
      "—",
    ),
  );
  console.log(
    row(
      `  after tools/list and ${FIRST_TURN_MS} ms`,
      fmt(startup("relay first turn", (x) => x.firstCallMs)),
      "—",
      `SDK no-op the same way: ${fmt(startup("noop first turn", (x) => x.firstCallMs))} (${(startup("noop first turn", (x) => x.firstCallMs) / noop).toFixed(1)} x its warm p50)`,
    ),
  );
  console.log(
    row(
      "RSS of the process tree, idle after a call",
      `${startup("relay", (x) => x.rssMiB).toFixed(1)} MiB`,
      codexName(`${startup("codex", (x) => x.rssMiB).toFixed(1)} MiB`),
      `SDK no-op server: ${startup("noop", (x) => x.rssMiB).toFixed(1)} MiB`,
    ),
  );
  console.log(
    row(
      "  the same as PSS (shared pages counted once)",
      `${startup("relay", (x) => x.pssMiB).toFixed(1)} MiB`,
      codexName(`${startup("codex", (x) => x.pssMiB).toFixed(1)} MiB`),
      `SDK no-op server: ${startup("noop", (x) => x.pssMiB).toFixed(1)} MiB`,
    ),
  );

  const us = (v: number | undefined) => (v === undefined ? "" : v.toFixed(1)).padStart(12);
  for (const b of breakdown) {
    console.log(
      `  where one ${b.label} true goes, µs (median of ${BREAKDOWN_CALLS} sequential traced calls; of ${RATE_TOTAL} with ${IN_FLIGHT} in flight):`,
    );
    console.log(
      `    ${"stage".padEnd(16)} ${"sequential".padStart(12)} ${`${IN_FLIGHT} in flight`.padStart(12)}`,
    );
    const stages = new Set([...b.sequential.stages.keys(), ...b.concurrent.stages.keys()]);
    for (const stage of stages) {
      console.log(
        `    ${stage.padEnd(16)} ${us(b.sequential.stages.get(stage))} ${us(b.concurrent.stages.get(stage))}`,
      );
    }
    console.log(
      `    ${"in the runner".padEnd(16)} ${us(b.sequential.serverUs)} ${us(b.concurrent.serverUs)}`,
    );
    console.log(
      `    ${"transport".padEnd(16)} ${us(b.transportUs)}  (round trip ${fmt(b.roundTripMs)} minus the runner)`,
    );
  }

  const ratio = (
    name: string,
    value: number,
    bound: number,
    cmp: "<=" | ">=" | "<",
    missing?: string,
  ): BenchFigure => {
    if (missing !== undefined)
      return { name, value: Number.NaN, unit: "x", target: `${cmp} ${bound} (${missing})`, met: null };
    const met = cmp === "<=" ? value <= bound : cmp === ">=" ? value >= bound : value < bound;
    return { name, value, unit: "x", target: `${cmp} ${bound}`, met };
  };
  const noCodex = have.haveCodex ? undefined : NOT_INSTALLED;
  const noSshMcp = have.haveSshMcp ? undefined : have.haveSsh ? NOT_INSTALLED : SSHD_SKIP_REASON;
  const noSsh = have.haveSsh ? undefined : SSHD_SKIP_REASON;
  const relayStartup = startup("relay", (x) => x.startupMs);
  const rss = startup("relay", (x) => x.rssMiB);
  return [
    ratio("shell_exec true p50 / codex shell p50", relayShell / codexP50, 1, "<=", noCodex),
    ratio(
      "shell_exec true p50 / (C posix_spawn floor + SDK no-op round trip)",
      relayShell / (spawnFloor + noop),
      1.35,
      "<=",
    ),
    ratio(
      `shell_exec machine CPU per call, ${IN_FLIGHT} in flight / (C floor's + no-op's)`,
      s.cpuMs("relay shell") / (s.cpuMs("C spawn floor") + noopCpu),
      CPU_SHARE,
      "<=",
    ),
    ratio(
      "ssh_exec true warm p50 / (ssh2 NODELAY floor + SDK no-op round trip)",
      relaySsh / (sshFloor + noop),
      1.2,
      "<=",
      noSsh,
    ),
    ratio(
      "ssh_exec true warm p50 / ssh-mcp NODELAY p50",
      relaySsh / s.p50("ssh-mcp nodelay"),
      1,
      "<",
      noSshMcp,
    ),
    ratio(
      `ssh_exec machine CPU per call, ${IN_FLIGHT} in flight / (ssh2 floor's + no-op's)`,
      s.cpuMs("relay ssh") / (s.cpuMs("ssh2 floor") + noopCpu),
      CPU_SHARE,
      "<=",
      noSsh,
    ),
    ratio(
      "start-up to initialized / SDK no-op server's",
      relayStartup / startup("noop", (x) => x.startupMs),
      1.1,
      "<=",
    ),
    ratio(
      `first shell_exec after start-up, tools/list and ${FIRST_TURN_MS} ms / warm p50`,
      startup("relay first turn", (x) => x.firstCallMs) / relayShell,
      3,
      "<=",
    ),
    {
      name: "RSS of the process tree idle after a call",
      value: rss,
      unit: "MiB",
      target: "<= 100",
      met: rss <= 100,
    },
  ];
}
