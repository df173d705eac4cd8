import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mainThreadChildren, readProc } from "../../src/proc/index.js";

/**
 * Probes the process tests share, the colocated ones under src/ and the
 * end-to-end suites under test/. Not part of the build.
 */

/** Unique per test run, so processes of an earlier run can never match. */
export const RUN = `${process.pid}${Math.floor(Math.random() * 1e6)}`;

/** The state letter of a process (`R`, `S`, `Z`, …), or null when it is gone. */
function processState(pid: number | string): string | null {
  return readProc(Number(pid))?.state ?? null;
}

/** Alive and not a zombie (orphans may be reaped late by the container's init). */
export function isAlive(pid: number): boolean {
  const state = processState(pid);
  return state !== null && state !== "Z" && state !== "X";
}

/** Pids of living (not zombie) `sleep <n>` processes whose argument starts with `prefix`. */
export function sleepers(prefix: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (
        (argv[0] ?? "").split("/").at(-1) === "sleep" &&
        (argv[1] ?? "").startsWith(prefix) &&
        isAlive(Number(entry))
      ) {
        found.push(Number(entry));
      }
    } catch {
      // Gone between the listing and the read.
    }
  }
  return found;
}

/** Poll until `check` holds, or fail after `ms`. */
export async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((done) => setTimeout(done, 25));
  }
}

/** Poll until `check` holds; resolves with whether it did within `ms`. */
export async function waitUntil(check: () => boolean, ms = 2000): Promise<boolean> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return check();
}

/** The pids a test command printed as `pid=<n>`. */
export function pidsIn(output: string): number[] {
  return [...output.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
}

/** Live launcher processes forked by `parent` (this test process by default). */
export function launcherPids(parent = process.pid): number[] {
  return (mainThreadChildren(parent) ?? []).filter((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      return (argv.includes("launcher.ts") || argv.includes("relay-launcher")) && isAlive(pid);
    } catch {
      return false; // exited while we looked
    }
  });
}

/** Run `work`, then return the launchers that appeared meanwhile. */
export async function newLaunchers(work: () => Promise<unknown>): Promise<number[]> {
  const before = new Set(launcherPids());
  await work();
  return launcherPids().filter((pid) => !before.has(pid));
}

/** The process launchers built here: the Node one always, the native one where a C compiler built it. */
export const LAUNCHER_KINDS: ("native" | "node")[] = existsSync(
  new URL("../../dist/exec/relay-launcher", import.meta.url),
)
  ? ["native", "node"]
  : ["node"];
