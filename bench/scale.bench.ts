import { openPgStore } from "../src/consent/index.js";
import { cryptoIds, systemClock } from "../src/core/index.js";
import { openPgState } from "../src/state/index.js";
import {
  CONSENT_SKIP_REASON,
  type ConsentRelay,
  type ConsentWorld,
  consentId,
  createConsentWorld,
} from "../test/helpers/consent.js";
import { POSTGRES_SKIP_REASON, type PostgresCluster, startPostgres } from "../test/helpers/postgres.js";
import {
  connectThrough,
  type FleetClient,
  HAPROXY_SKIP_REASON,
  RELAY_NAMES,
  type RelayFleet,
  startRelayFleet,
} from "../test/helpers/relays.js";
import { type Bench, type BenchFigure, median, percentile } from "./types.js";

/** How hard the scale bench pushes; the suite runs it small to check that it measures at all. */
export interface ScaleOptions {
  /** MCP sessions calling at once through the balancer. */
  clients: number;
  /** How long each load runs. */
  seconds: number;
  /** Interleaved leased reads on one SQLite and one PostgreSQL relay. */
  samples: number;
}

/** What a PostgreSQL-backed gated call may add to the same call on SQLite, at the median. */
const ADDED_BUDGET_MS = 1.5;
const LEASE = {
  RELAY_SHELL_CONSENT_LEASE_MODE: "window",
  RELAY_SHELL_CONSENT_LEASE_TTL: "86400",
  RELAY_SHELL_CONSENT_LEASE_BUDGET: "100000",
  RELAY_SHELL_CONSENT_WAIT: "0",
};

interface Load {
  callsPerSecond: number;
  p99: number;
  errors: number;
}

/** The operator's approval of request `id` on the shared state. */
function approveShared(world: ConsentWorld, id: string, stateUrl: string): void {
  const extra = { RELAY_SHELL_STATE_URL: stateUrl, RELAY_SHELL_INSTANCE: "operator" };
  const shown = world.cli(["show", id], extra);
  const digest = /^digest: +([0-9a-f]{64})$/m.exec(shown.stdout)?.[1] ?? "";
  const approved = world.cli(["approve", id, "--key", world.operatorKey, "--yes", "--digest", digest], extra);
  if (approved.status !== 0) throw new Error(`approve ${id} failed: ${approved.stderr}`);
}

/** `clients` sessions through the balancer calling `args` in a loop for `seconds`. */
async function load(
  fleet: RelayFleet,
  options: ScaleOptions,
  args: Record<string, unknown>,
  prepare: (client: FleetClient) => Promise<void>,
): Promise<Load> {
  const clients: FleetClient[] = [];
  try {
    for (let i = 0; i < options.clients; i += 1) clients.push(await connectThrough(fleet.base));
    for (const client of clients) await prepare(client);
    const times: number[] = [];
    let errors = 0;
    const end = performance.now() + options.seconds * 1000;
    await Promise.all(
      clients.map(async (client) => {
        while (performance.now() < end) {
          const start = performance.now();
          const answer = await client
            .call("shell_exec", args)
            .catch((err: unknown) => ({ text: String(err) }));
          if (answer.text.startsWith("[exit 0]")) times.push(performance.now() - start);
          else errors += 1;
        }
      }),
    );
    return { callsPerSecond: times.length / options.seconds, p99: percentile(times, 99), errors };
  } finally {
    await Promise.allSettled(clients.map((c) => c.close()));
  }
}

/** Measure with three relays, then two, then one (the others killed and seen down by the balancer). */
async function byRelayCount(
  fleet: RelayFleet,
  measure: () => Promise<Load>,
  label: string,
): Promise<BenchFigure[]> {
  const figures: BenchFigure[] = [];
  for (let up = RELAY_NAMES.length; up >= 1; up -= 1) {
    if (up < RELAY_NAMES.length) {
      const gone = (RELAY_NAMES as readonly string[])[up] ?? "";
      await fleet.kill(gone);
      await fleet.waitHealth([gone], false);
    }
    const result = await measure();
    figures.push(
      {
        name: `${label}, ${up} relay(s): calls/s`,
        value: result.callsPerSecond,
        unit: "/s",
        target: "reported",
        met: null,
      },
      { name: `${label}, ${up} relay(s): p99`, value: result.p99, unit: "ms", target: "reported", met: null },
      {
        name: `${label}, ${up} relay(s): failed calls`,
        value: result.errors,
        unit: "",
        target: "0",
        met: result.errors === 0,
      },
    );
  }
  return figures;
}

/** Open a lease for a relay's session: a signed read, then reads ride on it. */
async function leased(
  relay: ConsentRelay,
  world: ConsentWorld,
  read: Record<string, unknown>,
  url: string | null,
) {
  const asked = await relay.call("shell_exec", read);
  const id = consentId(asked.text);
  if (url === null) {
    const approved = world.approve(id);
    if (approved.status !== 0) throw new Error(`approve failed: ${approved.stderr}`);
  } else {
    approveShared(world, id, url);
  }
  const first = await relay.call("shell_exec", read);
  if (!first.text.startsWith("[exit 0]")) throw new Error(`no lease: ${first.text}`);
}

