import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { localBackend, type MakeLogins, postgresBackend } from "../../test/helpers/shared-state.js";
import { absoluteLifetimeSeconds, createLoginLimiter, MAX_LOGINS, sameSecret } from "./logins.js";

/**
 * The login store's contract: one list of behaviours, run against the memory of one relay and
 * the PostgreSQL table several relays share.
 */

for (const backend of [localBackend(), postgresBackend()]) {
  describe.skipIf(backend.skip !== null)(`console logins: ${backend.name}`, () => {
    let make: MakeLogins;
    beforeAll(() => backend.start(), 120_000);
    afterAll(() => backend.stop());
    beforeEach(async () => {
      make = await backend.logins();
    });

    it("end after the idle limit without a request", async () => {
      const clock = manualClock();
      const store = make(60, clock);
      const { id } = await store.create("alice", "cred");
      clock.advance(59_000);
      expect((await store.use(id))?.passkey).toBe("alice");
      clock.advance(59_000);
      expect(await store.use(id)).not.toBeNull();
      clock.advance(60_000);
      expect(await store.use(id)).toBeNull();
      expect(await store.count()).toBe(0);
    });

    it("end at the absolute limit however busy", async () => {
      const clock = manualClock();
      const store = make(60, clock);
      const { id } = await store.create("alice", "cred");
      const lifetime = absoluteLifetimeSeconds(60) * 1000;
      for (let t = 0; t + 30_000 < lifetime; t += 30_000) {
        clock.advance(30_000);
        expect(await store.use(id)).not.toBeNull();
      }
      clock.advance(30_000);
      expect(await store.use(id)).toBeNull();
      expect(absoluteLifetimeSeconds(86400)).toBe(86400);
    });

    it("give each login its own token and CSRF token; ending one leaves the other", async () => {
      const store = make(900, manualClock());
      const a = await store.create("alice", "c1");
      const b = await store.create("bob", "c2");
      expect(a.id).not.toBe(b.id);
      expect(a.login.csrf).not.toBe(b.login.csrf);
      expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(await store.count()).toBe(2);
      await store.end(a.id);
      expect(await store.use(a.id)).toBeNull();
      expect(await store.use(b.id)).toMatchObject({
        passkey: "bob",
        credentialId: "c2",
        csrf: b.login.csrf,
      });
      expect(await store.use("not-a-login")).toBeNull();
    });

    it(`keep at most ${MAX_LOGINS} open logins, the oldest going first`, async () => {
      const clock = manualClock();
      const store = make(900, clock);
      const ids: string[] = [];
      for (let i = 0; i <= MAX_LOGINS; i += 1) {
        ids.push((await store.create(`op-${i}`, `cred-${i}`)).id);
        clock.advance(1);
      }
      expect(await store.count()).toBe(MAX_LOGINS);
      expect(await store.use(ids[0] as string)).toBeNull();
      expect((await store.use(ids[1] as string))?.passkey).toBe("op-1");
      expect((await store.use(ids[MAX_LOGINS] as string))?.passkey).toBe(`op-${MAX_LOGINS}`);
    });
  });
}

describe("sameSecret", () => {
  it("accepts only the identical string", () => {
    expect(sameSecret("abc", "abc")).toBe(true);
    expect(sameSecret("abc", "abd")).toBe(false);
    expect(sameSecret("abc", "abcd")).toBe(false);
    expect(sameSecret("", "abc")).toBe(false);
  });
});

describe("the login limiter", () => {
  it("refuses past the limit in a sliding minute and says how long to wait", () => {
    const clock = manualClock();
    const limiter = createLoginLimiter(3, clock);
    expect([limiter.attempt(), limiter.attempt(), limiter.attempt()]).toEqual([0, 0, 0]);
    clock.advance(20_000);
    expect(limiter.attempt()).toBe(40);
    clock.advance(40_000);
    expect(limiter.attempt()).toBe(0);
  });
});
