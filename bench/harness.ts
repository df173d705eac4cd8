import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { type InFlightSample, inFlightSample } from "./floors/sample.mjs";

export const ROOT = resolve(import.meta.dirname, "..");
export const SERVER_ENTRY = join(ROOT, "dist", "cli", "main.js");

export interface BenchServer {
  client: Client;
  pid: number;
  dir: string;
  call(name: string, args: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** Start the built server over stdio with the SDK client, as a user's client would. */
export async function startBenchServer(settings: Record<string, string> = {}): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), "relay-shell-bench-"));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? dir,
    RELAY_SHELL_AUDIT_PATH: join(dir, "audit.jsonl"),
    ...settings,
  };
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER_ENTRY],
    env,
    cwd: dir,
    stderr: "ignore",
  });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  return {
    client,
    pid: transport.pid ?? -1,
    dir,
    async call(name, args) {
      const r = await client.callTool({ name, arguments: args });
      return (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
    },
    close: () => client.close(),
  };
}

export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
  return kb ? Number(kb) * 1024 : Number.NaN;
}

/** One bare `sh -c true`, the baseline every local exec is compared with. */
export function bareSpawn(): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" });
    child.on("error", fail);
    child.on("exit", () => done());
  });
}

export async function timeEach(count: number, once: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  return times;
}

/** Calls per second with `inFlight` concurrent workers doing `total` calls in all. */
export async function throughput(
  total: number,
  inFlight: number,
  once: () => Promise<unknown>,
): Promise<number> {
  return (await inFlightSample(once, total, inFlight)).rate;
}

/** How to start one MCP server over stdio. */
export interface McpCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
}

/**
 * Start any MCP server over stdio with the same SDK client the relay is
 * measured with; `startupMs` runs from the spawn to the end of the
 * initialize handshake.
 */
export async function connectMcp(cmd: McpCommand): Promise<{ server: BenchServer; startupMs: number }> {
  const start = performance.now();
  const transport = new StdioClientTransport({ ...cmd, stderr: "ignore" });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  const startupMs = performance.now() - start;
  const server: BenchServer = {
    client,
    pid: transport.pid ?? -1,
    dir: cmd.cwd,
    async call(name, args) {
      const r = await client.callTool({ name, arguments: args });
      const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? "").join("");
      if (r.isError === true) throw new Error(`${name} failed: ${text.slice(0, 500)}`);
      return text;
    },
    close: () => client.close(),
  };
  return { server, startupMs };
}

/**
 * Proportional set size: resident pages, each shared one divided among the
 * processes that map it. Summed over a tree it counts the node binary that
 * the server and its launcher both map once, where RSS counts it twice.
 */
export function pssBytes(pid: number): number {
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
  const kb = /^Pss:\s+(\d+) kB/m.exec(rollup)?.[1];
  return kb ? Number(kb) * 1024 : Number.NaN;
}

/** Resident memory (VmRSS) of a process and every process below it. */
export function treeRssBytes(root: number): number {
  return treeBytes(root, rssBytes);
}

/** Each live process's parent and command name (`comm`), from one pass over /proc. */
export function processTable(): Map<number, { ppid: number; comm: string }> {
  const table = new Map<number, { ppid: number; comm: string }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // The command name may hold spaces and parentheses: the fields start after the last ')'.
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      table.set(Number(entry), { ppid, comm: stat.slice(stat.indexOf("(") + 1, close) });
    } catch {
      // The process ended while the table was read.
    }
  }
  return table;
}

/** `roots` and every process of `table` below them. */
export function treeOf(table: Map<number, { ppid: number }>, roots: readonly number[]): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of table) {
    const list = children.get(ppid) ?? [];
    list.push(pid);
    children.set(ppid, list);
  }
  const out: number[] = [];
  const seen = new Set<number>();
  const stack = [...roots];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (seen.has(pid)) continue;
    seen.add(pid);
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** `measure` summed over a process and every process below it. */
export function treeBytes(root: number, measure: (pid: number) => number): number {
  let total = 0;
  for (const pid of treeOf(processTable(), [root])) {
    try {
      total += measure(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return total;
}

/** What a floor process prints: each sequential call's time and the rate with calls in flight. */
export type FloorSample = InFlightSample & { times: number[] };

/**
 * Compile a C floor (bench/floors/<name>.c) into `dir` with the native launcher's optimisation and
 * hardening flags (scripts/build-launcher.mjs), so the floor costs what launcher code would.
 * Returns the binary's path; throws with the compiler's message when there is no compiler.
 */
export function buildNativeFloor(name: string, dir: string): string {
  const out = join(dir, name);
  const flags = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-O2",
    "-D_FORTIFY_SOURCE=2",
    "-fstack-protector-strong",
  ];
  execFileSync(process.env.CC || "cc", [...flags, "-o", out, join(ROOT, "bench", "floors", `${name}.c`)], {
    stdio: ["ignore", "inherit", "inherit"],
  });
  return out;
}

/**
 * Run a floor as a process of its own and read its sample: one of bench/floors/*.mjs under Node, or
 * a native floor's binary (an absolute path from {@link buildNativeFloor}).
 */
export function runFloor(script: string, args: readonly string[]): Promise<FloorSample> {
  const [command, argv] = script.endsWith(".mjs")
    ? [process.execPath, [join(ROOT, "bench", "floors", script), ...args]]
    : [script, [...args]];
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}`));
      try {
        resolve(JSON.parse(out) as FloorSample);
      } catch (err) {
        // A sample that is not JSON fails the run at once instead of leaving it waiting.
        reject(new Error(`${script} printed no sample (${String(err)}): ${out.slice(0, 200)}`));
      }
    });
  });
}
