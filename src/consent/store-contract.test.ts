import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { type ConsentWorld, localBackend, postgresBackend, value } from "../../test/helpers/shared-state.js";
import { cryptoIds, type Ids } from "../core/index.js";
import { actDigest, consentPayload } from "./payload.js";
import type { ConsentAct, ConsentStore, NewRequest, StoredApproval, StoreResult } from "./types.js";

/**
 * The consent store's contract: one list of behaviours, run against every store (SQLite, the
 * embedded default, and PostgreSQL, for several relays on one database). A store that passes
 * it refuses and answers exactly as the other does.
 */

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);

/** Counter-based ids: each draw is unique and predictable; `replay` makes the next draw repeat one. */
function countingIds(): Ids & { replay(hex: string): void } {
  let n = 0;
  const queued: string[] = [];
  const next = (bytes: number): string => {
    n += 1;
    return n.toString(16).padStart(bytes * 2, "0");
  };
  return { hex: (bytes) => queued.shift() ?? next(bytes), token: next, replay: (hex) => queued.push(hex) };
}

async function failure<T>(pending: Promise<StoreResult<T>>): Promise<string> {
  const result = await pending;
  if (result.ok) throw new Error("expected a refusal, got ok");
  return result.error.failure;
}

const ACT: ConsentAct = { tool: "shell_exec", tier: 2, bound: { command: "touch /tmp/x", cwd: "/srv" } };
const OTHER: ConsentAct = { ...ACT, bound: { command: "rm /tmp/y", cwd: "/srv" } };

function newRequest(act = ACT, ttlSeconds = 300, session = "s1"): NewRequest {
  return { act, actDigest: actDigest(act), basis: "write: touch", session, clientId: "c1", ttlSeconds };
}

const PROOF: StoredApproval = {
  channel: "sshsig",
  proof: "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
  claimedSigner: "SHA256:abc",
  at: T0,
};

