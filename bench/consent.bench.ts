import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  consentId,
  createConsentWorld,
} from "../test/helpers/consent.js";
import { timeEach } from "./harness.js";
import { type Bench, type BenchFigure, median, percentile } from "./types.js";

const SAMPLES = 400;
const WARMUP = 30;
/** The target: what the gate may add to a read under an open lease. */
const GATE_BUDGET_MS = 0.3;

async function timeOnce(once: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await once();
  return performance.now() - start;
}

/**
 * The consent gate's cost on a read that runs under an open window lease:
 * the same Tier-1 `shell_exec` through two built servers of one world (same
 * account, same settings), one with consent off and one with consent on and
 * a lease opened by a real signed read, interleaved call by call so load on
 * the machine hits both alike.
 */
export const consentBench: Bench = {
  name: "consent",
  async run(): Promise<BenchFigure[]> {
    if (CONSENT_SKIP_REASON) throw new Error(`cannot run: ${CONSENT_SKIP_REASON}`);
    const world = createConsentWorld();
    let off: ConsentRelay | undefined;
    let on: ConsentRelay | undefined;
    try {
      off = await world.startRelay({ RELAY_SHELL_CONSENT: "false" });
      on = await world.startRelay({
        RELAY_SHELL_CONSENT_LEASE_MODE: "window",
        RELAY_SHELL_CONSENT_LEASE_TTL: "86400",
        RELAY_SHELL_CONSENT_LEASE_BUDGET: "100000",
      });
      const read = { command: "echo read", cwd: world.work };
      const opened = await on.call("shell_exec", read);
      const approved = world.approve(consentId(opened.text));
      if (approved.status !== 0) throw new Error(`approve failed: ${approved.stderr}`);
      const expect = "[exit 0]\nread\n";
      const offRelay = off;
      const onRelay = on;
      const offOnce = async () => {
        const r = await offRelay.call("shell_exec", read);
        if (r.text !== expect) throw new Error(`consent off: ${r.text}`);
      };
      const onOnce = async () => {
        const r = await onRelay.call("shell_exec", read);
        if (r.text !== expect) throw new Error(`consent on: ${r.text}`);
      };
      await timeEach(WARMUP, offOnce);
      await timeEach(WARMUP, onOnce);
      const offTimes: number[] = [];
      const onTimes: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        offTimes.push(await timeOnce(offOnce));
        onTimes.push(await timeOnce(onOnce));
      }
      const added = median(onTimes) - median(offTimes);
      return [
        {
          name: "read, consent off (median)",
          value: median(offTimes),
          unit: "ms",
          target: "baseline",
          met: null,
        },
        {
          name: "read under an open window lease, consent on (median)",
          value: median(onTimes),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "read under a lease p95",
          value: percentile(onTimes, 95),
          unit: "ms",
          target: "reported",
          met: null,
        },
        {
          name: "consent gate on a leased read (difference of the medians)",
          value: added,
          unit: "ms",
          target: `<= ${GATE_BUDGET_MS}`,
          met: added <= GATE_BUDGET_MS,
        },
      ];
    } finally {
      await off?.close();
      await on?.close();
      world.cleanup();
    }
  },
};
