import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Ledger } from "./ledger.js";
import { parseListing } from "./listing.js";
import {
  type Comparison,
  compareWithManifest,
  MAX_LISTED_DIFFERENCES,
  type Manifest,
  toDisplayName,
} from "./manifest.js";
import { isAbsent, remoteFailure, runPath } from "./runs.js";
import { hashTree, removeTree } from "./snapshot.js";
import type { InfraContext, OpResult, Profile } from "./types.js";

/**
 * Verifying a run directory against its manifest (docs/infra-broker.md
 * §Replication). The receiver's listing comes first and bounds what is
 * fetched: any difference it already shows (a name missing or extra, a size,
 * something that is not a file or directory) fails without a byte being
 * downloaded, so nothing larger than the manifest is ever fetched. Only a
 * listing equal to the manifest in names and sizes leads to the directory
 * being pulled into a fresh private scratch directory (no file larger than
 * the manifest's largest), every file hashed and compared; the scratch copy
 * is removed whatever happens.
 */

function missingRun(runId: string): OpResult {
  return {
    code: "VERIFY_FAILED",
    message: `The receiver holds no directory ${runPath(runId)}, so run ${runId} is not there to verify.`,
    data: { run_id: runId, run_directory_missing: true },
  };
}

function failed(runId: string, comparison: Comparison, extra: Record<string, unknown> = {}): OpResult {
  const total = Object.values(comparison.counts).reduce((a, b) => a + b, 0);
  return {
    code: "VERIFY_FAILED",
    message: `Run ${runId} on the receiver differs from its manifest in ${total} place${total === 1 ? "" : "s"}.`,
    data: {
      run_id: runId,
      differences: comparison.differences,
      difference_counts: comparison.counts,
      differences_listed_max: MAX_LISTED_DIFFERENCES,
      ...extra,
    },
  };
}

export async function verifyRun(
  ctx: InfraContext,
  ledger: Ledger,
  profile: Profile,
  runId: string,
  snapshotId: string,
  manifest: Manifest,
): Promise<OpResult> {
  const entries = manifest.directories.length + manifest.files.length;
  const listed = await ctx.remote.list(profile, runPath(runId));
  if (!listed.ok) return isAbsent(listed.error) ? missingRun(runId) : remoteFailure(listed.error);
  const parsed = parseListing(listed.value.output, runId);
  if (!parsed.ok) {
    return {
      code: "VERIFY_FAILED",
      message: `The receiver's listing of ${runPath(runId)} could not be read in full, so run ${runId} cannot be verified.`,
      data: { run_id: runId, unreadable_line: parsed.error },
    };
  }
  const listing = parsed.value;
  const sizes = compareWithManifest(manifest, listing);
  for (const path of listing.other) {
    sizes.counts.type += 1;
    if (sizes.differences.length < MAX_LISTED_DIFFERENCES && path.length <= 1024) {
      sizes.differences.push({ path: toDisplayName(path), kind: "type" });
    }
  }
  // Names, types and sizes are in the listing: a difference there needs no download to be certain.
  if (Object.values(sizes.counts).some((n) => n > 0)) return failed(runId, sizes, { downloaded: false });

  const scratch = await ledger.scratchDir();
  try {
    const into = join(scratch, "run");
    await mkdir(into, { mode: 0o700 });
    const largest = manifest.files.reduce((max, f) => Math.max(max, f.size), 0);
    const pulled = await ctx.remote.pull(profile, runPath(runId), into, Math.max(largest, 1));
    if (!pulled.ok) return isAbsent(pulled.error) ? missingRun(runId) : remoteFailure(pulled.error);
    const hashed = await hashTree(into, {
      entries,
      bytes: manifest.total_bytes,
      fileBytes: Math.max(largest, 1),
    });
    if (!hashed.ok) {
      return {
        code: "VERIFY_FAILED",
        message: `The copy of run ${runId} fetched from the receiver does not match its manifest: ${hashed.error.message}`,
        data: { run_id: runId },
      };
    }
    const comparison = compareWithManifest(manifest, {
      directories: new Set(hashed.value.directories),
      files: new Map(hashed.value.files.map((f) => [f.path, { size: f.size, sha256: f.sha256 }])),
    });
    if (Object.values(comparison.counts).some((n) => n > 0))
      return failed(runId, comparison, { downloaded: true });
    return {
      code: "OK",
      message: `Every file of run ${runId} on the receiver matches its manifest by size and SHA-256.`,
      data: {
        run_id: runId,
        snapshot: snapshotId,
        files: manifest.total_files,
        bytes: manifest.total_bytes,
      },
    };
  } finally {
    await removeTree(scratch);
  }
}
