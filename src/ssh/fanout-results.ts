import { cryptoIds, type Ids, RelayError, type RunOutcome } from "../core/index.js";

/** Fan-outs kept for follow-up calls; the oldest goes first past this count. */
const KEPT_FANOUTS = 16;
/** Bytes of output kept across every kept fan-out; the oldest go first past it. */
const KEPT_BYTES = 64 * 1024 * 1024;
/** Output one fan-out may keep, shared by its hosts: 32 KiB each at 1,000 hosts. */
export const FANOUT_KEPT_BYTES = 32 * 1024 * 1024;
/** How long a fan-out's outputs stay reachable. */
const KEPT_MS = 60 * 60 * 1000;

/** A fan-out's id: `fo-`, 12 hex digits and, when the relay has a name, `@<relay>` (like a terminal's). */
const FANOUT_ID = /^fo-[0-9a-f]{12}(?:@[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)?$/;

/** What one host of a fan-out did, as kept: its run, or why it has none. */
export interface KeptHostRun {
  host: string;
  result?: Pick<RunOutcome, "exitCode" | "timedOut" | "output" | "droppedBytes" | "totalBytes">;
  error?: unknown;
}

export interface KeptFanout {
  id: string;
  /** The client that ran it (ADR 0005's owner binding): "" lets any caller read it. */
  owner: string;
  command: string;
  /** Seconds per host, as the call clamped it. */
  timeout: number;
  runs: readonly KeptHostRun[];
}

export interface FanoutResults {
  /** A fresh id for a fan-out about to run. */
  newId(): string;
  keep(fanout: KeptFanout): void;
  /** The fan-out, if this relay still keeps it and `clientId` may read it; else a RelayError saying why. */
  get(id: string, clientId: string): KeptFanout;
}

interface Entry {
  fanout: KeptFanout;
  bytes: number;
  keptAt: number;
}

function fanoutError(message: string): RelayError {
  return new RelayError("FanoutError", message);
}

/**
 * The outputs of recent fan-outs, held in this relay's memory so a large
 * fan-out can answer with groups and still let the caller read any host's
 * whole output (ADR 0041). Bounded in count, bytes and age; nothing here
 * outlives the process, and another relay's fan-out is named, not fetched.
 */
export function createFanoutResults(
  instance: string,
  options: { ids?: Ids; now?: () => number } = {},
): FanoutResults {
  const ids = options.ids ?? cryptoIds;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let bytes = 0;

  const drop = (id: string) => {
    const entry = entries.get(id);
    if (!entry) return;
    bytes -= entry.bytes;
    entries.delete(id);
  };
  const expire = () => {
    const cutoff = now() - KEPT_MS;
    for (const [id, entry] of entries) if (entry.keptAt <= cutoff) drop(id);
  };

  return {
    newId() {
      for (;;) {
        const id = `fo-${ids.hex(6)}${instance === "" ? "" : `@${instance}`}`;
        if (!entries.has(id)) return id;
      }
    },
    keep(fanout) {
      expire();
      const size = fanout.runs.reduce((sum, run) => sum + (run.result?.output.length ?? 0) * 2 + 64, 0);
      // Maps iterate in insertion order: the first entries are the oldest.
      for (const id of entries.keys()) {
        if (entries.size < KEPT_FANOUTS && bytes + size <= KEPT_BYTES) break;
        drop(id);
      }
      entries.set(fanout.id, { fanout, bytes: size, keptAt: now() });
      bytes += size;
    },
    get(id, clientId) {
      expire();
      const entry = entries.get(id);
      if (!entry || (entry.fanout.owner !== "" && entry.fanout.owner !== clientId)) {
        throw fanoutError(unknownFanout(id, instance));
      }
      return entry.fanout;
    },
  };
}

/** Why an id is not here: malformed, another relay's, or no longer (or never) kept. */
function unknownFanout(id: string, instance: string): string {
  if (!FANOUT_ID.test(id))
    return `not a fan-out id: ${JSON.stringify(id.slice(0, 64))} (ids look like fo-0123456789ab)`;
  const at = id.indexOf("@");
  const holder = at < 0 ? "" : id.slice(at + 1);
  if (holder !== "" && holder !== instance) {
    return `fan-out ${id} ran on relay ${holder}, not on this one (${instance || "unnamed"}): its outputs are kept in that relay's memory only`;
  }
  return (
    `unknown fan-out: ${id} (a relay keeps the outputs of its ${KEPT_FANOUTS} latest fan-outs for ` +
    `${KEPT_MS / 60_000} minutes, and only for the client that ran them)`
  );
}
