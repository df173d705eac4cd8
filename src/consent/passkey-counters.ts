import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The last sign counter the relay saw for each credential. Counters are the
 * relay's own state, not trust anchors: they only narrow what a cloned
 * authenticator could do, so they live in the relay's state directory and
 * never in the operator's passkeys file.
 */
export interface PasskeyCounters {
  get(credentialId: string): number | undefined;
  set(credentialId: string, counter: number): void;
}

/** Counters that live as long as the object; for tests and for a relay without a state file. */
export function memoryCounters(): PasskeyCounters {
  const seen = new Map<string, number>();
  return {
    get: (id) => seen.get(id),
    set: (id, n) => {
      seen.set(id, n);
    },
  };
}

function isCounterTable(value: unknown): value is Record<string, number> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((n) => Number.isInteger(n) && n >= 0 && n <= 0xffffffff);
}

/**
 * Counters in a JSON object (`{"<credential id>": counter}`) in a 0600 file.
 * Each call reads the file again, so relay processes sharing it see each
 * other's counters; each write replaces the file whole (a new 0600 file
 * renamed over it), so a crash never leaves half a table. A file that
 * cannot be read or does not parse throws: the verifier refuses rather than
 * forgetting what it saw. Two processes writing at the same moment can
 * lose one update (the last rename wins); that only lets one counter be
 * compared against an older value, never refuses a good assertion.
 */
export function fileCounters(path: string): PasskeyCounters {
  const read = (): Record<string, number> => {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw err;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`the passkey counters file ${path} is not JSON`);
    }
    if (!isCounterTable(parsed))
      throw new Error(`the passkey counters file ${path} is not a table of counters`);
    return parsed;
  };
  return {
    get(id) {
      const table = read();
      return Object.hasOwn(table, id) ? table[id] : undefined;
    },
    set(id, n) {
      const table = read();
      table[id] = n;
      const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}`);
      try {
        writeFileSync(temp, `${JSON.stringify(table)}\n`, { mode: 0o600, flag: "wx" });
        renameSync(temp, path);
      } catch (err) {
        rmSync(temp, { force: true });
        throw err;
      }
    },
  };
}
