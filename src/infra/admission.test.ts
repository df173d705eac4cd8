import { describe, expect, it } from "vitest";
import type { Clock } from "../core/index.js";
import { type AdmissionConfig, createAdmission } from "./admission.js";

/** A clock that moves only when the test says. */
function manualClock(): Clock & { advance(ms: number): void } {
  let at = 1_000_000;
  return {
    now: () => at,
    monotonic: () => at,
    advance(ms) {
      at += ms;
    },
  };
}

const CONFIG: AdmissionConfig = {
  knownFrames: { perSecond: 10, burst: 5 },
  strangerFrames: { perSecond: 2, burst: 3 },
  strangersTogether: { perSecond: 4, burst: 4 },
  refusalReceipts: { perSecond: 1, burst: 2 },
};

/** How many frames `uid` is served before it must wait. */
function served(take: () => number): number {
  let n = 0;
  while (take() === 0) n += 1;
  return n;
}

describe("createAdmission", () => {
  it("serves a uid its burst, then one frame per token, saying how long to wait", () => {
    const clock = manualClock();
    const admission = createAdmission({ clock }, CONFIG);
    expect(served(() => admission.frame(1000, true))).toBe(5);
    expect(admission.frame(1000, true)).toBe(100);
    clock.advance(99);
    expect(admission.frame(1000, true)).toBe(1);
    clock.advance(1);
    expect(admission.frame(1000, true)).toBe(0);
    // Another uid has its own bucket.
    expect(served(() => admission.frame(1001, true))).toBe(5);
  });

  it("gives strangers a smaller budget per uid and one they share, apart from known principals", () => {
    const clock = manualClock();
    const admission = createAdmission({ clock }, CONFIG);
    expect(served(() => admission.frame(2000, false))).toBe(3);
    // The shared budget had four; a second stranger account gets what is left of it.
    expect(served(() => admission.frame(2001, false))).toBe(1);
    expect(admission.frame(2002, false)).toBeGreaterThan(0);
    // A profile's principal is not slowed by them.
    expect(served(() => admission.frame(1000, true))).toBe(5);
    clock.advance(1000);
    expect(served(() => admission.frame(2002, false))).toBe(3);
  });

  it("gives a uid a few refusal receipts of its own, then one per second", () => {
    const clock = manualClock();
    const admission = createAdmission({ clock }, CONFIG);
    expect([1, 2, 3].map(() => admission.ownRefusalReceipt(7))).toEqual([true, true, false]);
    expect(admission.ownRefusalReceipt(8)).toBe(true);
    clock.advance(999);
    expect(admission.ownRefusalReceipt(7)).toBe(false);
    clock.advance(1);
    expect(admission.ownRefusalReceipt(7)).toBe(true);
  });
});
