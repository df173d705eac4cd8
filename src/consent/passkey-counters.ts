import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { readBoundedFile } from "../files/index.js";

/** What became of a counter an authenticator reported: taken, or refused with the one stored. */
export type CounterUpdate = { accepted: true } | { accepted: false; last: number };

/** What became of an assertion: counted now, counted before (`repeat`), or refused. */
export type AssertionCount = { accepted: true; repeat: boolean } | { accepted: false; last: number };

/**
 * The last sign counter the relay accepted for each passkey, and the consent
 * assertions it already counted: the one store of the console's login and of
 * consent's passkey verifier. Counters are the relay's own state, not trust
 * anchors: they only narrow what a cloned authenticator could do, so they
 * live in the relay's state (a file, or the database several relays share)
 * and never in the operator's passkeys file. A method rejects when the store
 * cannot be used; the caller refuses rather than forgetting what it saw.
 */
export interface PasskeyCounters {
  /** The last counter accepted for the credential; undefined when none was seen yet. */
  get(credentialId: string): Promise<number | undefined>;
  /**
   * Take `counter` when it is above the one stored, when none is stored, or when both are 0 (an
   * authenticator that keeps no counter); otherwise refuse it. A counter never goes backwards,
   * whichever relay writes it, and a refusal names the counter that stands.
   */
  advance(credentialId: string, counter: number): Promise<CounterUpdate>;
  /**
   * Count a consent assertion (its digest) once: the first time as `advance` does, recording the
   * digest when the counter is taken. The same assertion checked again (the console when it
   * receives it, the gate when the call is re-issued, maybe on another relay or after a restart) is
   * a `repeat`, not a replayed counter; reuse of an approval is stopped by its nonce.
   */
  countAssertion(credentialId: string, counter: number, digest: string): Promise<AssertionCount>;
}

/** How many accepted assertions a file or memory remembers: far more than approvals live at once. */
const REMEMBERED_ASSERTIONS = 1024;
/** A counter is the 32-bit signCount of WebAuthn's authenticator data. */
const MAX_COUNTER = 0xffffffff;
const MAX_FILE_BYTES = 1024 * 1024;
/** The console's file under its state directory (RELAY_SHELL_CONSOLE_STATE_DIR). */
const CONSOLE_FILE = "sign-counters.json";

/** Refuse what no authenticator can report, before it reaches a store. */
export function checkCounter(counter: number): void {
  if (!Number.isInteger(counter) || counter < 0 || counter > MAX_COUNTER) {
    throw new Error(`a sign counter is a 32-bit unsigned integer, not ${counter}`);
  }
}

/** Whether `counter` may follow `last` (undefined: none seen). */
function counterFollows(last: number | undefined, counter: number): boolean {
  return last === undefined || counter > last || (counter === 0 && last === 0);
}

interface CounterTable {
  counters: Map<string, number>;
  /** Digests of accepted assertions, oldest first. */
  accepted: string[];
}

function advanceIn(table: CounterTable, id: string, counter: number): CounterUpdate {
  const last = table.counters.get(id);
  if (!counterFollows(last, counter)) return { accepted: false, last: last ?? 0 };
  table.counters.set(id, counter);
  return { accepted: true };
}

function countIn(table: CounterTable, id: string, counter: number, digest: string): AssertionCount {
  if (table.accepted.includes(digest)) return { accepted: true, repeat: true };
  const update = advanceIn(table, id, counter);
  if (!update.accepted) return update;
  table.accepted = [...table.accepted, digest].slice(-REMEMBERED_ASSERTIONS);
  return { accepted: true, repeat: false };
}

/** Counters over a table: each method reads it once and, when it took something, writes it once. */
function countersOver(load: () => CounterTable, save: (table: CounterTable) => void): PasskeyCounters {
  const update = <T extends { accepted: boolean; repeat?: boolean }>(
    counter: number,
    change: (table: CounterTable) => T,
  ): T => {
    checkCounter(counter);
    const table = load();
    const result = change(table);
    if (result.accepted && result.repeat !== true) save(table);
    return result;
  };
  return {
    get: async (id) => load().counters.get(id),
    advance: async (id, counter) => update(counter, (table) => advanceIn(table, id, counter)),
    countAssertion: async (id, counter, digest) =>
      update(counter, (table) => countIn(table, id, counter, digest)),
  };
}

/** Counters that live as long as the object: for tests, and for a relay that keeps no state file. */
export function memoryCounters(): PasskeyCounters {
  const table: CounterTable = { counters: new Map(), accepted: [] };
  return countersOver(
    () => table,
    () => undefined,
  );
}

const isCount = (n: unknown): n is number =>
  Number.isSafeInteger(n) && (n as number) >= 0 && (n as number) <= MAX_COUNTER;

/**
 * The table a counters file holds, in either of its two shapes: `{"counters":{…},"accepted":[…]}`,
 * or the console's older `{"<credential id>": n}` (read as a table with no accepted assertions).
 */
function parseTable(text: string, path: string): CounterTable {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`the passkey counters file ${path} is not JSON`);
  }
  const bad = new Error(`the passkey counters file ${path} is not a table of counters`);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw bad;
  const record = parsed as Record<string, unknown>;
  const { counters, accepted } = record;
  if (
    typeof counters === "object" &&
    counters !== null &&
    !Array.isArray(counters) &&
    Array.isArray(accepted)
  ) {
    if (!Object.values(counters).every(isCount) || !accepted.every((a) => typeof a === "string")) throw bad;
    return { counters: new Map(Object.entries(counters as Record<string, number>)), accepted: [...accepted] };
  }
  if (!Object.values(record).every(isCount)) throw bad;
  return { counters: new Map(Object.entries(record as Record<string, number>)), accepted: [] };
}

/** Read the table at `path` (empty when the file does not exist); throws naming the file. */
function readTable(path: string): CounterTable {
  const bytes = readBoundedFile(path, { maxBytes: MAX_FILE_BYTES, what: "passkey counters file" });
  return bytes === null ? { counters: new Map(), accepted: [] } : parseTable(bytes.toString("utf8"), path);
}

/** Replace the file whole: a new 0600 file renamed over it, so a crash never leaves half a table. */
function writeTable(path: string, table: CounterTable): void {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}`);
  try {
    const text = JSON.stringify({ counters: Object.fromEntries(table.counters), accepted: table.accepted });
    writeFileSync(temp, `${text}\n`, { mode: 0o600, flag: "wx" });
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
}

/**
 * Counters in a JSON file (`{"counters":{"<credential id>":n},"accepted":[digests]}`), mode 0600,
 * for one relay (and the processes beside it on the same machine). Each call reads the file again,
 * so processes sharing it see each other's counters; each change replaces it whole. A file that
 * cannot be read or does not parse rejects: the caller refuses rather than forgetting what it saw.
 * Two processes writing at the same moment can lose one update (the last rename wins); that only
 * lets one counter be compared against an older value, never refuses a good assertion. Several
 * relays on several machines share the PostgreSQL counters instead (pg-counters.ts).
 */
export function fileCounters(path: string): PasskeyCounters {
  return countersOver(
    () => readTable(path),
    (table) => writeTable(path, table),
  );
}

/**
 * The console's counters file under `dir` (created 0700 when missing): checked now, so a file that
 * cannot be used stops the start-up with its path rather than refusing every login later.
 */
export function openCountersDir(dir: string): PasskeyCounters {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, CONSOLE_FILE);
  readTable(path);
  return fileCounters(path);
}
