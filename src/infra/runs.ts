import { existsSync } from "node:fs";
import { chmod, mkdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { fail, isoTimestamp, ok, type Result } from "../core/index.js";
import { readBoundedFile } from "../files/index.js";
import { type Ledger, type RunRecord, writeJsonAtomic } from "./ledger.js";
import { saysAbsent } from "./listing.js";
import { compareWithManifest, type Manifest, parseManifest } from "./manifest.js";
import { hashTree, removeTree, takeSnapshot } from "./snapshot.js";
import type { InfraContext, OpResult, Profile, RemoteFailure } from "./types.js";

/**
 * What the operations share: the run's remote path, its record, its staged
 * snapshot and the answers built from a transport failure.
 */

/** The mode of the run's top directory on the receiver (before its umask): a normal directory's (ADR 0036). */
const RUN_DIRECTORY_MODE = 0o755;

/** The immutable directory of one run on the receiver, relative to the profile's remote root. */
export function runPath(runId: string): string {
  return `runs/${runId}`;
}

/** One sentence: a capital first letter and a full stop, whatever shape the transport's text has. */
export function sentence(text: string): string {
  const trimmed = text.trim();
  if (trimmed === "") return "The receiver could not be reached for this operation.";
  const capital = trimmed[0]?.toUpperCase() + trimmed.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

/** A transport failure as an operation's answer; `detail` is bounded and key-free by the transport's contract. */
export function remoteFailure(result: RemoteFailure): OpResult {
  const message = sentence(result.message);
  return result.detail === ""
    ? { code: result.code, message }
    : { code: result.code, message, data: { detail: result.detail } };
}

/**
 * The listed or fetched path is not on the receiver: the transport says so
 * with RUN_NOT_FOUND, and rsync or rrsync in their own words (see saysAbsent).
 */
export function isAbsent(result: RemoteFailure): boolean {
  return result.code === "RUN_NOT_FOUND" || saysAbsent(result.detail) || saysAbsent(result.message);
}

export function emptyRun(profile: Profile, runId: string): RunRecord {
  return {
    run_id: runId,
    profile: profile.id,
    snapshot: null,
    dry_run: null,
    replication: null,
    verified: null,
  };
}

/** Room for a manifest of `fileCount` entries with paths up to the walk's bound. */
function manifestBound(profile: Profile): number {
  return 1024 * 1024 + profile.limits.fileCount * 4400;
}

/** The manifest of the run's snapshot, checked against the id the record holds; null when it is not there. */
export function readManifest(ledger: Ledger, profile: Profile, record: RunRecord): Manifest | null {
  if (record.snapshot === null) return null;
  const path = join(ledger.runDir(profile.id, record.run_id), "manifest.json");
  const bytes = readBoundedFile(path, { maxBytes: manifestBound(profile), what: "manifest" });
  if (bytes === null) return null;
  return parseManifest(bytes.toString("utf8"), record.snapshot.id);
}

export function stagedTree(ledger: Ledger, profile: Profile, runId: string): string {
  return join(ledger.runDir(profile.id, runId), "tree");
}

/** The staged copy is still there to be pushed (it is removed once a push consumed it). */
export function hasStagedTree(ledger: Ledger, profile: Profile, runId: string): boolean {
  return existsSync(stagedTree(ledger, profile, runId));
}

/**
 * Staged copies a profile keeps at once for runs not replicated (previews
 * waiting for their replicate). Each holds up to the profile's
 * transfer_bytes, so without a bound a caller allowed to dry-run could fill
 * the state directory with run ids; past it, the oldest preview is dropped
 * and its run needs a new dry run.
 */
export const MAX_STAGED_RUNS = 8;

/** Make room for one more staged run besides `keep`, dropping the oldest previews first. */
async function evictStaged(ledger: Ledger, profile: Profile, keep: string): Promise<void> {
  const staged: Array<{ runId: string; at: string }> = [];
  for (const runId of await ledger.runIds(profile.id)) {
    if (runId === keep) continue;
    const record = ledger.readRun(profile.id, runId);
    if (record === null || record.replication !== null) continue;
    staged.push({ runId, at: record.snapshot?.taken_at ?? "" });
  }
  staged.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  for (const { runId } of staged.slice(0, Math.max(0, staged.length - (MAX_STAGED_RUNS - 1)))) {
    await removeTree(ledger.runDir(profile.id, runId));
  }
}

/**
 * The staged copy still holds exactly its manifest. It is checked again
 * just before a replicate sends it: the copy is written without an fsync
 * per file, so a crash, a disk error or anything else that touched the
 * state directory since the dry run is caught here, before it could reach
 * an immutable run directory.
 */
export async function stagedIntact(ledger: Ledger, profile: Profile, runId: string, manifest: Manifest) {
  const hashed = await hashTree(stagedTree(ledger, profile, runId), {
    entries: manifest.directories.length + manifest.files.length,
    bytes: manifest.total_bytes,
  });
  if (!hashed.ok) return false;
  const found = {
    directories: new Set(hashed.value.directories),
    files: new Map(hashed.value.files.map((f) => [f.path, { size: f.size, sha256: f.sha256 }])),
  };
  return Object.values(compareWithManifest(manifest, found).counts).every((n) => n === 0);
}

/** Forget a run's staged snapshot and its preview. */
export async function dropStaged(ledger: Ledger, profile: Profile, record: RunRecord): Promise<void> {
  record.snapshot = null;
  record.dry_run = null;
  await ledger.writeRun(record);
  await removeTree(stagedTree(ledger, profile, record.run_id));
}

/** The staged snapshot, or the answer that refused it. */
type Staged = Result<{ id: string; manifest: Manifest }, OpResult>;

/**
 * Take a new snapshot of the profile's source roots for `record`'s run and
 * make it the run's staged one, replacing any earlier staged copy. It is
 * built in a scratch directory and moved in only when complete, so a refused
 * or failed snapshot leaves nothing half-copied behind. The record is
 * written twice: without any snapshot before the walk, with the new one
 * (and no dry-run) after it.
 */
export async function stageSnapshot(
  ctx: InfraContext,
  ledger: Ledger,
  profile: Profile,
  record: RunRecord,
): Promise<Staged> {
  // The earlier snapshot stops counting first: if this one is refused, no dry-run of the old one remains usable.
  record.snapshot = null;
  record.dry_run = null;
  await ledger.writeRun(record);
  await evictStaged(ledger, profile, record.run_id);
  const scratch = await ledger.scratchDir();
  try {
    const tree = join(scratch, "tree");
    await mkdir(tree, { mode: 0o700 });
    // rsync gives the run's directory on the receiver this directory's mode: a normal directory's,
    // not the staging area's privacy. It stays private here inside the 0700 run and state directories.
    await chmod(tree, RUN_DIRECTORY_MODE);
    const taken = await takeSnapshot(
      profile.sourceRoots,
      { entries: profile.limits.fileCount, bytes: profile.limits.transferBytes },
      tree,
    );
    if (!taken.ok) return fail({ code: taken.error.code, message: taken.error.message });
    await writeJsonAtomic(join(scratch, "manifest.json"), taken.value.manifest, ctx.ids);
    const dir = ledger.runDir(profile.id, record.run_id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await removeTree(join(dir, "tree"));
    await rename(tree, join(dir, "tree"));
    await rename(join(scratch, "manifest.json"), join(dir, "manifest.json"));
    record.snapshot = {
      id: taken.value.id,
      files: taken.value.manifest.total_files,
      bytes: taken.value.manifest.total_bytes,
      taken_at: isoTimestamp(ctx.clock.now()),
    };
    await ledger.writeRun(record);
    return ok(taken.value);
  } finally {
    await removeTree(scratch);
  }
}

/**
 * The run directory must not exist on the receiver yet: run directories are
 * written once. Null when it is absent; otherwise the answer to give.
 */
export async function checkRemoteAbsent(
  ctx: InfraContext,
  profile: Profile,
  runId: string,
): Promise<OpResult | null> {
  const listed = await ctx.remote.list(profile, runPath(runId));
  if (listed.ok) {
    return {
      code: "RUN_EXISTS",
      message: `The receiver already holds ${runPath(runId)}, and a run directory is never written into twice.`,
    };
  }
  if (isAbsent(listed.error)) return null;
  return remoteFailure(listed.error);
}
