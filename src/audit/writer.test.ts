import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../core/index.js";
import type { AuditConfig, AuditEntry, AuditLog } from "./types.js";
import { verifyAuditChain } from "./verify.js";
import { createAuditLog } from "./writer.js";

const T0 = Date.UTC(2026, 6, 15, 10, 11, 12, 345);

function fakeClock(start = T0): Clock {
  let t = start;
  return { now: () => t++, monotonic: () => 0 };
}

function entry(overrides: Partial<AuditEntry> = {}): AuditEntry {
  return {
    tool: "shell_exec",
    tier: 1,
    denied: false,
    args: { command: "echo hi", cwd: "/tmp" },
    output: "[exit 0]\nhi\n",
    exitCode: 0,
    ...overrides,
  };
}

function config(path: string, overrides: Partial<AuditConfig> = {}): AuditConfig {
  return { path, format: "jsonl", chain: false, stderrEcho: false, ...overrides };
}

function lines(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "");
}

let dir: string;
let logs: AuditLog[];
let stderr: string[];

function open(cfg: AuditConfig): AuditLog {
  const log = createAuditLog(cfg, { clock: fakeClock(), stderr: (line) => stderr.push(line) });
  logs.push(log);
  return log;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-w-"));
  logs = [];
  stderr = [];
});

afterEach(() => {
  for (const log of logs) log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("record shape", () => {
  it("writes the contract fields in order and only hashes the output", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path));
    const output = "[exit 0]\nSECRET-BODY-\u00e9\u{1F600}\n";
    expect(log.append(entry({ output }))).toBe(true);
    const [line] = lines(path);
    const record = JSON.parse(line ?? "") as Record<string, unknown>;
    expect(Object.keys(record)).toEqual([
      "ts",
      "tool",
      "tier",
      "denied",
      "args",
      "output_sha256",
      "output_len",
      "exit_code",
    ]);
    expect(record).toMatchObject({
      ts: "2026-07-15T10:11:12.345000+00:00",
      tool: "shell_exec",
      tier: 1,
      denied: false,
      args: { command: "echo hi", cwd: "/tmp" },
      exit_code: 0,
    });
    expect(record.output_sha256).toBe(createHash("sha256").update(Buffer.from(output, "utf8")).digest("hex"));
    expect(record.output_len).toBe(Buffer.byteLength(output, "utf8"));
    expect(readFileSync(path, "utf8")).not.toContain("SECRET-BODY");
  });

  it("adds request_id, client_id and action only when non-empty", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path));
    log.append(entry({ requestId: "", clientId: "" }));
    log.append(
      entry({ requestId: "7", clientId: "cli-a", action: "confirm_plan", denied: true, exitCode: null }),
    );
    const [first, second] = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(first).not.toHaveProperty("request_id");
    expect(first).not.toHaveProperty("client_id");
    expect(first).not.toHaveProperty("action");
    expect(Object.keys(second ?? {}).slice(-3)).toEqual(["request_id", "client_id", "action"]);
    expect(second).toMatchObject({
      request_id: "7",
      client_id: "cli-a",
      action: "confirm_plan",
      denied: true,
    });
    expect(second?.exit_code).toBeNull();
  });

  it("names the relay in every record when it has an instance name, inside the chain", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path, { chain: true, instance: "relay-b" }));
    log.append(entry());
    log.append(entry({ action: "confirm_plan" }));
    const records = lines(path).map((l) => JSON.parse(l) as Record<string, unknown>);
    for (const record of records)
      expect(Object.keys(record).slice(-4)).toEqual(["instance", "seq", "prev", "chain"]);
    expect(records.map((r) => r.instance)).toEqual(["relay-b", "relay-b"]);
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 2 });
    // Edited, the name breaks the chain like any other field.
    writeFileSync(path, readFileSync(path, "utf8").replace('"instance": "relay-b"', '"instance": "relay-c"'));
    expect(verifyAuditChain(path).ok).toBe(false);
  });

  it("keeps non-ASCII as is and escapes control characters, one line per record", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path));
    log.append(entry({ args: { command: "echo caf\u00e9\nrm -rf /\r\u0001" } }));
    const raw = readFileSync(path, "utf8");
    expect(raw).toContain("caf\u00e9\\nrm -rf /\\r\\u0001");
    expect(raw.split("\n")).toHaveLength(2);
  });
});

