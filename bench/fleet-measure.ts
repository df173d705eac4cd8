import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { FleetHost } from "../test/fixtures/fleet.js";
import { machineCpu } from "./floors/sample.mjs";
import { processTable, rssBytes, treeOf } from "./harness.js";

/**
 * How one fan-out run of the fleet bench is measured, whichever tool makes
 * it: wall time, the peak resident memory of the tool's process tree, the CPU
 * the whole machine spent per host, and how many hosts answered.
 */

/**
 * What every tool runs on every host. It is as cheap as `uname -n` (one small
 * program), and each target answers with its own address and port
 * (`client_ip client_port server_ip server_port`), so the hosts that answered
 * can be counted in any tool's output, whatever its layout: a JSON object,
 * blocks of identical output, or one line per host.
 */
export const FLEET_COMMAND = "printenv SSH_CONNECTION";

const ANSWER = /\b\d{1,3}(?:\.\d{1,3}){3} \d{1,5} (\d{1,3}(?:\.\d{1,3}){3}) (\d{1,5})\b/g;
const SAMPLE_EVERY_MS = 100;
const MIB = 1024 * 1024;

export type Phase = "cold" | "opening masters" | "warm";

export interface FleetRun {
  tool: string;
  phase: Phase;
  wallMs: number;
  /** Peak RSS of the process tree, MiB, sampled every SAMPLE_EVERY_MS or less often (see measureRun). */
  peakRssMiB: number;
  /** Busy CPU of the whole machine (every process, every CPU) per host, the sampler's own time taken out. */
  cpuMsPerHost: number;
  /** Hosts whose own address and port came back in the output. */
  answered: number;
  hosts: number;
  /** Why not every host answered (a refusal, an exit status, a timeout), or null. */
  failure: string | null;
}

/** The distinct hosts of `hosts` whose answer to FLEET_COMMAND appears in `output`. */
export function countAnswers(output: string, hosts: readonly FleetHost[]): number {
  const wanted = new Set(hosts.map((h) => `${h.address}:${h.port}`));
  const seen = new Set<string>();
  for (const m of output.matchAll(ANSWER)) {
    const endpoint = `${m[1]}:${m[2]}`;
    if (wanted.has(endpoint)) seen.add(endpoint);
  }
  return seen.size;
}

/**
 * Which processes count as a tool's: the trees below `roots()`, and, when
 * `marker` is given, every `ssh` whose command line holds it with its tree.
 * An OpenSSH control master detaches from the client that started it (its
 * parent becomes init), but its process title names its socket, which lives
 * in the tool's own control directory.
 */
interface Watch {
  roots(): number[];
  marker?: string;
}

function watchedRss(watch: Watch): number {
  const table = processTable();
  const roots = watch.roots();
  const { marker } = watch;
  if (marker !== undefined) {
    for (const [pid, { comm }] of table) {
      if (comm !== "ssh") continue;
      try {
        if (readCmdline(pid).includes(marker)) roots.push(pid);
      } catch {
        // Gone meanwhile.
      }
    }
  }
  let total = 0;
  for (const pid of treeOf(table, roots)) {
    try {
      // A process that has exited and not been reaped yet has no VmRSS: it holds no memory.
      const bytes = rssBytes(pid);
      if (Number.isFinite(bytes)) total += bytes;
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

function readCmdline(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
}

/** Run `work` while sampling the watched tree; `work` gives the tool's output and a failure it saw. */
export async function measureRun(
  tool: string,
  phase: Phase,
  hosts: readonly FleetHost[],
  watch: Watch,
  work: () => Promise<{ output: string; failure: string | null }>,
): Promise<FleetRun> {
  let peak = 0;
  let samplerMs = 0;
  let timer: NodeJS.Timeout | undefined;
  const sample = () => {
    const start = performance.now();
    peak = Math.max(peak, watchedRss(watch));
    const cost = performance.now() - start;
    samplerMs += cost;
    return cost;
  };
  // Each pass reads /proc whole, thousands of processes with a large fleet: waiting ten times
  // its cost keeps the sampler to a tenth of one CPU, away from the tool it measures.
  const next = (cost: number) => {
    timer = setTimeout(() => next(sample()), Math.max(SAMPLE_EVERY_MS, 10 * cost));
  };
  const before = machineCpu();
  const first = sample();
  const start = performance.now();
  let done: { output: string; failure: string | null };
  let wallMs: number;
  try {
    next(first);
    done = await work();
    wallMs = performance.now() - start;
    sample();
  } finally {
    clearTimeout(timer);
  }
  const after = machineCpu();
  const answered = countAnswers(done.output, hosts);
  const short = answered < hosts.length ? `${answered} of ${hosts.length} hosts answered` : null;
  const failure = short === null ? null : [short, done.failure].filter((x) => x !== null).join(": ");
  return {
    tool,
    phase,
    wallMs,
    peakRssMiB: peak / MIB,
    cpuMsPerHost: (after.busyMs - before.busyMs - samplerMs) / hosts.length,
    answered,
    hosts: hosts.length,
    failure,
  };
}

/** A process run to its end: its output and how it ended. */
interface ProcessRun {
  stdout: string;
  stderr: string;
  code: number | null;
  timedOut: boolean;
}

/**
 * Start `argv` in a process group of its own and wait for it, killing the
 * whole group after `limitMs`; `onPid` hands its pid to the sampler.
 */
export function runProcess(
  argv: readonly string[],
  env: Record<string, string>,
  limitMs: number,
  onPid: (pid: number) => void,
): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const [program = "", ...args] = argv;
    const child = spawn(program, args, { env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    if (child.pid !== undefined) onPid(child.pid);
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, limitMs);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      // Whatever the tool left in its group (an ssh it did not wait for) goes with it.
      killGroup(child.pid);
      resolve({ stdout, stderr, code, timedOut });
    });
  });
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // The group is gone.
  }
}

/** The SSH control masters whose title holds `marker`, stopped; resolves once they are gone (at most 5 s). */
export async function stopMasters(marker: string): Promise<void> {
  const masters = () =>
    [...processTable()]
      .filter(([pid, { comm }]) => {
        if (comm !== "ssh") return false;
        try {
          return readCmdline(pid).includes(marker);
        } catch {
          return false;
        }
      })
      .map(([pid]) => pid);
  const deadline = Date.now() + 5000;
  for (let left = masters(); left.length > 0 && Date.now() < deadline; left = masters()) {
    for (const pid of left) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
