import type { Clock } from "../../src/core/index.js";

/** A clock that moves only when a test advances it: wall time and monotonic time together. */
export function manualClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start;
  return {
    now: () => now,
    monotonic: () => now,
    advance(ms) {
      now += ms;
    },
  };
}