describe("file creation", () => {
  it("creates the directory 0700 and the file 0600 with O_APPEND", () => {
    const path = join(dir, "nested", "deeper", "audit.jsonl");
    const log = open(config(path));
    expect(statSync(join(dir, "nested")).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(log.status()).toMatchObject({
      degraded: false,
      degradedReason: "",
      lastWriteOk: true,
      writeFailures: 0,
    });
    // The descriptor the log holds must carry O_APPEND (02000 in fdinfo's octal flags).
    const fds = readdirSync("/proc/self/fd").filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === path;
      } catch {
        return false; // fds close while we look (the readdir handle itself)
      }
    });
    expect(fds.length).toBeGreaterThan(0);
    for (const fd of fds) {
      const flags = /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, "utf8"))?.[1] ?? "0";
      expect(Number.parseInt(flags, 8) & 0o2000).toBe(0o2000);
    }
  });

  it("tightens an existing file to 0600", () => {
    const path = join(dir, "audit.jsonl");
    writeFileSync(path, "", { mode: 0o644 });
    chmodSync(path, 0o644);
    open(config(path));
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("appends after writes from another descriptor instead of overwriting them", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path));
    log.append(entry({ tool: "first" }));
    const other = openSync(path, "r+");
    writeSync(other, "OTHER\n", statSync(path).size);
    closeSync(other);
    log.append(entry({ tool: "second" }));
    const got = lines(path);
    expect(got).toHaveLength(3);
    expect(got[1]).toBe("OTHER");
    expect(JSON.parse(got[2] ?? "")).toMatchObject({ tool: "second" });
  });

  it("lets two logs in one process share a path", () => {
    const path = join(dir, "audit.jsonl");
    const a = open(config(path));
    const b = open(config(path));
    a.append(entry({ tool: "a" }));
    b.append(entry({ tool: "b" }));
    a.close();
    expect(a.append(entry())).toBe(false);
    b.append(entry({ tool: "c" }));
    expect(lines(path).map((l) => (JSON.parse(l) as { tool: string }).tool)).toEqual(["a", "b", "c"]);
  });
});

describe("degraded sinks", () => {
  it("/dev/null is refused: degraded, nothing written there, records to stderr, reserve says no", () => {
    const log = open(config("/dev/null", { stderrEcho: true }));
    const status = log.status();
    expect(status.degraded).toBe(true);
    expect(status.degradedReason).toMatch(/\/dev\/null is a character device, not a regular file/);
    expect(log.reserve()).toBe(false);
    expect(log.append(entry({ tool: "kept-on-stderr" }))).toBe(false);
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toContain('"tool": "kept-on-stderr"');
  });

  it("a directory at the path sends records to stderr with the AUDIT prefix", () => {
    const path = join(dir, "is-a-dir");
    mkdirSync(path);
    const log = open(config(path));
    expect(log.status().degraded).toBe(true);
    expect(log.status().degradedReason).toMatch(/is-a-dir is a directory, not a regular file/);
    expect(log.append(entry({ tool: "to-stderr" }))).toBe(false);
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(/^AUDIT \{"ts": .*"tool": "to-stderr".*\}\n$/);
    expect(log.status()).toMatchObject({ lastWriteOk: false, writeFailures: 1 });
  });

  it("an uncreatable directory (parent is a file) degrades to stderr and never throws", () => {
    const blocker = join(dir, "file");
    writeFileSync(blocker, "x");
    const log = open(config(join(blocker, "sub", "audit.jsonl"), { chain: true }));
    expect(log.status()).toMatchObject({ degraded: true, lastWriteOk: true });
    expect(log.status().degradedReason).toMatch(/ENOTDIR/);
    expect(log.reserve()).toBe(false);
    log.append(entry());
    log.append(entry());
    // Records that reached no file do not advance the chain: a file opened later continues without a gap.
    const seqs = stderr.map((l) => (JSON.parse(l.slice("AUDIT ".length)) as { seq: number }).seq);
    expect(seqs).toEqual([0, 0]);
  });

  it("a FIFO is refused without being opened, with or without a reader", () => {
    const path = join(dir, "fifo");
    const made = spawnMkfifo(path);
    if (!made) return;
    const log = open(config(path));
    expect(log.status().degraded).toBe(true);
    expect(log.status().degradedReason).toMatch(/is a FIFO, not a regular file/);
    const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(log.reserve()).toBe(false);
      expect(log.append(entry())).toBe(false);
      // No writer ever opened it: the reader sees end of file, not a record.
      expect(readSync(reader, Buffer.alloc(64))).toBe(0);
    } finally {
      closeSync(reader);
    }
  });

  it("echoes each record to stderr when asked and the file is healthy", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path, { stderrEcho: true }));
    log.append(entry());
    expect(stderr).toEqual([`AUDIT ${lines(path)[0]}\n`]);
  });
});

