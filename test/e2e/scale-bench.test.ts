import { describe, expect, it } from "vitest";
import { createScaleBench } from "../../bench/scale.bench.js";
import { CONSENT_SKIP_REASON } from "../helpers/consent.js";
import { POSTGRES_SKIP_REASON } from "../helpers/postgres.js";
import { HAPROXY_SKIP_REASON } from "../helpers/relays.js";

const SKIP = CONSENT_SKIP_REASON ?? POSTGRES_SKIP_REASON ?? HAPROXY_SKIP_REASON;

/**
 * The scale benchmark at a small size (`npm run bench -- scale` runs it at full size): it must
 * measure every figure, with no failed call, so that a full run is worth its minutes.
 */
describe.skipIf(SKIP !== null)("the scale benchmark, small", () => {
  it("measures three, two and one relay in open mode and under a lease, and the database's added cost", async () => {
    const figures = await createScaleBench({ clients: 4, seconds: 1, samples: 20 }).run();
    const named = new Map(figures.map((f) => [f.name, f]));
    for (const label of ["open mode", "reads under a lease"]) {
      for (const up of [3, 2, 1]) {
        expect(named.get(`${label}, ${up} relay(s): calls/s`)?.value, `${label} ${up}`).toBeGreaterThan(0);
        expect(Number.isFinite(named.get(`${label}, ${up} relay(s): p99`)?.value)).toBe(true);
        expect(named.get(`${label}, ${up} relay(s): failed calls`)?.value, `${label} ${up}`).toBe(0);
      }
    }
    expect(Number.isFinite(named.get("added by PostgreSQL at p50")?.value)).toBe(true);
    expect(named.get("leased read on PostgreSQL (median)")?.value).toBeGreaterThan(0);
    expect(named.get("leased reads/s the shared store serves (no relay in front)")?.value).toBeGreaterThan(0);
  }, 240_000);
});
