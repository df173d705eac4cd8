import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock, Ids } from "../core/index.js";
import { actDigest, consentPayload } from "./payload.js";
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
  if (!result.ok) throw new Error(`expected ok, got ${result.failure}: ${result.detail}`);
  return result.value;
}

function failure<T>(result: StoreResult<T>): string {
  if (result.ok) throw new Error("expected a refusal, got ok");
  return result.failure;
}

const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "touch /tmp/x", cwd: "/srv" } };

function newRequest(act = ACT, ttlSeconds = 300, session = "s1"): NewRequest {
  return { act, actDigest: actDigest(act), basis: "write: touch", session, clientId: "c1", ttlSeconds };
}

const PROOF: StoredApproval = {
  channel: "sshsig",
  proof: "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
  claimedSigner: "SHA256:abc",
  at: T0,
};

describe("the SQLite consent store", () => {
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
      if (!r1.ok) expect(r1.detail).toMatch(/readable or writable by group or others \(mode 0644\)/);
      chmodSync(loose, 0o660);
      expect(failure(open(loose))).toBe("unavailable");

      const link = join(dir, "link.db");
      symlinkSync(path, link);
      const r2 = open(link);
      expect(r2.ok).toBe(false);
      if (!r2.ok) expect(r2.detail).toMatch(/symbolic link/);

      mkdirSync(join(dir, "dir.db"));
      const r3 = open(join(dir, "dir.db"));
      if (!r3.ok) expect(r3.detail).toMatch(/not a regular file/);
      expect(r3.ok).toBe(false);

      const shared = join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o777);
      const r4 = open(join(shared, "c.db"));
      if (!r4.ok) expect(r4.detail).toMatch(/writable by group or others \(mode 0777\)/);
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
      if (!r1.ok) expect(r1.detail).toMatch(/junk\.db is not a usable consent database/);

      const foreign = join(dir, "foreign.db");
      writeFileSync(foreign, "", { mode: 0o600 });
      const raw = new Database(foreign);
      raw.exec("CREATE TABLE t (x)");
      await raw.close();
      const r2 = open(foreign);
      if (!r2.ok) expect(r2.detail).toMatch(/not a relay-shell consent database/);
      expect(r2.ok).toBe(false);

      await store.close();
      const edit = new Database(path);
      edit.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
      edit.close();
      const r3 = open(path);
      if (!r3.ok)
        expect(r3.detail).toMatch(/schema version 99 is newer than this relay-shell understands \(1\)/);
      expect(r3.ok).toBe(false);
    });

    it("keeps one instance id, created once, across openings", async () => {
      expect(store.instanceId).toMatch(/^[0-9a-f]{16}$/);
      const again = value(openSqliteStore(path, { clock, ids: countingIds(), busyTimeoutMs: 500 }));
      expect(again.instanceId).toBe(store.instanceId);
      await again.close();
    });
  });

  describe("requests", () => {
    it("createRequest fixes a short id, a 32-hex nonce and the exact payload", async () => {
      const r = value(await store.createRequest(newRequest()));
      expect(r.id).toMatch(/^[0-9a-f]{10}$/);
      expect(r.nonce).toMatch(/^[0-9a-f]{32}$/);
      expect(r.status).toBe("pending");
      expect(r.expiresAt).toBe(T0 + 300_000);
      expect(r.act).toEqual(ACT);
      expect(r.payload).toBe(
        consentPayload(ACT, {
          request: r.id,
          nonce: r.nonce,
          expiresAt: r.expiresAt,
          instance: store.instanceId,
        }),
      );
      expect(value(await store.getRequest(r.id))).toEqual(r);
    });

    it("draws again when an id is taken", async () => {
      const first = value(await store.createRequest(newRequest()));
      ids.replay(first.id);
      const second = value(await store.createRequest(newRequest()));
      expect(second.id).not.toBe(first.id);
    });

    it("refuses a digest that is not the act's, and a lifetime out of range", async () => {
      expect(failure(await store.createRequest({ ...newRequest(), actDigest: "0".repeat(64) }))).toBe(
        "unavailable",
      );
      expect(failure(await store.createRequest(newRequest(ACT, 0)))).toBe("unavailable");
      expect(failure(await store.createRequest(newRequest(ACT, Number.NaN)))).toBe("unavailable");
      expect(failure(await store.createRequest(newRequest(ACT, 86_401)))).toBe("unavailable");
    });

    it("an act that cannot be stored and read back leaves nothing behind", async () => {
      const odd = { tool: "shell_exec", tier: 7, bound: {} } as unknown as ConsentAct;
      const r = await store.createRequest(newRequest(odd));
      expect(failure(r)).toBe("unavailable");
      expect(value(await store.listRequests())).toEqual([]);
    });

    it("getRequest of an unknown or malformed id is not-found", async () => {
      expect(failure(await store.getRequest("0123456789"))).toBe("not-found");
      expect(failure(await store.getRequest("x'; DROP TABLE requests; --"))).toBe("not-found");
    });

    it("lists live requests oldest first and finds approved and open ones", async () => {
      const other: ConsentAct = { ...ACT, bound: { command: "rm /tmp/y", cwd: "/srv" } };
      const a = value(await store.createRequest(newRequest()));
      clock.advance(1);
      const b = value(await store.createRequest(newRequest(other)));
      clock.advance(1);
      const c = value(await store.createRequest(newRequest(ACT, 1)));
      expect(value(await store.listRequests()).map((r) => r.id)).toEqual([a.id, b.id, c.id]);
      expect(value(await store.findOpen(actDigest(ACT), "s1"))?.id).toBe(c.id);
      expect(value(await store.findOpen(actDigest(ACT), "s2"))).toBeNull();
      expect(value(await store.findApproved(actDigest(ACT)))).toBeNull();
      value(await store.approve(a.id, PROOF));
      expect(value(await store.findApproved(actDigest(ACT)))?.id).toBe(a.id);
      expect(value(await store.findApproved(actDigest(other)))).toBeNull();
      value(await store.deny(b.id, "op", "no"));
      expect(value(await store.findOpen(actDigest(other), "s1"))?.status).toBe("denied");
      clock.advance(1000);
      expect(value(await store.listRequests()).map((r) => r.id)).toEqual([a.id]);
      clock.advance(300_000);
      expect(value(await store.listRequests())).toEqual([]);
      expect(value(await store.findApproved(actDigest(ACT)))).toBeNull();
      expect(value(await store.findOpen(actDigest(other), "s1"))).toBeNull();
    });
  });

  describe("approve, deny and consume", () => {
    it("approves a pending request once, then consumes it once with its nonce", async () => {
      const r = value(await store.createRequest(newRequest()));
      const approved = value(await store.approve(r.id, PROOF));
      expect(approved.status).toBe("approved");
      expect(approved.approval).toEqual(PROOF);
      // An approval not used yet may be replaced (the channels only replace one that does not verify).
      const other = { ...PROOF, proof: "another proof" };
      expect(value(await store.approve(r.id, other)).approval).toEqual(other);
      value(await store.approve(r.id, PROOF));
      clock.advance(5);
      const used = value(await store.consume(r.id, r.nonce));
      expect(used.status).toBe("consumed");
      expect(used.consumedAt).toBe(T0 + 5);
      expect(failure(await store.consume(r.id, r.nonce))).toBe("consumed");
      expect(failure(await store.approve(r.id, PROOF))).toBe("consumed");
      expect(failure(await store.deny(r.id, "op", "late"))).toBe("consumed");
      expect(value(await store.consumeNonce(r.nonce, T0 + 300_000))).toBe(false);
    });

    it("refuses a wrong nonce, an unapproved request and an unknown id", async () => {
      const r = value(await store.createRequest(newRequest()));
      expect(failure(await store.consume(r.id, r.nonce))).toBe("not-approved");
      value(await store.approve(r.id, PROOF));
      expect(failure(await store.consume(r.id, "f".repeat(32)))).toBe("not-found");
      expect(failure(await store.consume("abcdefabcd", r.nonce))).toBe("not-found");
      expect(value(await store.getRequest(r.id)).status).toBe("approved");
    });

    it("an expired request can be neither approved nor consumed", async () => {
      const r = value(await store.createRequest(newRequest(ACT, 10)));
      const s = value(await store.createRequest(newRequest(ACT, 10)));
      value(await store.approve(s.id, PROOF));
      clock.advance(9_999);
      const t = value(await store.createRequest(newRequest(ACT, 10)));
      clock.advance(1);
      expect(failure(await store.approve(r.id, PROOF))).toBe("expired");
      expect(failure(await store.consume(s.id, s.nonce))).toBe("expired");
      expect(failure(await store.deny(r.id, "op", "late"))).toBe("expired");
      expect(value(await store.approve(t.id, PROOF)).status).toBe("approved");
    });

    it("a denied request can be neither approved nor consumed; an unused approval can be withdrawn", async () => {
      const r = value(await store.createRequest(newRequest()));
      const denied = value(await store.deny(r.id, "alice", "wrong host"));
      expect(denied.denial).toEqual({ by: "alice", reason: "wrong host", at: T0 });
      expect(failure(await store.approve(r.id, PROOF))).toBe("not-pending");
      expect(failure(await store.consume(r.id, r.nonce))).toBe("not-approved");
      expect(failure(await store.deny(r.id, "alice", "again"))).toBe("not-pending");
      const s = value(await store.createRequest(newRequest()));
      value(await store.approve(s.id, PROOF));
      expect(value(await store.deny(s.id, "alice", "changed my mind")).status).toBe("denied");
      expect(failure(await store.consume(s.id, s.nonce))).toBe("not-approved");
    });

    it("refuses an approval without a proof or with an unknown channel", async () => {
      const r = value(await store.createRequest(newRequest()));
      expect(failure(await store.approve(r.id, { ...PROOF, proof: "" }))).toBe("unavailable");
      const bad = { ...PROOF, channel: "email" } as unknown as StoredApproval;
      expect(failure(await store.approve(r.id, bad))).toBe("unavailable");
      expect(value(await store.getRequest(r.id)).status).toBe("pending");
    });

    it("a nonce recorded by consumeNonce cannot be consumed again, here or there", async () => {
      const r = value(await store.createRequest(newRequest()));
      value(await store.approve(r.id, PROOF));
      expect(value(await store.consumeNonce(r.nonce, r.expiresAt))).toBe(true);
      expect(failure(await store.consume(r.id, r.nonce))).toBe("consumed");
      expect(value(await store.getRequest(r.id)).status).toBe("approved");
      expect(value(await store.consumeNonce("foreign-1", T0 + 1000))).toBe(true);
      expect(value(await store.consumeNonce("foreign-1", T0 + 1000))).toBe(false);
      expect(failure(await store.consumeNonce("", T0))).toBe("unavailable");
      expect(failure(await store.consumeNonce("x".repeat(257), T0))).toBe("unavailable");
    });

    it("a row edited into nonsense is a refusal, not a guess", async () => {
      const r = value(await store.createRequest(newRequest()));
      const raw = new Database(path);
      raw.prepare("UPDATE requests SET act = '{not json' WHERE id = ?").run(r.id);
      await raw.close();
      const result = await store.getRequest(r.id);
      expect(failure(result)).toBe("unavailable");
      if (!result.ok) expect(result.detail).toMatch(/damaged: the act of request .* is not JSON/);
    });
  });

  describe("sessions and leases", () => {
    const lease = (remaining = 3, ttlMs = 90_000, session = "s1") => ({
      session,
      openedBy: "0000000001",
      mode: "window" as const,
      createdAt: clock.now(),
      expiresAt: clock.now() + ttlMs,
      remaining,
    });

    it("touchSession creates then refreshes; another client cannot share it", async () => {
      const s = value(await store.touchSession("s1", "c1"));
      expect(s).toEqual({ id: "s1", clientId: "c1", startedAt: T0, lastSeenAt: T0 });
      clock.advance(10);
      expect(value(await store.touchSession("s1", "c1")).lastSeenAt).toBe(T0 + 10);
      expect(failure(await store.touchSession("s1", "c2"))).toBe("not-found");
      expect(failure(await store.touchSession("", "c1"))).toBe("not-found");
      expect(value(await store.listSessions()).map((x) => x.id)).toEqual(["s1"]);
    });

    it("takes several reads in one transaction, never more than the lease has left", async () => {
      value(await store.touchSession("s1", "c1"));
      const l = value(await store.openLease(lease(5)));
      expect(value(await store.takeLeaseRead("s1", 60_000, 3))).toMatchObject({
        id: l.id,
        taken: 3,
        remaining: 2,
      });
      expect(value(await store.takeLeaseRead("s1", 60_000, 8))).toMatchObject({ taken: 2, remaining: 0 });
      expect(value(await store.takeLeaseRead("s1", 60_000, 8))).toBeNull();
      expect(failure(await store.takeLeaseRead("s1", 60_000, 0))).toBe("not-found");
      expect(value(await store.getLease(l.id))).toMatchObject({ id: l.id, remaining: 0, revoked: false });
      expect(value(await store.getLease("nope"))).toBeNull();
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

    it("takes reads from the newest usable lease until its budget is spent", async () => {
      value(await store.touchSession("s1", "c1"));
      const l = value(await store.openLease(lease(2)));
      expect(l.remaining).toBe(2);
      expect(l.revoked).toBe(false);
      expect(value(await store.takeLeaseRead("s1", 60_000))?.remaining).toBe(1);
      expect(value(await store.takeLeaseRead("s1", 60_000))?.remaining).toBe(0);
      expect(value(await store.takeLeaseRead("s1", 60_000))).toBeNull();
      clock.advance(1);
      const newer = value(await store.openLease(lease(5)));
      expect(value(await store.takeLeaseRead("s1", 60_000))?.id).toBe(newer.id);
      expect(value(await store.takeLeaseRead("s2", 60_000))).toBeNull();
    });

    it("a lease stops at its expiry, at the session's idle bound and when the session ends", async () => {
      value(await store.touchSession("s1", "c1"));
      value(await store.openLease(lease(10, 1000)));
      clock.advance(999);
      expect(value(await store.takeLeaseRead("s1", 60_000))).not.toBeNull();
      clock.advance(1);
      expect(value(await store.takeLeaseRead("s1", 60_000))).toBeNull();

      value(await store.touchSession("s1", "c1"));
      value(await store.openLease(lease(10, 3_600_000)));
      clock.advance(500);
      // A granted read is activity: it moves the session's last-seen time.
      expect(value(await store.takeLeaseRead("s1", 500))).not.toBeNull();
      expect(value(await store.listSessions())[0]?.lastSeenAt).toBe(clock.now());
      clock.advance(500);
      expect(value(await store.takeLeaseRead("s1", 500))).not.toBeNull();
      clock.advance(501);
      expect(value(await store.takeLeaseRead("s1", 500))).toBeNull();
      value(await store.touchSession("s1", "c1"));
      expect(value(await store.takeLeaseRead("s1", 500))).not.toBeNull();

      value(await store.endSession("s1"));
      expect(value(await store.takeLeaseRead("s1", 500))).toBeNull();
      expect(value(await store.listLeases()).every((x) => x.revoked)).toBe(true);
      // An ended session stays ended, and takes no new lease.
      expect(value(await store.touchSession("s1", "c1")).endedAt).toBe(clock.now());
      expect(failure(await store.openLease(lease()))).toBe("expired");
      expect(failure(await store.endSession("nope"))).toBe("not-found");
    });

    it("openLease needs a live session and a budget of at least one", async () => {
      expect(failure(await store.openLease(lease()))).toBe("not-found");
      value(await store.touchSession("s1", "c1"));
      expect(failure(await store.openLease(lease(0)))).toBe("unavailable");
      expect(failure(await store.openLease({ ...lease(), mode: "forever" as "window" }))).toBe("unavailable");
    });

    it("revokes by lease id, by session id (ending it) and all at once", async () => {
      value(await store.touchSession("s1", "c1"));
      value(await store.touchSession("s2", "c1"));
      const a = value(await store.openLease(lease(5, 90_000, "s1")));
      value(await store.openLease(lease(5, 90_000, "s1")));
      value(await store.openLease(lease(5, 90_000, "s2")));
      expect(value(await store.revoke(a.id))).toBe(1);
      expect(value(await store.revoke(a.id))).toBe(0);
      expect(value(await store.revoke("s1"))).toBe(1);
      expect(value(await store.takeLeaseRead("s1", 60_000))).toBeNull();
      expect(value(await store.listSessions()).find((s) => s.id === "s1")?.endedAt).toBe(T0);
      expect(value(await store.takeLeaseRead("s2", 60_000))).not.toBeNull();
      expect(value(await store.revokeAll())).toBe(1);
      expect(value(await store.takeLeaseRead("s2", 60_000))).toBeNull();
      expect(failure(await store.revoke("unknown"))).toBe("not-found");
    });
  });

  describe("prune and close", () => {
    it("deletes only what expired more than the grace ago", async () => {
      const r = value(await store.createRequest(newRequest(ACT, 10)));
      value(await store.approve(r.id, PROOF));
      value(await store.consume(r.id, r.nonce));
      value(await store.touchSession("s1", "c1"));
      value(
        await store.openLease({
          session: "s1",
          openedBy: r.id,
          mode: "window",
          createdAt: T0,
          expiresAt: T0 + 10_000,
          remaining: 1,
        }),
      );
      clock.advance(10_000 + 60_000);
      expect(value(await store.prune(60_000))).toBe(0);
      clock.advance(1);
      // The request, its nonce, the lease, and the session idle past the grace with no lease left.
      expect(value(await store.prune(60_000))).toBe(4);
      expect(failure(await store.getRequest(r.id))).toBe("not-found");
      expect(value(await store.listLeases())).toEqual([]);
      expect(value(await store.listSessions())).toEqual([]);
    });

    it("every method after close is unavailable, never a throw", async () => {
      await store.close();
      await store.close();
      expect(failure(await store.listRequests())).toBe("unavailable");
      expect(failure(await store.createRequest(newRequest()))).toBe("unavailable");
      expect(failure(await store.consume("0123456789", "0".repeat(32)))).toBe("unavailable");
    });
  });
});
