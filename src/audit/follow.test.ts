import {
  appendFileSync,
  closeSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../core/index.js";
import {
  type AuditFollower,
  type FollowChain,
  type FollowedLine,
  type FollowOptions,
  type FollowPosition,
  type FollowReset,
  followAudit,
} from "./index.js";
import type { AuditEntry, AuditLog } from "./types.js";
import { verifyAuditChain } from "./verify.js";
import { createAuditLog } from "./writer.js";

let dir: string;
let path: string;
const open: Array<{ close(): void }> = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-follow-"));
  path = join(dir, "audit.jsonl");
});

afterEach(() => {
  for (const thing of open.splice(0)) thing.close();
  rmSync(dir, { recursive: true, force: true });
});

function writer(chain = true): AuditLog {
  const log = createAuditLog(
    { path, format: "jsonl", chain, stderrEcho: false },
    { clock: systemClock, stderr: () => undefined },
  );
  open.push(log);
  return log;
}

function entry(n: number, extra: Partial<AuditEntry> = {}): AuditEntry {
  return {
    tool: "shell_exec",
    tier: 1,
    denied: false,
    args: { command: `echo record-${n}` },
    output: `[exit 0]\nrecord-${n}\n`,
    exitCode: 0,
    ...extra,
  };
}

interface Followed {
  follower: AuditFollower;
  lines: FollowedLine[];
  batches: number;
  resets: FollowReset[];
  errors: Error[];
}

function follow(options: Pick<FollowOptions, "maxLineBytes" | "pollMs"> = {}): Followed {
  const seen: Followed = {
    follower: undefined as unknown as AuditFollower,
    lines: [],
    batches: 0,
    resets: [],
    errors: [],
  };
  seen.follower = followAudit(path, {
    onRecords: (batch) => {
      expect(batch.length).toBeGreaterThan(0);
      seen.batches += 1;
      seen.lines.push(...batch);
    },
    onReset: (event) => seen.resets.push(event),
    onError: (error) => seen.errors.push(error),
    ...options,
  });
  open.push(seen.follower);
  return seen;
}

