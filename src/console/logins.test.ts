import { describe, expect, it } from "vitest";
import type { Clock } from "../core/index.js";
import { absoluteLifetimeSeconds, createLoginLimiter, createLoginStore, sameSecret } from "./logins.js";

function manualClock(): Clock & { advance(ms: number): void } {
  let now = 1_000_000;
  return {
    now: () => now,
    monotonic: () => now,
    advance(ms) {
      now += ms;
    },
  };
}

describe("console sessions", () => {
  it("end after the idle limit without a request", () => {
    const clock = manualClock();
    const store = createLoginStore(60, clock);
    const { id } = store.create("alice", "cred");
    clock.advance(59_000);
    expect(store.use(id)?.passkey).toBe("alice");
    clock.advance(59_000);
    expect(store.use(id)).not.toBeNull();
    clock.advance(60_000);
    expect(store.use(id)).toBeNull();
    expect(store.size).toBe(0);
  });

  it("end at the absolute limit however busy", () => {
    const clock = manualClock();
    const store = createLoginStore(60, clock);
    const { id } = store.create("alice", "cred");
    const lifetime = absoluteLifetimeSeconds(60) * 1000;
    for (let t = 0; t + 30_000 < lifetime; t += 30_000) {
      clock.advance(30_000);
      expect(store.use(id)).not.toBeNull();
    }
    clock.advance(30_000);
    expect(store.use(id)).toBeNull();
    expect(absoluteLifetimeSeconds(86400)).toBe(86400);
  });

  it("give each login its own token and CSRF token; ending one leaves the other", () => {
    const store = createLoginStore(900, manualClock());
    const a = store.create("alice", "c1");
    const b = store.create("bob", "c2");
    expect(a.id).not.toBe(b.id);
    expect(a.session.csrf).not.toBe(b.session.csrf);
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    store.end(a.id);
    expect(store.use(a.id)).toBeNull();
    expect(store.use(b.id)?.passkey).toBe("bob");
  });
});

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
