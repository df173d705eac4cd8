import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock, Ids } from "../core/index.js";
import { actDigest } from "./payload.js";
import { openSqliteStore } from "./sqlite-store.js";
import type { ConsentAct, ConsentStore, NewRequest, StoredApproval, StoreResult } from "./types.js";

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

function fakeClock(start = T0): Clock & { advance(ms: number): void } {
  let at = start;
  return { now: () => at, monotonic: () => at, advance: (ms) => (at += ms) };
}

/** Counter-based ids: each draw is unique and predictable. */
function countingIds(): Ids & { replay(hex: string): void } {
  let n = 0;
  const queued: string[] = [];
  const next = (bytes: number): string => {
    n += 1;
    return n.toString(16).padStart(bytes * 2, "0");
  };
  return {
    hex: (bytes) => queued.shift() ?? next(bytes),
    token: next,
    replay: (hex) => queued.push(hex),
  };
}

function value<T>(result: StoreResult<T>): T {
  if (!result.ok) throw new Error(`expected ok, got ${result.error.failure}: ${result.error.detail}`);
  return result.value;
}

function failure<T>(result: StoreResult<T>): string {
  if (result.ok) throw new Error("expected a refusal, got ok");
  return result.error.failure;
}

const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "touch /tmp/x", cwd: "/srv" } };

function _newRequest(act = ACT, ttlSeconds = 300, session = "s1"): NewRequest {
  return { act, actDigest: actDigest(act), basis: "write: touch", session, clientId: "c1", ttlSeconds };
}

const _PROOF: StoredApproval = {
  channel: "sshsig",
  proof: "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
  claimedSigner: "SHA256:abc",
  at: T0,
};

describe("the SQLite consent store (what both stores share is in store-contract.test.ts)", () => {
  let dir: string;
  let path: string;
  let clock: ReturnType<typeof fakeClock>;
  let ids: ReturnType<typeof countingIds>;
  let store: ConsentStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "consent-store-"));
    path = join(dir, "state", "consent.db");
    clock = fakeClock();
    ids = countingIds();
    store = value(openSqliteStore(path, { clock, ids, busyTimeoutMs: 500 }));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("the file", () => {
    it("is created 0600 in a directory created 0700, whatever the umask", async () => {
      const old = process.umask(0);
      try {
        const other = value(openSqliteStore(join(dir, "a", "b", "c.db"), { clock, ids, busyTimeoutMs: 500 }));
        await other.close();
      } finally {
        process.umask(old);
      }
      expect(statSync(join(dir, "a", "b", "c.db")).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, "a", "b")).mode & 0o777).toBe(0o700);
      expect(statSync(join(dir, "a")).mode & 0o777).toBe(0o700);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    });

    it("refuses a file readable by others, a symlink, a directory and a shared directory", () => {
      const open = (p: string) => openSqliteStore(p, { clock, ids, busyTimeoutMs: 500 });
      const loose = join(dir, "loose.db");
      writeFileSync(loose, "", { mode: 0o644 });
      chmodSync(loose, 0o644);
      const r1 = open(loose);
      expect(r1.ok).toBe(false);
      if (!r1.ok) expect(r1.error.detail).toMatch(/readable or writable by group or others \(mode 0644\)/);
      chmodSync(loose, 0o660);
      expect(failure(open(loose))).toBe("unavailable");

      const link = join(dir, "link.db");
      symlinkSync(path, link);
      const r2 = open(link);
      expect(r2.ok).toBe(false);
      if (!r2.ok) expect(r2.error.detail).toMatch(/symbolic link/);

      mkdirSync(join(dir, "dir.db"));
      const r3 = open(join(dir, "dir.db"));
      if (!r3.ok) expect(r3.error.detail).toMatch(/not a regular file/);
      expect(r3.ok).toBe(false);

      const shared = join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o777);
      const r4 = open(join(shared, "c.db"));
      if (!r4.ok) expect(r4.error.detail).toMatch(/writable by group or others \(mode 0777\)/);
      expect(r4.ok).toBe(false);
    });

    it("refuses a file that is not a database, another program's database and a newer schema", async () => {
      const open = (p: string) => openSqliteStore(p, { clock, ids, busyTimeoutMs: 500 });
      const junk = join(dir, "junk.db");
      writeFileSync(junk, "this is not sqlite, just sixteen-plus bytes of text\n".repeat(40), {
        mode: 0o600,
      });
      const r1 = open(junk);
      expect(r1.ok).toBe(false);
      if (!r1.ok) expect(r1.error.detail).toMatch(/junk\.db is not a usable consent database/);

      const foreign = join(dir, "foreign.db");
      writeFileSync(foreign, "", { mode: 0o600 });
      const raw = new Database(foreign);
      raw.exec("CREATE TABLE t (x)");
      await raw.close();
      const r2 = open(foreign);
      if (!r2.ok) expect(r2.error.detail).toMatch(/not a relay-shell consent database/);
      expect(r2.ok).toBe(false);

      await store.close();
      const edit = new Database(path);
      edit.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
      edit.close();
      const r3 = open(path);
      if (!r3.ok)
        expect(r3.error.detail).toMatch(/schema version 99 is newer than this relay-shell understands \(1\)/);
      expect(r3.ok).toBe(false);
    });

    it("keeps one instance id, created once, across openings", async () => {
      expect(store.instanceId).toMatch(/^[0-9a-f]{16}$/);
      const again = value(openSqliteStore(path, { clock, ids: countingIds(), busyTimeoutMs: 500 }));
      expect(again.instanceId).toBe(store.instanceId);
      await again.close();
    });
  });

  describe("sessions and leases", () => {
    const _lease = (remaining = 3, ttlMs = 90_000, session = "s1") => ({
      session,
      openedBy: "0000000001",
      mode: "window" as const,
      createdAt: clock.now(),
      expiresAt: clock.now() + ttlMs,
      remaining,
    });

    it("counts commits by other connections, not its own", async () => {
      const other = value(openSqliteStore(path, { clock, ids: countingIds(), busyTimeoutMs: 500 }));
      try {
        const start = value(await store.changeCounter());
        value(await store.touchSession("s1", "c1"));
        expect(value(await store.changeCounter())).toBe(start);
        value(await other.touchSession("s2", "c2"));
        const after = value(await store.changeCounter());
        expect(after).not.toBe(start);
        expect(value(await store.changeCounter())).toBe(after);
      } finally {
        await other.close();
      }
    });
  });
});
