import { describe, expect, it } from "vitest";
import { manualClock } from "../../test/helpers/clock.js";
import { createPendingLogins, type PendingLogins } from "./pending-logins.js";

function started(logins: PendingLogins, address: string): string {
  const result = logins.start(address);
  if ("retryAfter" in result) throw new Error(`refused, retry after ${result.retryAfter}`);
  return result.id;
}

describe("pending console logins", () => {
  it("are short-lived", () => {
    const clock = manualClock();
    const logins = createPendingLogins(clock);
    const id = started(logins, "127.0.0.1");
    expect(logins.get(id)?.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    clock.advance(5 * 60 * 1000);
    expect(logins.get(id)).toBeNull();
  });

  it("are rate-limited per client address, and say how long to wait", () => {
    const clock = manualClock();
    const logins = createPendingLogins(clock);
    for (let i = 0; i < 20; i++) started(logins, "127.0.0.1");
    const refused = logins.start("127.0.0.1");
    expect(refused).toEqual({ retryAfter: 60 });
    // Another address is not held up by this one.
    expect("id" in logins.start("127.0.0.2")).toBe(true);
    clock.advance(30_000);
    expect(logins.start("127.0.0.1")).toEqual({ retryAfter: 30 });
    clock.advance(30_000);
    expect("id" in logins.start("127.0.0.1")).toBe(true);
  });

  it("keep a login whose browser came back with its cookie, whatever a flood from the same address does", () => {
    const clock = manualClock();
    const logins = createPendingLogins(clock);
    const operator = started(logins, "127.0.0.1");
    // The operator's page loads its scripts with the cookie: the login is claimed.
    expect(logins.get(operator)).not.toBeNull();
    const unclaimed = started(logins, "127.0.0.1");
    // Four minutes of floods, each as fast as the limit lets it, from the operator's own address.
    for (let minute = 0; minute < 4; minute++) {
      for (let i = 0; i < 300; i++) logins.start("127.0.0.1");
      clock.advance(60_000);
    }
    expect(logins.get(operator)?.claimed).toBe(true);
    // The flood's own logins are bounded: the oldest unclaimed one of the address went.
    expect(logins.get(unclaimed)).toBeNull();
    expect(logins.size).toBeLessThanOrEqual(1 + 32);
  });

  it("stay bounded in all when many addresses flood", () => {
    const clock = manualClock();
    const logins = createPendingLogins(clock);
    const operator = started(logins, "10.0.0.1");
    logins.get(operator);
    for (let a = 0; a < 40; a++) for (let i = 0; i < 20; i++) logins.start(`10.1.0.${a}`);
    expect(logins.size).toBeLessThanOrEqual(1 + 256);
    expect(logins.get(operator)).not.toBeNull();
  });

  it("end when used", () => {
    const logins = createPendingLogins(manualClock());
    const id = started(logins, "127.0.0.1");
    logins.end(id);
    expect(logins.get(id)).toBeNull();
  });
});
