import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { createFailureThrottle, sourceOf } from "./http-throttle.js";

function clock() {
  let now = 0;
  return { now: () => now, monotonic: () => now, advance: (ms: number) => (now += ms) };
}

describe("failure throttle", () => {
  it("refuses a source after maxFailures in a window and lets it back when the window ends", () => {
    const c = clock();
    const t = createFailureThrottle({ maxFailures: 3, windowMs: 1000, maxSources: 10 }, c);
    for (let i = 0; i < 3; i++) {
      expect(t.blockedFor("a")).toBe(0);
      t.fail("a");
    }
    expect(t.blockedFor("a")).toBe(1000);
    expect(t.blockedFor("b")).toBe(0);
    c.advance(600);
    expect(t.blockedFor("a")).toBe(400);
    c.advance(400);
    expect(t.blockedFor("a")).toBe(0);
    t.fail("a");
    expect(t.blockedFor("a")).toBe(0);
  });

  it("keeps memory bounded by forgetting the oldest source", () => {
    const c = clock();
    const t = createFailureThrottle({ maxFailures: 1, windowMs: 1000, maxSources: 2 }, c);
    t.fail("a");
    t.fail("b");
    t.fail("c");
    expect(t.blockedFor("a")).toBe(0);
    expect(t.blockedFor("b")).toBeGreaterThan(0);
    expect(t.blockedFor("c")).toBeGreaterThan(0);
  });

  it("charges the proxy's last X-Forwarded-For hop only when the peer is loopback", () => {
    const req = (peer: string, xff?: string) =>
      ({
        socket: { remoteAddress: peer },
        headers: xff ? { "x-forwarded-for": xff } : {},
      }) as unknown as IncomingMessage;
    expect(sourceOf(req("127.0.0.1", "6.6.6.6, 203.0.113.9"))).toBe("203.0.113.9");
    expect(sourceOf(req("::1", "203.0.113.9"))).toBe("203.0.113.9");
    expect(sourceOf(req("198.51.100.2", "203.0.113.9"))).toBe("198.51.100.2");
    expect(sourceOf(req("127.0.0.1"))).toBe("127.0.0.1");
  });
});
