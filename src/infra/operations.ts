import { openLedger } from "./ledger.js";
import { countItemized } from "./listing.js";
import { replicate } from "./operations-replicate.js";
import { loadRun, nowStamp, type Ops, preflight, unwrittenRun } from "./operations-state.js";
import {
  checkRemoteAbsent,
  readManifest,
  remoteFailure,
  runPath,
  stagedTree,
  stageSnapshot,
} from "./runs.js";
import type { InfraContext, Operations, OpResult, Profile } from "./types.js";
import { verifyRun } from "./verify.js";

/**
 * The operations of the broker (docs/infra-broker.md §Replication): probe,
 * rsync-dry-run, replicate and verify, over the run ledger under the state
 * directory. The dispatcher has already checked the profile, the principal,
 * the approval and the request's fields; it runs one operation at a time per
 * profile, and so does this module (a queue per profile), so the ledger of a
 * profile has one writer.
 */
export function createOperations(ctx: InfraContext): Operations {
  const ops: Ops = { ctx, ledger: openLedger(ctx.stateDir, ctx.ids), pushing: new Set() };
  const queues = new Map<string, Promise<unknown>>();
  return {
    probe: (profile) => serial(queues, profile, () => probe(ops, profile)),
    dryRun: (profile, runId) => serial(queues, profile, () => dryRun(ops, profile, runId)),
    replicate: (profile, runId, key) => serial(queues, profile, () => replicate(ops, profile, runId, key)),
    verify: (profile, runId) => serial(queues, profile, () => verify(ops, profile, runId)),
  };
}

/** Runs `work` after everything queued before it for the profile, whatever that came to. */
function serial<T>(
  queues: Map<string, Promise<unknown>>,
  profile: Profile,
  work: () => Promise<T>,
): Promise<T> {
  const before = queues.get(profile.id) ?? Promise.resolve();
  const next = before.then(work, work);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  queues.set(profile.id, settled);
  void settled.then(() => {
    if (queues.get(profile.id) === settled) queues.delete(profile.id);
  });
  return next;
}

async function probe(ops: Ops, profile: Profile): Promise<OpResult> {
  const refused = await preflight(ops, profile);
  if (refused !== null) return refused;
  const probed = await ops.ctx.remote.probe(profile);
  if (!probed.ok) return remoteFailure(probed.error);
  const entries = probed.value.output.split("\n").filter((line) => line.trim() !== "").length;
  return {
    code: "OK",
    message: `The receiver of profile ${profile.id} answered with its pinned host key and listed its root.`,
    data: { root_entries: entries, duration_ms: Math.round(probed.value.durationMs) },
  };
}

async function dryRun(ops: Ops, profile: Profile, runId: string): Promise<OpResult> {
  const { ctx, ledger } = ops;
  const record = await unwrittenRun(ops, profile, runId, ", and a run is written once");
  if ("code" in record) return record;
  const present = await checkRemoteAbsent(ctx, profile, runId);
  if (present !== null) return present;
  const staged = await stageSnapshot(ctx, ledger, profile, record);
  if (!staged.ok) return staged.error;
  const pushed = await ctx.remote.push(profile, stagedTree(ledger, profile, runId), runPath(runId), {
    dryRun: true,
  });
  if (!pushed.ok) return remoteFailure(pushed.error);
  record.dry_run = { snapshot: staged.value.id, at: nowStamp(ops) };
  await ledger.writeRun(record);
  return {
    code: "OK",
    message: `The dry run of run ${runId} previewed snapshot ${staged.value.id.slice(0, 12)} and wrote nothing.`,
    data: {
      run_id: runId,
      snapshot: staged.value.id,
      files: staged.value.manifest.total_files,
      bytes: staged.value.manifest.total_bytes,
      itemized_changes: countItemized(pushed.value.output),
    },
  };
}

async function verify(ops: Ops, profile: Profile, runId: string): Promise<OpResult> {
  const { ledger } = ops;
  const record = await loadRun(ops, profile, runId);
  if (record === null || record.snapshot === null) {
    return {
      code: "RUN_NOT_FOUND",
      message: `This broker holds no snapshot of run ${runId} for profile ${profile.id}, so there is nothing to verify against.`,
    };
  }
  const manifest = readManifest(ledger, profile, record);
  if (manifest === null) throw new Error(`the manifest of run ${runId} is missing or does not match its id`);
  const refused = await preflight(ops, profile);
  if (refused !== null) return refused;
  const result = await verifyRun(ops.ctx, ledger, profile, runId, record.snapshot.id, manifest);
  if (result.code === "OK") {
    record.verified = { snapshot: record.snapshot.id, at: nowStamp(ops) };
    await ledger.writeRun(record);
    return {
      ...result,
      data: { ...result.data, replication: record.replication?.state ?? null, trusted: true },
    };
  }
  if (result.code !== "VERIFY_FAILED") return result;
  if (record.verified !== null) {
    // The latest answer counts: a run that no longer matches is no longer trusted.
    record.verified = null;
    await ledger.writeRun(record);
  }
  return {
    ...result,
    data: { ...result.data, replication: record.replication?.state ?? null, trusted: false },
  };
}
