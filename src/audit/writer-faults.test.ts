import {
  chownSync,
  closeSync,
  existsSync,
  fstatSync,
  mkdtempSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../core/index.js";
import { type AllocateOutcome, type AuditFileIo, createAuditFileIo } from "./space.js";
import type { AuditConfig, AuditEntry, AuditLog } from "./types.js";
import { verifyAuditChain } from "./verify.js";
import { createAuditLog, RESERVE_MIN } from "./writer.js";

const clock: Clock = { now: () => Date.UTC(2026, 6, 15, 10, 11, 12, 345), monotonic: () => 0 };

function entry(tool: string): AuditEntry {
  return {
    tool,
    tier: 1,
    denied: false,
    args: { command: `touch /tmp/${tool}` },
    output: "[exit 0]\n",
    exitCode: 0,
  };
}

function errno(code: string): NodeJS.ErrnoException {
  const err = new Error(`${code}: injected`) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

/**
 * The real system calls, with switches to make them fail the way a full disk
 * does: `shortWrites` lets the next write put only half its bytes down and
 * the one after it fail with ENOSPC; `allocate` can be answered by the test.
 */
function faultyIo() {
  const real = createAuditFileIo();
  const state = {
    shortWrites: 0,
    failNextWrite: false,
    truncateFails: false,
    allocate: null as AllocateOutcome | null,
    freeBytes: null as number | null,
    allocations: 0,
    lastAllocation: null as AllocateOutcome | null,
  };
  const io: AuditFileIo = {
    write(fd, bytes, offset, length) {
      if (state.failNextWrite) {
        state.failNextWrite = false;
        throw errno("ENOSPC");
      }
      if (state.shortWrites > 0) {
        state.shortWrites -= 1;
        state.failNextWrite = true;
        return real.write(fd, bytes, offset, Math.max(1, Math.floor(length / 2)));
      }
      return real.write(fd, bytes, offset, length);
    },
    truncate(fd, length) {
      if (state.truncateFails) throw errno("EPERM");
      real.truncate(fd, length);
    },
    allocate(fd, offset, length) {
      state.allocations += 1;
      state.lastAllocation = state.allocate ?? real.allocate(fd, offset, length);
      return state.lastAllocation;
    },
    freeBytes: (d) => state.freeBytes ?? real.freeBytes(d),
  };
  return { io, state };
}

let dir: string;
let logs: AuditLog[];
let stderr: string[];

function open(cfg: Partial<AuditConfig>, io?: AuditFileIo): AuditLog {
  const path = join(dir, "audit.jsonl");
  const log = createAuditLog(
    { path, format: "jsonl", chain: true, stderrEcho: false, ...cfg },
    { clock, stderr: (line) => stderr.push(line), ...(io ? { io } : {}) },
  );
  logs.push(log);
  return log;
}

function fileLines(path: string): string[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l !== "");
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "relay-audit-f-"));
  logs = [];
  stderr = [];
});

afterEach(() => {
  for (const log of logs) log.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("a write that fails part way", () => {
  it("is cut back to the last complete record, so the chain keeps verifying and continues", () => {
    const { io, state } = faultyIo();
    const path = join(dir, "audit.jsonl");
    const log = open({}, io);
    expect(log.append(entry("one"))).toBe(true);
    expect(log.append(entry("two"))).toBe(true);
    const before = readFileSync(path, "utf8");

    state.shortWrites = 1;
    expect(log.append(entry("torn"))).toBe(false);
    expect(readFileSync(path, "utf8")).toBe(before);
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 2 });
    expect(log.status()).toMatchObject({ lastWriteOk: false, writeFailures: 1, degraded: true });
    expect(log.status().degradedReason).toMatch(/ENOSPC/);
    // The lost record is kept on stderr, whole.
    expect(stderr).toHaveLength(1);
    expect(JSON.parse((stderr[0] ?? "").slice("AUDIT ".length))).toMatchObject({ tool: "torn", seq: 2 });

    expect(log.append(entry("three"))).toBe(true);
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 3 });
    expect(fileLines(path).map((l) => (JSON.parse(l) as { tool: string }).tool)).toEqual([
      "one",
      "two",
      "three",
    ]);
  });

  it("when the file cannot be cut (append-only), the next record still starts on its own line", () => {
    const { io, state } = faultyIo();
    const path = join(dir, "audit.jsonl");
    const log = open({ chain: false }, io);
    log.append(entry("one"));
    state.shortWrites = 1;
    state.truncateFails = true;
    expect(log.append(entry("torn"))).toBe(false);
    expect(log.append(entry("two"))).toBe(true);
    const got = fileLines(path);
    expect(got).toHaveLength(3);
    expect(() => JSON.parse(got[1] ?? "")).toThrow();
    expect(JSON.parse(got[2] ?? "")).toMatchObject({ tool: "two" });
  });

  it("a torn last line left by a crash is not merged with the first record after a restart", () => {
    const path = join(dir, "audit.jsonl");
    writeFileSync(path, '{"tool":"complete"}\n{"ts":"2026-07-15T10:1', { mode: 0o600 });
    const log = open({ chain: false });
    expect(log.append(entry("after"))).toBe(true);
    const got = fileLines(path);
    expect(got).toHaveLength(3);
    expect(JSON.parse(got[2] ?? "")).toMatchObject({ tool: "after" });
  });
});

