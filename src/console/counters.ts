import { chmodSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readBoundedFile } from "../files/index.js";

const FILE = "sign-counters.json";
const MAX_BYTES = 1024 * 1024;

/**
 * The last signature counter each passkey reported, the relay's own state
 * (not a trust anchor: it only ever makes a cloned authenticator easier to
 * notice). Kept in a 0600 file in a 0700 directory and replaced atomically.
 */
export interface SignCounters {
  get(credentialId: string): number;
  /** Remember `counter` for the credential; throws when the file cannot be written. */
  set(credentialId: string, counter: number): void;
}

/** Open (creating it when missing) the counter state under `dir`; throws with the path on a problem. */
export function openSignCounters(dir: string): SignCounters {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, FILE);
  const counters = new Map<string, number>();
  const bytes = readBoundedFile(path, { maxBytes: MAX_BYTES, what: "sign counter file" });
  if (bytes !== null) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString("utf8"));
    } catch {
      throw new Error(`${path} is not valid JSON; remove it to start counting afresh`);
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
      throw new Error(`${path} is not a JSON object of counters`);
    for (const [id, value] of Object.entries(parsed)) {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
        throw new Error(`${path}: the counter of ${id} is not a non-negative integer`);
      counters.set(id, value);
    }
  }
  return {
    get: (id) => counters.get(id) ?? 0,
    set(id, counter) {
      const next = new Map(counters).set(id, counter);
      const tmp = `${path}.${process.pid}.tmp`;
      writeFileSync(tmp, `${JSON.stringify(Object.fromEntries(next))}\n`, { mode: 0o600 });
      renameSync(tmp, path);
      counters.set(id, counter);
    },
  };
}
