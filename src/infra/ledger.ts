import { constants } from "node:fs";
import { link, mkdir, open, readdir, rename, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Ids } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { IDEMPOTENCY_KEY, type OutcomeCode, PROFILE_ID, RUN_ID } from "../infra-protocol/index.js";

/**
 * The run ledger (docs/infra-broker.md §Replication): what the broker knows
 * about each run and each idempotency key, one small JSON file per run and
 * per key under the state directory, each replaced atomically (write a temp
 * file, fsync it, rename it over the old one, fsync the directory), so a
 * crash leaves either the old record or the new one, never a torn one.
 *
 *   <state>/replication/keys/<key>.json            who used a key, for what, and the outcome
 *   <state>/replication/runs/<profile>/<run>/run.json       the run's state
 *   <state>/replication/runs/<profile>/<run>/manifest.json  the manifest of its snapshot
 *   <state>/replication/runs/<profile>/<run>/tree/          the staged copy, until it is pushed
 *   <state>/replication/scratch/                   snapshots being taken and runs being verified
 */

type ReplicationState = "started" | "replicated" | "unknown";

export interface RunRecord {
  run_id: string;
  profile: string;
  /** The snapshot staged for this run (or, once replicated, the one that was pushed). */
  snapshot: { id: string; files: number; bytes: number; taken_at: string } | null;
  /** The snapshot a successful rsync-dry-run previewed. */
  dry_run: { snapshot: string; at: string } | null;
  replication: { key: string; snapshot: string; state: ReplicationState; at: string } | null;
  verified: { snapshot: string; at: string } | null;
}

export interface StoredOutcome {
  code: OutcomeCode;
  message: string;
  data?: Record<string, unknown>;
}

export interface KeyRecord {
  key: string;
  profile: string;
  op: "replicate";
  run_id: string;
  /** `started` is written, and synced, before the push; `done` carries its outcome. */
  state: "started" | "done";
  outcome: StoredOutcome | null;
  at: string;
}

const RECORD_MAX_BYTES = 64 * 1024;

export interface Ledger {
  readonly root: string;
  runDir(profile: string, runId: string): string;
  scratchDir(): Promise<string>;
  /** The run ids the ledger holds for a profile. */
  runIds(profile: string): Promise<string[]>;
  readRun(profile: string, runId: string): RunRecord | null;
  writeRun(record: RunRecord): Promise<void>;
  readKey(key: string): KeyRecord | null;
  /** Record a key's first use; false when it is already recorded (another request got there first). */
  claimKey(record: KeyRecord): Promise<boolean>;
  /** Replace the record of a claimed key. */
  writeKey(record: KeyRecord): Promise<void>;
}

/** A record file that is not what this broker wrote is a broken invariant, not an outcome. */
function readJson(path: string): unknown {
  const bytes = readBoundedFile(path, { maxBytes: RECORD_MAX_BYTES, what: "ledger record" });
  if (bytes === null) return null;
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new Error(`the ledger record ${path} is not JSON`, { cause: err });
  }
}

async function syncDirectory(dir: string): Promise<void> {
  const parent = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await parent.sync();
  } finally {
    await parent.close();
  }
}

/** A synced temporary file beside `path` holding `value`; the caller moves it into place. */
async function writeTemp(path: string, value: unknown, ids: Ids): Promise<string> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.tmp-${ids.hex(8)}`);
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const file = await open(temp, flags, 0o600);
  try {
    await file.writeFile(`${JSON.stringify(value)}\n`, "utf8");
    await file.sync();
  } catch (err) {
    await file.close();
    await rm(temp, { force: true });
    throw err;
  }
  await file.close();
  return temp;
}

/** Replace `path` with `value`: the old record or the new one survives a crash, never a torn one. */
export async function writeJsonAtomic(path: string, value: unknown, ids: Ids): Promise<void> {
  const temp = await writeTemp(path, value, ids);
  await rename(temp, path);
  await syncDirectory(dirname(path));
}

/**
 * Create `path` holding `value` only if it does not exist: link(2) of a
 * complete temp file is atomic and fails on an existing name, so two
 * requests cannot both claim it and a crash cannot leave it half-written.
 */
async function createJsonExclusive(path: string, value: unknown, ids: Ids): Promise<boolean> {
  const temp = await writeTemp(path, value, ids);
  try {
    await link(temp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
  await syncDirectory(dirname(path));
  return true;
}

/**
 * Ids become path components here. The dispatcher validated them already;
 * this check keeps a path outside the ledger impossible even if it had not.
 */
function component(value: string, pattern: RegExp, what: string): string {
  if (!pattern.test(value)) throw new Error(`${what} ${JSON.stringify(value)} cannot name a ledger file`);
  return value;
}

export function openLedger(stateDir: string, ids: Ids): Ledger {
  const root = join(stateDir, "replication");
  const runDir = (profile: string, runId: string) =>
    join(root, "runs", component(profile, PROFILE_ID, "profile id"), component(runId, RUN_ID, "run id"));
  const keyFile = (key: string) =>
    join(root, "keys", `${component(key, IDEMPOTENCY_KEY, "idempotency key")}.json`);
  const scratchBase = join(root, "scratch");
  // Scratch directories left by a process that died are removed once, before the first new one.
  let swept: Promise<void> | null = null;
  return {
    root,
    runDir,
    async scratchDir() {
      swept ??= rm(scratchBase, { recursive: true, force: true });
      await swept;
      await mkdir(scratchBase, { recursive: true, mode: 0o700 });
      const dir = join(scratchBase, ids.hex(12));
      await mkdir(dir, { mode: 0o700 });
      return dir;
    },
    async runIds(profile) {
      const dir = join(root, "runs", component(profile, PROFILE_ID, "profile id"));
      const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code === "ENOENT") return [];
        throw err;
      });
      return names.filter((name) => RUN_ID.test(name));
    },
    readRun(profile, runId) {
      return readJson(join(runDir(profile, runId), "run.json")) as RunRecord | null;
    },
    async writeRun(record) {
      await writeJsonAtomic(join(runDir(record.profile, record.run_id), "run.json"), record, ids);
    },
    readKey(key) {
      return readJson(keyFile(key)) as KeyRecord | null;
    },
    claimKey(record) {
      return createJsonExclusive(keyFile(record.key), record, ids);
    },
    async writeKey(record) {
      await writeJsonAtomic(keyFile(record.key), record, ids);
    },
  };
}