async function until(what: string, done: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function commands(lines: FollowedLine[]): unknown[] {
  return lines.map((l) => (l.record?.args as { command?: string } | undefined)?.command);
}

describe("followAudit", () => {
  it("delivers records appended by the real writer, in order, each verified with its line number", async () => {
    const log = writer();
    log.append(entry(0));
    log.append(entry(1));
    const seen = follow();
    await until("the first two", () => seen.lines.length === 2);
    for (let n = 2; n < 40; n++) log.append(entry(n));
    await until("all 40", () => seen.lines.length === 40);
    expect(seen.lines.map((l) => l.line)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect(commands(seen.lines)).toEqual(Array.from({ length: 40 }, (_, i) => `echo record-${i}`));
    expect(seen.lines.map((l) => l.chain)).toEqual(
      Array.from({ length: 40 }, (_, i) => ({ status: "verified", seq: i, anchored: true })),
    );
    const fileLines = readFileSync(path, "utf8").split("\n").slice(0, 40);
    expect(seen.lines.map((l) => l.text)).toEqual(fileLines);
    expect(seen.lines.every((l) => l.file === 0 && l.unreadable === null)).toBe(true);
    expect(seen.errors).toEqual([]);
  });

  it("reports records without chain fields as unchained", async () => {
    const log = writer(false);
    const seen = follow();
    log.append(entry(0));
    log.append(entry(1, { denied: true, exitCode: null }));
    await until("two records", () => seen.lines.length === 2);
    expect(seen.lines.map((l) => l.chain)).toEqual([{ status: "unchained" }, { status: "unchained" }]);
    expect(seen.lines[1]?.record?.denied).toBe(true);
  });

  it("waits for a partial line's newline and delivers the line once", async () => {
    const log = writer();
    log.append(entry(0));
    const seen = follow({ pollMs: 20 });
    await until("the first record", () => seen.lines.length === 1);
    // The next record as the writer would write it, from a copy of the file.
    const copy = join(dir, "copy.jsonl");
    appendFileSync(copy, readFileSync(path));
    const other = createAuditLog(
      { path: copy, format: "jsonl", chain: true, stderrEcho: false },
      { clock: systemClock, stderr: () => undefined },
    );
    other.append(entry(1));
    other.close();
    const second = readFileSync(copy, "utf8").split("\n")[1] as string;
    const half = Math.floor(second.length / 2);
    appendFileSync(path, second.slice(0, half));
    await sleep(200); // ten poll periods: a partial line must not come out
    expect(seen.lines).toHaveLength(1);
    appendFileSync(path, `${second.slice(half)}\n`);
    await until("the completed line", () => seen.lines.length === 2);
    await sleep(100);
    expect(seen.lines).toHaveLength(2);
    expect(seen.lines[1]).toMatchObject({ line: 2, text: second, chain: { status: "verified", seq: 1 } });
  });

  it("reports a line that is not JSON as unreadable and, inside a chain, as the break", async () => {
    appendFileSync(path, "legacy text before chaining\n");
    const log = writer();
    const seen = follow();
    log.append(entry(0));
    await until("two lines", () => seen.lines.length === 2);
    appendFileSync(path, "{torn\n\n");
    log.append(entry(1));
    await until("four lines", () => seen.lines.length === 4);
    expect(seen.lines[0]).toMatchObject({
      line: 1,
      record: null,
      text: "legacy text before chaining",
      unreadable: "not JSON",
      chain: { status: "unchained" },
    });
    expect(seen.lines[1]?.chain).toEqual({ status: "verified", seq: 0, anchored: true });
    const broken = {
      status: "broken",
      brokenAt: 3,
      reason: "line 3: invalid JSON inside the chained region",
    };
    expect(seen.lines[2]).toMatchObject({ line: 3, unreadable: "not JSON", chain: broken });
    // The blank line 4 is not a record; the next record is line 5 and carries the break.
    expect(seen.lines[3]).toMatchObject({ line: 5, chain: broken });
    expect(seen.lines[3]?.record?.seq).toBe(1);
  });

  it("reports a JSON line that is not an object as unreadable", async () => {
    appendFileSync(path, '[1,2]\n"text"\n');
    const seen = follow();
    await until("two lines", () => seen.lines.length === 2);
    expect(seen.lines.map((l) => l.unreadable)).toEqual(["not a JSON object", "not a JSON object"]);
  });

  it("marks the chain broken from a line edited before it was read, with the failed check", async () => {
    const log = writer();
    const seen = follow();
    log.append(entry(0));
    await until("the first record", () => seen.lines.length === 1);
    // Between two looks of the follower: five records, one byte changed in the third, two more.
    for (let n = 1; n <= 5; n++) log.append(entry(n));
    const text = readFileSync(path, "utf8");
    const at = text.indexOf("echo record-3");
    const fd = openSync(path, "r+");
    writeSync(fd, "E", at);
    closeSync(fd);
    log.append(entry(6));
    log.append(entry(7));
    await until("eight records", () => seen.lines.length === 8);
    expect(seen.lines.slice(0, 3).map((l) => l.chain.status)).toEqual(["verified", "verified", "verified"]);
    const reason = "line 4: record body does not match its chain hash (tampered)";
    const broken: FollowChain = { status: "broken", brokenAt: 4, reason };
    for (const line of seen.lines.slice(3)) {
      expect(line.chain).toEqual(broken);
    }
    // The same verdict as --verify-audit's.
    expect(verifyAuditChain(path)).toMatchObject({ brokenAt: 4, reason });
  });

  it("starts over on a truncated file and goes on with the chain the writer continues", async () => {
    const log = writer();
    for (let n = 0; n < 3; n++) log.append(entry(n));
    const seen = follow();
    await until("three records", () => seen.lines.length === 3);
    truncateSync(path, 0);
    await until("the reset", () => seen.resets.length === 1);
    expect(seen.resets[0]).toEqual({ reason: "truncated", file: 1, chainCarried: true });
    log.append(entry(3));
    await until("the record after", () => seen.lines.length === 4);
    expect(seen.lines[3]).toMatchObject({ file: 1, line: 1, chain: { status: "verified", seq: 3 } });
  });

  it("follows a rename-based rotation: the old file to its end, then the new one, the seam checked", async () => {
    const log = writer();
    log.append(entry(0));
    const seen = follow();
    await until("the first record", () => seen.lines.length === 1);
    // Written to the old file, then rotated away before the follower looks again.
    log.append(entry(1));
    renameSync(path, `${path}.1`);
    log.append(entry(2)); // the writer sees the path gone and creates a new file
    log.append(entry(3));
    await until("four records", () => seen.lines.length === 4);
    expect(seen.resets).toEqual([{ reason: "rotated", file: 1, chainCarried: true }]);
    expect(seen.lines.map((l) => [l.file, l.line, l.chain.status])).toEqual([
      [0, 1, "verified"],
      [0, 2, "verified"],
      [1, 1, "verified"],
      [1, 2, "verified"],
    ]);
    expect(commands(seen.lines)).toEqual([
      "echo record-0",
      "echo record-1",
      "echo record-2",
      "echo record-3",
    ]);
  });

  it("judges a rotated-in file afresh when the chain had already broken", async () => {
    const log = writer();
    log.append(entry(0));
    appendFileSync(path, "garbage\n");
    const seen = follow();
    await until("two lines", () => seen.lines.length === 2);
    expect(seen.lines[1]?.chain.status).toBe("broken");
    renameSync(path, `${path}.1`);
    log.append(entry(1));
    await until("the record in the new file", () => seen.lines.length === 3);
    expect(seen.resets).toEqual([{ reason: "rotated", file: 1, chainCarried: false }]);
    expect(seen.lines[2]?.chain).toEqual({ status: "verified", seq: 1, anchored: false });
  });

  it("bounds a huge line: reported with its length, never held", async () => {
    const log = writer(false);
    const seen = follow({ maxLineBytes: 4096 });
    await sleep(50);
    const before = process.memoryUsage().arrayBuffers;
    // 32 MiB without a newline, in pieces as a slow writer would write them.
    const piece = Buffer.alloc(1024 * 1024, "a");
    appendFileSync(path, '{"x":"');
    for (let i = 0; i < 32; i++) {
      appendFileSync(path, piece);
      await sleep(5);
    }
    await sleep(300);
    // Whatever the follower has read of the line so far, it has not kept it.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(8 * 1024 * 1024);
    expect(seen.lines).toEqual([]);
    appendFileSync(path, '"}\n');
    log.append(entry(1));
    await until("two lines", () => seen.lines.length === 2);
    const length = 32 * 1024 * 1024 + 8;
    expect(seen.lines[0]).toEqual({
      file: 0,
      line: 1,
      bytes: length,
      record: null,
      text: null,
      unreadable: `line of ${length} bytes, over the limit of 4096`,
      chain: { status: "unchained" },
    });
    expect(seen.lines[1]).toMatchObject({ line: 2, chain: { status: "unchained" } });
  });

  it("delivers a torn last line of a file rotated away, then follows the new file", async () => {
    const log = writer(false);
    log.append(entry(0));
    const seen = follow();
    await until("the first record", () => seen.lines.length === 1);
    appendFileSync(path, '{"tool":"torn');
    renameSync(path, `${path}.1`);
    log.append(entry(1));
    await until("three lines", () => seen.lines.length === 3);
    expect(seen.lines.map((l) => [l.file, l.line, l.unreadable])).toEqual([
      [0, 1, null],
      [0, 2, "not JSON"],
      [1, 1, null],
    ]);
    expect(seen.lines[1]?.text).toBe('{"tool":"torn');
  });

  it("resumes from a position with the chain it had reached", async () => {
    const log = writer();
    for (let n = 0; n < 3; n++) log.append(entry(n));
    const first = follow();
    await until("three records", () => first.lines.length === 3);
    const position: FollowPosition = first.follower.position();
    first.follower.close();
    log.append(entry(3));
    const lines: FollowedLine[] = [];
    open.push(followAudit(path, { from: position, onRecords: (batch) => lines.push(...batch) }));
    await until("the fourth record", () => lines.length === 1);
    expect(lines[0]).toMatchObject({ line: 4, chain: { status: "verified", seq: 3 } });
  });

  it("notices growth through the directory watch without waiting for the poll", async () => {
    const log = writer();
    log.append(entry(0));
    const seen = follow({ pollMs: 60_000 });
    await until("the first record", () => seen.lines.length === 1);
    log.append(entry(1));
    await until("the second record, well before a poll", () => seen.lines.length === 2, 2_000);
  });

  it("waits for a file that does not exist yet", async () => {
    const seen = follow();
    await sleep(150);
    writer().append(entry(0));
    await until("the record", () => seen.lines.length === 1);
    expect(seen.errors).toEqual([]);
  });

  it("refuses a path that is a symbolic link, as the writer does, and says so once", async () => {
    const real = join(dir, "elsewhere.jsonl");
    appendFileSync(real, '{"tool":"x"}\n');
    symlinkSync(real, path);
    const seen = follow({ pollMs: 10 });
    await sleep(200);
    expect(seen.lines).toEqual([]);
    expect(seen.errors.map((e) => e.message)).toEqual([expect.stringContaining("ELOOP")]);
  });

  it("refuses options it cannot work with", () => {
    const onRecords = () => undefined;
    expect(() => followAudit(path, { onRecords, maxLineBytes: 0 })).toThrow(/maxLineBytes/);
    expect(() => followAudit(path, { onRecords, pollMs: Number.NaN })).toThrow(/pollMs/);
    expect(() => followAudit(path, { onRecords, from: { offset: -1, line: 0, anchor: null } })).toThrow(
      /from/,
    );
  });

  it("close() leaves no watcher, timer or file open, and delivers nothing more", async () => {
    const ours = ["FSEventWrap", "Timeout", "Immediate"];
    const resources = () =>
      process
        .getActiveResourcesInfo()
        .filter((kind) => ours.includes(kind))
        .sort();
    const filesOpen = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === path;
        } catch {
          return false; // closed between the listing and the look
        }
      }).length;
    await sleep(20);
    const before = resources();
    const log = writer();
    log.append(entry(0));
    log.close();
    expect(filesOpen()).toBe(0);
    const seen = follow();
    await until("the record", () => seen.lines.length === 1);
    const during = resources();
    expect(during).toContain("FSEventWrap");
    expect(during).toContain("Timeout");
    expect(filesOpen()).toBe(1);
    seen.follower.close();
    await sleep(20);
    expect(resources()).toEqual(before);
    expect(filesOpen()).toBe(0);
    appendFileSync(path, '{"tool":"late"}\n');
    await sleep(150);
    expect(seen.lines).toHaveLength(1);
  });
});
