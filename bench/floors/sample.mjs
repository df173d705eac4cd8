// The one sampling loop of the floors: warm up, time `sequential` runs one after another, then run
// `total` with `inFlight` at once and give the rate and what the whole machine spent meanwhile.
// Imports nothing, so a floor stays lean.
import { readFileSync } from "node:fs";

/** Milliseconds of CPU the machine has spent (all CPUs), busy and in all; NaN without /proc/stat. */
export function machineCpu() {
  try {
    const fields = readFileSync("/proc/stat", "utf8")
      .split("\n", 1)[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal: in USER_HZ ticks, 100 a second on Linux.
    const total = fields.slice(0, 8).reduce((sum, n) => sum + n, 0) * 10;
    const idle = ((fields[3] ?? 0) + (fields[4] ?? 0)) * 10;
    return { busyMs: total - idle, totalMs: total };
  } catch {
    return { busyMs: Number.NaN, totalMs: Number.NaN };
  }
}

/** Run `once` `total` times, `inFlight` at a time: calls/s, machine CPU ms per call, busy fraction. */
export async function inFlightSample(once, total, inFlight) {
  let next = 0;
  const lane = async () => {
    while (next < total) {
      next++;
      await once();
    }
  };
  const before = machineCpu();
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  const seconds = (performance.now() - start) / 1000;
  const after = machineCpu();
  const busyMs = after.busyMs - before.busyMs;
  return { rate: total / seconds, cpuMs: busyMs / total, busy: busyMs / (after.totalMs - before.totalMs) };
}

export async function sample(once, { sequential, total, inFlight, warmup }) {
  for (let i = 0; i < warmup; i++) await once();
  const times = [];
  for (let i = 0; i < sequential; i++) {
    const start = performance.now();
    await once();
    times.push(performance.now() - start);
  }
  return { times, ...(await inFlightSample(once, total, inFlight)) };
}