/** Leased reads on a relay with SQLite and on one with PostgreSQL, interleaved call by call. */
async function addedCost(
  world: ConsentWorld,
  pg: PostgresCluster,
  options: ScaleOptions,
): Promise<BenchFigure[]> {
  const url = await pg.createDatabase("scale_added");
  const read = { command: "echo read", cwd: world.work };
  let sqlite: ConsentRelay | undefined;
  let shared: ConsentRelay | undefined;
  try {
    sqlite = await world.startRelay(LEASE);
    shared = await world.startRelay({ ...LEASE, RELAY_SHELL_STATE_URL: url, RELAY_SHELL_INSTANCE: "bench" });
    await leased(sqlite, world, read, null);
    await leased(shared, world, read, url);
    const onSqlite: number[] = [];
    const onShared: number[] = [];
    for (let i = 0; i < options.samples; i += 1) {
      for (const [relay, times] of [
        [sqlite, onSqlite],
        [shared, onShared],
      ] as const) {
        const start = performance.now();
        const answer = await relay.call("shell_exec", read);
        if (answer.text !== "[exit 0]\nread\n") throw new Error(`leased read failed: ${answer.text}`);
        times.push(performance.now() - start);
      }
    }
    const added = median(onShared) - median(onSqlite);
    return [
      {
        name: "leased read on SQLite (median)",
        value: median(onSqlite),
        unit: "ms",
        target: "baseline",
        met: null,
      },
      {
        name: "leased read on PostgreSQL (median)",
        value: median(onShared),
        unit: "ms",
        target: "reported",
        met: null,
      },
      {
        name: "added by PostgreSQL at p50",
        value: added,
        unit: "ms",
        target: `<= ${ADDED_BUDGET_MS}`,
        met: added <= ADDED_BUDGET_MS,
      },
    ];
  } finally {
    await sqlite?.close();
    await shared?.close();
  }
}

/** Reads the gate takes from the store at once under a lease (runner/consent-gate.ts, LEASE_BLOCK). */
const LEASE_BLOCK = 8;

/**
 * What the shared store alone serves: `clients` consent sessions, each with its own lease, taking
 * leased reads as the gate does (a change-counter read per call, one transaction per block of
 * eight), with no relay in front. Its figure over the calls one relay makes gives the number of
 * relays one PostgreSQL primary can carry (docs/scaling.md).
 */
async function storeCapacity(pg: PostgresCluster, options: ScaleOptions): Promise<BenchFigure[]> {
  const opened = openPgState(await pg.createDatabase("scale_store"), { instance: "bench", poolMax: 32 });
  if (!opened.ok) throw new Error(opened.error.detail);
  const state = opened.value;
  try {
    const store = await openPgStore(state, { clock: systemClock, ids: cryptoIds });
    if (!store.ok) throw new Error(store.error.detail);
    const consent = store.value;
    const sessions = Array.from({ length: options.clients }, (_, i) => `bench-${i}`);
    for (const session of sessions) {
      const touched = await consent.touchSession(session, "bench");
      if (!touched.ok) throw new Error(touched.error.detail);
      const lease = await consent.openLease({
        session,
        openedBy: "bench",
        mode: "session",
        createdAt: systemClock.now(),
        expiresAt: Number.MAX_SAFE_INTEGER,
        remaining: 100_000_000,
      });
      if (!lease.ok) throw new Error(lease.error.detail);
    }
    let reads = 0;
    const end = performance.now() + options.seconds * 1000;
    await Promise.all(
      sessions.map(async (session) => {
        while (performance.now() < end) {
          const taken = await consent.takeLeaseRead(session, 3_600_000, LEASE_BLOCK);
          if (!taken.ok || taken.value === null) throw new Error("no lease read");
          for (let i = 0; i < LEASE_BLOCK; i += 1) {
            const counter = await consent.changeCounter();
            if (!counter.ok) throw new Error(counter.error.detail);
          }
          reads += LEASE_BLOCK;
        }
      }),
    );
    return [
      {
        name: "leased reads/s the shared store serves (no relay in front)",
        value: reads / options.seconds,
        unit: "/s",
        target: "reported",
        met: null,
      },
    ];
  } finally {
    await state.close();
  }
}

/**
 * Several relays on one PostgreSQL behind the shipped HAProxy configuration (docs/scaling.md):
 * throughput and tail latency with three, two and one relay, for calls in open mode and for reads
 * under a consent lease, and what the shared database adds to a gated call.
 */
export function createScaleBench(options: ScaleOptions): Bench {
  return {
    name: "scale",
    async run(): Promise<BenchFigure[]> {
      const skip = CONSENT_SKIP_REASON ?? POSTGRES_SKIP_REASON ?? HAPROXY_SKIP_REASON;
      if (skip) throw new Error(`cannot run: ${skip}`);
      const world = createConsentWorld();
      const pg = await startPostgres();
      const figures: BenchFigure[] = [];
      try {
        const openUrl = await pg.createDatabase("scale_open");
        const open = await startRelayFleet(world, openUrl, { RELAY_SHELL_CONSENT: "false" });
        try {
          const args = { command: "true" };
          figures.push(
            ...(await byRelayCount(
              open,
              () => load(open, options, args, async () => undefined),
              "open mode",
            )),
          );
        } finally {
          await open.stop();
        }
        const gatedUrl = await pg.createDatabase("scale_gated");
        const gated = await startRelayFleet(world, gatedUrl, LEASE);
        try {
          const read = { command: "echo read", cwd: world.work };
          // One session at a time: its signed read opens its own lease before the next one asks.
          const openLease = async (client: FleetClient) => {
            approveShared(world, consentId((await client.call("shell_exec", read)).text), gatedUrl);
            const first = await client.call("shell_exec", read);
            if (!first.text.startsWith("[exit 0]")) throw new Error(`no lease: ${first.text}`);
          };
          figures.push(
            ...(await byRelayCount(
              gated,
              () => load(gated, options, read, openLease),
              "reads under a lease",
            )),
          );
        } finally {
          await gated.stop();
        }
        figures.push(...(await addedCost(world, pg, options)));
        figures.push(...(await storeCapacity(pg, options)));
        return figures;
      } finally {
        await pg.stop();
        world.cleanup();
      }
    },
  };
}

export const scaleBench = createScaleBench({ clients: 64, seconds: 5, samples: 400 });
