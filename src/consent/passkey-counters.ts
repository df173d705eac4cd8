import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The last sign counter the relay saw for each credential, and the
 * assertions it already accepted. Counters are the relay's own state, not
 * trust anchors: they only narrow what a cloned authenticator could do, so
 * they live in the relay's state directory and never in the operator's
 * passkeys file.
 */
export interface PasskeyCounters {
  get(credentialId: string): number | undefined;
  set(credentialId: string, counter: number): void;
  /**
   * Whether this assertion (its digest) was accepted before: checking it
   * again (the console when it receives it, the gate when the call is
   * re-issued, maybe in another process or after a restart) must not count
   * as a replayed counter. Reuse of an approval is stopped by its nonce.
   */
  accepted(assertion: string): boolean;
  accept(assertion: string): void;
}

/** How many accepted assertions are remembered: far more than approvals live at once. */
const REMEMBERED_ASSERTIONS = 1024;

/** Counters that live as long as the object; for tests and for a relay without a state file. */
export function memoryCounters(): PasskeyCounters {
  const seen = new Map<string, number>();
  const accepted = new Set<string>();
  return {
    get: (id) => seen.get(id),
    set: (id, n) => {
      seen.set(id, n);
    },
    accepted: (assertion) => accepted.has(assertion),
    accept(assertion) {
      accepted.add(assertion);
      if (accepted.size > REMEMBERED_ASSERTIONS) {
        const oldest = accepted.values().next().value;
        if (oldest !== undefined) accepted.delete(oldest);
      }
    },
  };
}

interface CounterFile {
  counters: Record<string, number>;
  /** Oldest first. */
  accepted: string[];
}

function isCounterFile(value: unknown): value is CounterFile {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const { counters, accepted } = value as Record<string, unknown>;
  if (typeof counters !== "object" || counters === null || Array.isArray(counters)) return false;
  const countsOk = Object.values(counters).every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff);
  return countsOk && Array.isArray(accepted) && accepted.every((a) => typeof a === "string");
}

/**
 * Counters in a JSON file (`{"counters":{"<credential id>":n},"accepted":[digests]}`),
 * mode 0600. Each call reads the file again, so relay processes sharing it
 * see each other's counters; each write replaces the file whole (a new 0600
 * file renamed over it), so a crash never leaves half a table. A file that
 * cannot be read or does not parse throws: the verifier refuses rather than
 * forgetting what it saw. Two processes writing at the same moment can lose
 * one update (the last rename wins); that only lets one counter be compared
 * against an older value, never refuses a good assertion.
 */
export function fileCounters(path: string): PasskeyCounters {
  const read = (): CounterFile => {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { counters: {}, accepted: [] };
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`the passkey counters file ${path} is not JSON`);
    }
    if (!isCounterFile(parsed))
      throw new Error(`the passkey counters file ${path} is not a table of counters`);
    return parsed;
  };
  const write = (table: CounterFile): void => {
    const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}`);
    try {
      writeFileSync(temp, `${JSON.stringify(table)}\n`, { mode: 0o600, flag: "wx" });
      renameSync(temp, path);
    } catch (err) {
      rmSync(temp, { force: true });
      throw err;
    }
  };
  return {
    get(id) {
      const { counters } = read();
      return Object.hasOwn(counters, id) ? counters[id] : undefined;
    },
    set(id, n) {
      const table = read();
      table.counters[id] = n;
      write(table);
    },
    accepted: (assertion) => read().accepted.includes(assertion),
    accept(assertion) {
      const table = read();
      table.accepted = [...table.accepted.filter((a) => a !== assertion), assertion].slice(
        -REMEMBERED_ASSERTIONS,
      );
      write(table);
    },
  };
}
