/** Time comes in through this seam so expiry and ordering are testable without sleeping. */
export interface Clock {
  /** Wall-clock milliseconds since the epoch (for timestamps). */
  now(): number;
  /** Monotonic milliseconds (for durations and expiry). */
  monotonic(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
};

/** ISO 8601 UTC with microseconds and `+00:00`, the shape of docs/wire-contract.md §6.1. */
export function isoTimestamp(epochMs: number): string {
  const d = new Date(epochMs);
  const base = d.toISOString(); // 2026-07-15T10:11:12.345Z
  const ms = d.getUTCMilliseconds();
  const head = base.slice(0, 19);
  return ms === 0 ? `${head}+00:00` : `${head}.${String(ms).padStart(3, "0")}000+00:00`;
}