describe("reserving room before the work", () => {
  it("keeps RESERVE_MIN allocated past the end, one allocation call per many records", () => {
    const { io, state } = faultyIo();
    const path = join(dir, "audit.jsonl");
    const log = open({}, io);
    for (let i = 0; i < 1000; i++) {
      expect(log.reserve()).toBe(true);
      expect(log.append(entry(`call-${i}`))).toBe(true);
    }
    // About 200 bytes a record: 1000 records use three or four chunks.
    expect(state.allocations).toBeLessThanOrEqual(6);
    expect(verifyAuditChain(path)).toMatchObject({ ok: true, records: 1000 });
    expect(log.reserve()).toBe(true);
    // The blocks are really there, where the file system can preallocate (tmpfs, ext4, XFS, btrfs).
    if (state.lastAllocation?.ok !== true) return;
    const fd = openSync(path, "r");
    try {
      const st = fstatSync(fd);
      expect(st.blocks * 512).toBeGreaterThanOrEqual(st.size + RESERVE_MIN);
    } finally {
      closeSync(fd);
    }
  });

  it("refuses while there is no space, says why, and the first reserve after space returns succeeds", () => {
    const { io, state } = faultyIo();
    const log = open({}, io);
    state.allocate = {
      ok: false,
      error: { code: "ENOSPC", message: "fallocate: ENOSPC (no space left on device)" },
    };
    expect(log.reserve()).toBe(false);
    expect(log.status()).toMatchObject({ degraded: true, writeFailures: 0 });
    expect(log.status().degradedReason).toMatch(/cannot reserve room for audit records in .*ENOSPC/);
    state.allocate = null;
    expect(log.reserve()).toBe(true);
    expect(log.status()).toMatchObject({ degraded: false, degradedReason: "" });
  });

  it("on a file system that cannot preallocate, checks free space instead", () => {
    const { io, state } = faultyIo();
    const log = open({}, io);
    state.allocate = { ok: false, error: { code: "EOPNOTSUPP", message: "fallocate: EOPNOTSUPP" } };
    state.freeBytes = RESERVE_MIN - 1;
    expect(log.reserve()).toBe(false);
    expect(log.status().degradedReason).toMatch(
      /bytes free, 65536 needed \(the file system cannot preallocate\)/,
    );
    state.freeBytes = 10 * RESERVE_MIN;
    expect(log.reserve()).toBe(true);
    // Asked once: the answer "unsupported" holds for the file.
    expect(state.allocations).toBe(1);
  });
});

describe("what is at the path", () => {
  it("a symbolic link at start-up is not followed: degraded, refused, the target untouched", () => {
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    symlinkSync(victim, join(dir, "audit.jsonl"));
    const log = open({});
    expect(log.status().degradedReason).toMatch(
      /audit\.jsonl is a symbolic link, not a regular file; it is not followed/,
    );
    expect(log.reserve()).toBe(false);
    expect(log.append(entry("x"))).toBe(false);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
  });

  it("a link planted after a rotation: nothing reaches its target; once it is gone a fresh file is opened", () => {
    const path = join(dir, "audit.jsonl");
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const log = open({});
    expect(log.append(entry("before"))).toBe(true);
    renameSync(path, `${path}-20260715`);
    symlinkSync(victim, path);

    expect(log.reserve()).toBe(false);
    expect(log.status().degradedReason).toMatch(/is a symbolic link/);
    expect(log.append(entry("during"))).toBe(false);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(fileLines(`${path}-20260715`)).toHaveLength(1);

    unlinkSync(path);
    expect(log.reserve()).toBe(true);
    expect(log.append(entry("after"))).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // The chain goes on from the rotated file: the record that went nowhere took no sequence number.
    const [old] = fileLines(`${path}-20260715`).map((l) => JSON.parse(l) as { chain: string });
    expect(JSON.parse(fileLines(path)[0] ?? "")).toMatchObject({ tool: "after", seq: 1, prev: old?.chain });
  });

  it("a dangling link is not created through", () => {
    const target = join(dir, "created-through-link");
    symlinkSync(target, join(dir, "audit.jsonl"));
    const log = open({});
    expect(log.append(entry("x"))).toBe(false);
    expect(existsSync(target)).toBe(false);
  });

  it.skipIf(process.geteuid?.() !== 0)(
    "a file owned by another user is refused (needs root to chown)",
    () => {
      const path = join(dir, "audit.jsonl");
      writeFileSync(path, "", { mode: 0o600 });
      chownSync(path, 65534, 65534);
      const log = open({});
      expect(log.status().degradedReason).toMatch(/owned by uid 65534, not by the relay's user \(uid 0\)/);
      expect(log.reserve()).toBe(false);
      expect(log.append(entry("x"))).toBe(false);
      expect(readFileSync(path, "utf8")).toBe("");
    },
  );
});