describe("runtime write failures", () => {
  it("recovers lastWriteOk once the path is writable again; degraded stays set", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path, { chain: true }));
    expect(log.append(entry({ tool: "one" }))).toBe(true);
    unlinkSync(path);
    mkdirSync(path); // the path now names a directory: the reopen refuses it
    expect(log.reserve()).toBe(false);
    expect(log.append(entry({ tool: "two" }))).toBe(false);
    expect(log.status()).toMatchObject({ lastWriteOk: false, degraded: true, writeFailures: 1 });
    rmdirSync(path);
    expect(log.reserve()).toBe(true);
    expect(log.append(entry({ tool: "three" }))).toBe(true);
    const status = log.status();
    expect(status).toMatchObject({ lastWriteOk: true, degraded: true, writeFailures: 1 });
    expect(status.degradedReason).toMatch(/is a directory/);
    // The failed record did not consume a sequence number.
    const [three] = lines(path).map((l) => JSON.parse(l) as { tool: string; seq: number });
    expect(three).toMatchObject({ tool: "three", seq: 1 });
  });
});

describe("rehearsal", () => {
  it("writes nothing, echoes nothing and does not move the chain", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path, { chain: true, stderrEcho: true }));
    expect(log.append(entry({ tool: "one" }))).toBe(true);
    log.rehearse(entry({ tool: "rehearsed" }));
    // A record no JSON can carry is only a failed rehearsal: nothing throws.
    log.rehearse(entry({ args: { loop: 1n } as unknown as Record<string, unknown> }));
    expect(log.append(entry({ tool: "two" }))).toBe(true);
    const written = lines(path).map((l) => JSON.parse(l) as { tool: string; seq: number });
    expect(written.map((r) => [r.tool, r.seq])).toEqual([
      ["one", 0],
      ["two", 1],
    ]);
    expect(stderr.join("")).not.toContain("rehearsed");
    expect(log.status()).toMatchObject({ writeFailures: 0, lastWriteOk: true });
  });
});

describe("rotation", () => {
  it("reopens a new file after a rename and keeps the chain going", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path, { chain: true }));
    log.append(entry({ tool: "before" }));
    renameSync(path, `${path}-20260715`);
    expect(existsSync(path)).toBe(false);
    log.append(entry({ tool: "after" }));
    const [old] = lines(`${path}-20260715`).map((l) => JSON.parse(l) as { chain: string; seq: number });
    const [fresh] = lines(path).map((l) => JSON.parse(l) as { prev: string; seq: number; tool: string });
    expect(fresh).toMatchObject({ tool: "after", seq: 1, prev: old?.chain });
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it("survives copytruncate: appends land at the new end", () => {
    const path = join(dir, "audit.jsonl");
    const log = open(config(path));
    log.append(entry({ tool: "a" }));
    writeFileSync(path, ""); // truncate in place, same inode
    log.append(entry({ tool: "b" }));
    expect(readFileSync(path, "utf8").startsWith('{"ts"')).toBe(true);
    expect(lines(path)).toHaveLength(1);
  });
});

function spawnMkfifo(path: string): boolean {
  // mkfifo(3) has no Node binding; coreutils' mkfifo is on every Linux this runs on.
  const { status } = spawnSync("mkfifo", [path]);
  return status === 0;
}
