import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAuditLog, type FollowedLine, followAudit } from "../../src/audit/index.js";
import { systemClock } from "../../src/core/index.js";
import { REPO_ROOT } from "../helpers/server.js";

const WRITER = join(REPO_ROOT, "test", "audit", "audit-writer.mjs");
const FOLLOWER = join(REPO_ROOT, "test", "audit", "audit-follower.mjs");

let dir: string;
let path: string;
const closers: Array<() => void> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-procs-"));
  path = join(dir, "audit.jsonl");
});

afterEach(() => {
  for (const close of closers.splice(0)) close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the built writer in a process of its own; resolves with what it wrote. */
function writeFromProcess(
  tag: string,
  count: number,
  chain: boolean,
): Promise<{ written: number; failed: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, path, tag, String(count), "0", String(chain)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`writer ${tag} exited with ${code}`));
    });
  });
}

function localWriter(chain: boolean) {
  const log = createAuditLog(
    { path, format: "jsonl", chain, stderrEcho: false },
    { clock: systemClock, stderr: () => undefined },
  );
  closers.push(() => log.close());
  return (tag: string, n: number) =>
    log.append({
      tool: "shell_exec",
      tier: 1,
      denied: false,
      args: { command: `echo ${tag}-${n}`, cwd: "/tmp" },
      output: "",
      exitCode: 0,
      clientId: tag,
    });
}

function startFollowing(): FollowedLine[] {
  const lines: FollowedLine[] = [];
  const follower = followAudit(path, { onRecords: (batch) => lines.push(...batch) });
  closers.push(() => follower.close());
  return lines;
}

async function until(what: string, done: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function commandOf(line: FollowedLine): string {
  return String((line.record?.args as { command?: unknown } | undefined)?.command);
}

function fileLines(): string[] {
  return readFileSync(path, "utf8").split("\n").slice(0, -1);
}

describe("following an audit file written by several processes", () => {
  it("delivers the records of this process and two others in file order, the chain verified across them", async () => {
    const lines = startFollowing();
    // The writer keeps its chain in memory, so writers on one chained file take turns: each one
    // that starts continues the chain from the file's last record.
    const first = localWriter(true);
    for (let n = 0; n < 20; n++) first("local", n);
    await until("the local records", () => lines.length === 20);
    expect(await writeFromProcess("procA", 40, true)).toEqual({ written: 40, failed: 0 });
    expect(await writeFromProcess("procB", 40, true)).toEqual({ written: 40, failed: 0 });
    const again = localWriter(true);
    for (let n = 20; n < 30; n++) again("local", n);
    await until("all 110", () => lines.length === 110);

    const expected = [
      ...Array.from({ length: 20 }, (_, n) => `echo local-${n}`),
      ...Array.from({ length: 40 }, (_, n) => `echo procA-${n}`),
      ...Array.from({ length: 40 }, (_, n) => `echo procB-${n}`),
      ...Array.from({ length: 10 }, (_, n) => `echo local-${n + 20}`),
    ];
    expect(lines.map(commandOf)).toEqual(expected);
    expect(lines.map((l) => l.line)).toEqual(Array.from({ length: 110 }, (_, i) => i + 1));
    expect(lines.map((l) => l.text)).toEqual(fileLines());
    expect(lines.map((l) => l.chain)).toEqual(
      Array.from({ length: 110 }, (_, seq) => ({ status: "verified", seq, anchored: true })),
    );
  });

  it("loses nothing while three processes append at once, and keeps the file's order", async () => {
    const lines = startFollowing();
    const local = localWriter(false);
    const others = [writeFromProcess("procA", 600, false), writeFromProcess("procB", 600, false)];
    for (let n = 0; n < 600; n++) {
      local("local", n);
      if (n % 50 === 49) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await Promise.all(others)).toEqual([
      { written: 600, failed: 0 },
      { written: 600, failed: 0 },
    ]);
    await until("all 1800", () => lines.length === 1800);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines).toHaveLength(1800);
    expect(lines.map((l) => l.text)).toEqual(fileLines());
    expect(lines.map((l) => l.line)).toEqual(Array.from({ length: 1800 }, (_, i) => i + 1));
    expect(lines.every((l) => l.chain.status === "unchained" && l.unreadable === null)).toBe(true);
    for (const tag of ["local", "procA", "procB"]) {
      const own = lines.map(commandOf).filter((c) => c.startsWith(`echo ${tag}-`));
      expect(own).toEqual(Array.from({ length: 600 }, (_, n) => `echo ${tag}-${n}`));
    }
  });

  it("a follower in another process gets every record and, once closed, lets its process exit", async () => {
    const child = spawn(process.execPath, [FOLLOWER, path, "50"], { stdio: ["ignore", "pipe", "inherit"] });
    closers.push(() => child.kill("SIGKILL"));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const out: string[] = [];
    const reader = createInterface({ input: child.stdout });
    reader.on("line", (line) => out.push(line));
    await until("the follower's start", () => out.includes("ready"));
    const write = localWriter(true);
    for (let n = 0; n < 50; n++) write("local", n);
    await until("done", () => out.includes("done"));
    const timeout = new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 5_000).unref());
    expect(await Promise.race([exited, timeout])).toBe(0);
    const delivered = out.filter((line) => line.startsWith("line "));
    expect(delivered.map((line) => line.split(" ").slice(0, 3).join(" "))).toEqual(
      Array.from({ length: 50 }, (_, i) => `line ${i + 1} verified`),
    );
  });
});