for (const backend of [localBackend(), postgresBackend()]) {
  describe.skipIf(backend.skip !== null)(`the consent store contract: ${backend.name}`, () => {
    let clock: ReturnType<typeof manualClock>;
    let ids: ReturnType<typeof countingIds>;
    let world: ConsentWorld;
    let store: ConsentStore;

    beforeAll(() => backend.start());
    afterAll(() => backend.stop());
    beforeEach(async () => {
      clock = manualClock(T0);
      ids = countingIds();
      world = await backend.consent(clock, ids);
      store = world.store;
    });
    afterEach(() => world.dispose());

    const lease = (remaining = 3, ttlMs = 90_000, session = "s1") => ({
      session,
      openedBy: "0000000001",
      mode: "window" as const,
      createdAt: clock.now(),
      expiresAt: clock.now() + ttlMs,
      remaining,
    });

    it("shares one instance id among every store on the database", async () => {
      expect(store.instanceId).toMatch(/^[0-9a-f]{16}$/);
      expect((await world.another(cryptoIds)).instanceId).toBe(store.instanceId);
    });

    describe("requests", () => {
      it("createRequest fixes a short id, a 32-hex nonce and the exact payload", async () => {
        const r = value(await store.createRequest(newRequest()));
        expect(r.id).toMatch(/^[0-9a-f]{10}$/);
        expect(r.nonce).toMatch(/^[0-9a-f]{32}$/);
        expect(r).toMatchObject({ status: "pending", expiresAt: T0 + 300_000, createdAt: T0, act: ACT });
        const fields = { request: r.id, nonce: r.nonce, expiresAt: r.expiresAt, instance: store.instanceId };
        expect(r.payload).toBe(consentPayload(ACT, fields));
        expect(value(await store.getRequest(r.id))).toEqual(r);
      });

      it("draws again when an id is taken", async () => {
        const first = value(await store.createRequest(newRequest()));
        ids.replay(first.id);
        expect(value(await store.createRequest(newRequest())).id).not.toBe(first.id);
      });

      it("refuses a digest that is not the act's, a lifetime out of range and a malformed act", async () => {
        expect(await failure(store.createRequest({ ...newRequest(), actDigest: "0".repeat(64) }))).toBe(
          "unavailable",
        );
        for (const ttl of [0, Number.NaN, 86_401]) {
          expect(await failure(store.createRequest(newRequest(ACT, ttl)))).toBe("unavailable");
        }
        const odd = { tool: "shell_exec", tier: 7, bound: {} } as unknown as ConsentAct;
        expect(await failure(store.createRequest(newRequest(odd)))).toBe("unavailable");
        expect(value(await store.listRequests())).toEqual([]);
      });

      it("getRequest of an unknown or malformed id is not-found", async () => {
        expect(await failure(store.getRequest("0123456789"))).toBe("not-found");
        expect(await failure(store.getRequest("x'; DROP TABLE requests; --"))).toBe("not-found");
      });

      it("lists live requests oldest first and finds approved and open ones", async () => {
        const a = value(await store.createRequest(newRequest()));
        clock.advance(1);
        const b = value(await store.createRequest(newRequest(OTHER)));
        clock.advance(1);
        const c = value(await store.createRequest(newRequest(ACT, 1)));
        expect(value(await store.listRequests()).map((r) => r.id)).toEqual([a.id, b.id, c.id]);
        expect(value(await store.findOpen(actDigest(ACT), "s1"))?.id).toBe(c.id);
        expect(value(await store.findOpen(actDigest(ACT), "s2"))).toBeNull();
        expect(value(await store.findApproved(actDigest(ACT)))).toBeNull();
        value(await store.approve(a.id, PROOF));
        expect(value(await store.findApproved(actDigest(ACT)))?.id).toBe(a.id);
        expect(value(await store.findApproved(actDigest(OTHER)))).toBeNull();
        value(await store.deny(b.id, "op", "no"));
        expect(value(await store.findOpen(actDigest(OTHER), "s1"))?.status).toBe("denied");
        clock.advance(1000);
        expect(value(await store.listRequests()).map((r) => r.id)).toEqual([a.id]);
        clock.advance(300_000);
        expect(value(await store.listRequests())).toEqual([]);
        expect(value(await store.findApproved(actDigest(ACT)))).toBeNull();
        expect(value(await store.findOpen(actDigest(OTHER), "s1"))).toBeNull();
      });

      it("bounds the requests waiting for a decision, per session and in all", async () => {
        const bounded = (session: string): NewRequest => ({
          ...newRequest(ACT, 300, session),
          maxPending: { session: 2, total: 3 },
        });
        value(await store.createRequest(bounded("s1")));
        const second = value(await store.createRequest(bounded("s1")));
        expect(await failure(store.createRequest(bounded("s1")))).toBe("full");
        value(await store.createRequest(bounded("s2")));
        const full = await store.createRequest(bounded("s3"));
        expect(full.ok ? "" : full.error.detail).toBe(
          "the relay already has 3 requests waiting for a decision (at most 3)",
        );
        // A decision frees a place.
        value(await store.deny(second.id, "op", "no"));
        value(await store.createRequest(bounded("s1")));
      });
    });

    describe("approve, deny and consume", () => {
      it("approves a pending request, then consumes it once with its nonce", async () => {
        const r = value(await store.createRequest(newRequest()));
        const approved = value(await store.approve(r.id, PROOF));
        expect(approved).toMatchObject({ status: "approved", approval: PROOF });
        const other = { ...PROOF, proof: "another proof" };
        expect(value(await store.approve(r.id, other)).approval).toEqual(other);
        value(await store.approve(r.id, PROOF));
        clock.advance(5);
        const used = value(await store.consume(r.id, r.nonce));
        expect(used).toMatchObject({ status: "consumed", consumedAt: T0 + 5 });
        expect(await failure(store.consume(r.id, r.nonce))).toBe("consumed");
        expect(await failure(store.approve(r.id, PROOF))).toBe("consumed");
        expect(await failure(store.deny(r.id, "op", "late"))).toBe("consumed");
        expect(value(await store.consumeNonce(r.nonce, T0 + 300_000))).toBe(false);
      });

      it("refuses a wrong nonce, an unapproved request and an unknown id", async () => {
        const r = value(await store.createRequest(newRequest()));
        expect(await failure(store.consume(r.id, r.nonce))).toBe("not-approved");
        value(await store.approve(r.id, PROOF));
        const wrong = await store.consume(r.id, "f".repeat(32));
        expect(wrong).toEqual({
          ok: false,
          error: {
            failure: "not-found",
            detail: `request ${r.id} has another nonce`,
          },
        });
        expect(await failure(store.consume("abcdefabcd", r.nonce))).toBe("not-found");
        expect(value(await store.getRequest(r.id)).status).toBe("approved");
      });

      it("an expired request can be neither approved, denied nor consumed", async () => {
        const r = value(await store.createRequest(newRequest(ACT, 10)));
        const s = value(await store.createRequest(newRequest(ACT, 10)));
        value(await store.approve(s.id, PROOF));
        clock.advance(9_999);
        const t = value(await store.createRequest(newRequest(ACT, 10)));
        clock.advance(1);
        expect(await failure(store.approve(r.id, PROOF))).toBe("expired");
        expect(await failure(store.consume(s.id, s.nonce))).toBe("expired");
        expect(await failure(store.deny(r.id, "op", "late"))).toBe("expired");
        expect(value(await store.approve(t.id, PROOF)).status).toBe("approved");
      });

      it("a denied request can be neither approved nor consumed; an unused approval can be withdrawn", async () => {
        const r = value(await store.createRequest(newRequest()));
        const denied = value(await store.deny(r.id, "alice", "wrong host"));
        expect(denied.denial).toEqual({ by: "alice", reason: "wrong host", at: T0 });
        expect(await failure(store.approve(r.id, PROOF))).toBe("not-pending");
        expect(await failure(store.consume(r.id, r.nonce))).toBe("not-approved");
        expect(await failure(store.deny(r.id, "alice", "again"))).toBe("not-pending");
        const s = value(await store.createRequest(newRequest()));
        value(await store.approve(s.id, PROOF));
        expect(value(await store.deny(s.id, "alice", "changed my mind")).status).toBe("denied");
        expect(await failure(store.consume(s.id, s.nonce))).toBe("not-approved");
      });

      it("refuses an approval without a proof or with an unknown channel", async () => {
        const r = value(await store.createRequest(newRequest()));
        expect(await failure(store.approve(r.id, { ...PROOF, proof: "" }))).toBe("unavailable");
        const bad = { ...PROOF, channel: "email" } as unknown as StoredApproval;
        expect(await failure(store.approve(r.id, bad))).toBe("unavailable");
        expect(value(await store.getRequest(r.id)).status).toBe("pending");
      });

      it("a nonce recorded by consumeNonce cannot be consumed again, here or from another store", async () => {
        const r = value(await store.createRequest(newRequest()));
        value(await store.approve(r.id, PROOF));
        const other = await world.another(cryptoIds);
        expect(value(await other.consumeNonce(r.nonce, r.expiresAt))).toBe(true);
        expect(await failure(store.consume(r.id, r.nonce))).toBe("consumed");
        expect(value(await store.getRequest(r.id)).status).toBe("approved");
        expect(value(await store.consumeNonce("foreign-1", T0 + 1000))).toBe(true);
        expect(value(await other.consumeNonce("foreign-1", T0 + 1000))).toBe(false);
        expect(await failure(store.consumeNonce("", T0))).toBe("unavailable");
        expect(await failure(store.consumeNonce("x".repeat(257), T0))).toBe("unavailable");
      });

      it("a row edited into nonsense is a refusal, not a guess", async () => {
        const r = value(await store.createRequest(newRequest()));
        await world.corruptAct(r.id);
        const result = await store.getRequest(r.id);
        expect(result.ok ? "" : result.error.failure).toBe("unavailable");
        if (!result.ok) expect(result.error.detail).toMatch(/damaged: the act of request .* is not JSON/);
      });
    });

    describe("sessions and leases", () => {
      it("touchSession creates then refreshes; another client cannot share it", async () => {
        const s = value(await store.touchSession("s1", "c1"));
        expect(s).toEqual({ id: "s1", clientId: "c1", startedAt: T0, lastSeenAt: T0 });
        clock.advance(10);
        expect(value(await store.touchSession("s1", "c1")).lastSeenAt).toBe(T0 + 10);
        expect(await failure(store.touchSession("s1", "c2"))).toBe("not-found");
        expect(await failure(store.touchSession("", "c1"))).toBe("not-found");
        expect(value(await store.listSessions()).map((x) => x.id)).toEqual(["s1"]);
      });

      it("takes several reads in one transaction, never more than the lease has left", async () => {
        value(await store.touchSession("s1", "c1"));
        const l = value(await store.openLease(lease(5)));
        expect(l).toMatchObject({ remaining: 5, revoked: false, mode: "window", session: "s1" });
        expect(value(await store.takeLeaseRead("s1", 60_000, 3))).toMatchObject({
          id: l.id,
          taken: 3,
          remaining: 2,
        });
        expect(value(await store.takeLeaseRead("s1", 60_000, 8))).toMatchObject({ taken: 2, remaining: 0 });
        expect(value(await store.takeLeaseRead("s1", 60_000, 8))).toBeNull();
        expect(await failure(store.takeLeaseRead("s1", 60_000, 0))).toBe("not-found");
        expect(value(await store.getLease(l.id))).toMatchObject({ id: l.id, remaining: 0, revoked: false });
        expect(value(await store.getLease("nope"))).toBeNull();
      });

      it("takes reads from the newest usable lease until its budget is spent", async () => {
        value(await store.touchSession("s1", "c1"));
        value(await store.openLease(lease(2)));
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
        expect(await failure(store.openLease(lease()))).toBe("expired");
        expect(await failure(store.endSession("nope"))).toBe("not-found");
      });

      it("openLease needs a live session and a budget of at least one", async () => {
        expect(await failure(store.openLease(lease()))).toBe("not-found");
        value(await store.touchSession("s1", "c1"));
        expect(await failure(store.openLease(lease(0)))).toBe("unavailable");
        expect(await failure(store.openLease({ ...lease(), mode: "forever" as "window" }))).toBe(
          "unavailable",
        );
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
        expect(await failure(store.revoke("unknown"))).toBe("not-found");
      });

      it("the change counter holds for its own writes and moves when another store revokes", async () => {
        const other = await world.another(cryptoIds);
        value(await store.touchSession("s1", "c1"));
        const mine = value(await store.openLease(lease(5)));
        clock.advance(1);
        const l = value(await store.openLease(lease(5)));
        const start = value(await store.changeCounter());
        expect(value(await store.takeLeaseRead("s1", 60_000, 2))?.id).toBe(l.id);
        expect(value(await store.revoke(mine.id))).toBe(1);
        expect(value(await store.changeCounter())).toBe(start);
        value(await other.revoke(l.id));
        const after = value(await store.changeCounter());
        expect(after).not.toBe(start);
        expect(value(await store.changeCounter())).toBe(after);
        expect(value(await store.getLease(l.id))?.revoked).toBe(true);
      });
    });

    describe("prune and close", () => {
      it("deletes only what expired more than the grace ago", async () => {
        const r = value(await store.createRequest(newRequest(ACT, 10)));
        value(await store.approve(r.id, PROOF));
        value(await store.consume(r.id, r.nonce));
        value(await store.touchSession("s1", "c1"));
        value(await store.openLease({ ...lease(1, 10_000), openedBy: r.id }));
        clock.advance(10_000 + 60_000);
        expect(value(await store.prune(60_000))).toBe(0);
        clock.advance(1);
        // The request, its nonce, the lease, and the session idle past the grace with no lease left.
        expect(value(await store.prune(60_000))).toBe(4);
        expect(await failure(store.getRequest(r.id))).toBe("not-found");
        expect(value(await store.listLeases())).toEqual([]);
        expect(value(await store.listSessions())).toEqual([]);
      });

      it("every method after close is unavailable, never a rejection", async () => {
        await store.close();
        await store.close();
        expect(await failure(store.listRequests())).toBe("unavailable");
        expect(await failure(store.createRequest(newRequest()))).toBe("unavailable");
        expect(await failure(store.consume("0123456789", "0".repeat(32)))).toBe("unavailable");
        expect(await failure(store.changeCounter())).toBe("unavailable");
      });
    });
  });
}
