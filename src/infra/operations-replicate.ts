import { describeError, fail } from "../core/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";
import type { KeyRecord, RunRecord, StoredOutcome } from "./ledger.js";
import { loadRun, nowStamp, type Ops, runKey, unwrittenRun } from "./operations-state.js";
import {
  checkRemoteAbsent,
  dropStaged,
  hasStagedTree,
  readManifest,
  remoteFailure,
  runPath,
  sentence,
  stagedIntact,
  stagedTree,
  stageSnapshot,
} from "./runs.js";
import { removeTree } from "./snapshot.js";
import type { OpResult, Profile, RemoteResult } from "./types.js";

/**
 * Transport failures that happen before rsync writes anything on the
 * receiver (local preconditions, the connection, authentication, rrsync's
 * refusal of the options): after one of these the run directory was not
 * touched. Any other failure of a push may have written part of the run.
 */
const BEFORE_ANY_WRITE: ReadonlySet<OutcomeCode> = new Set<OutcomeCode>([
  "MISSING_EXECUTION_CAPABILITY",
  "PIN_MISSING",
  "PIN_CHANGED",
  "NETWORK_FAILURE",
  "CREDENTIAL_UNAVAILABLE",
  "CREDENTIAL_REJECTED",
  "RECEIVER_REFUSED",
]);

type Snapshot = NonNullable<RunRecord["snapshot"]>;

function interruptedWrite(runId: string, what: string, data?: Record<string, unknown>): StoredOutcome {
  const outcome: StoredOutcome = {
    code: "WRITE_INTERRUPTED",
    message: `The write of run ${runId} ${what}, so its state on the receiver is unknown; it is not retried, and only verify can establish it.`,
  };
  if (data !== undefined) outcome.data = data;
  return outcome;
}

/** What a replicate answers when its push succeeded. */
function replicated(runId: string, snapshot: Snapshot): StoredOutcome {
  return {
    code: "OK",
    message: `Run ${runId} was written to ${runPath(runId)} on the receiver; verify it to trust it.`,
    data: { run_id: runId, snapshot: snapshot.id, files: snapshot.files, bytes: snapshot.bytes },
  };
}

/**
 * The replicate operation (docs/infra-broker.md §Replication): the run's snapshot, as a dry run
 * previewed it when the profile requires one, is written once to the receiver under an
 * idempotency key that is spent, and synced, before anything is sent.
 */
export async function replicate(ops: Ops, profile: Profile, runId: string, key: string): Promise<OpResult> {
  const { ledger } = ops;
  const used = ledger.readKey(key);
  if (used !== null) return usedKey(ops, used, profile, runId);
  const record = await unwrittenRun(ops, profile, runId, " under another idempotency key");
  if ("code" in record) return record;
  const ready = await readySnapshot(ops, profile, runId, record);
  if ("code" in ready) return ready;
  const snapshot = ready.snapshot;

  // From here the key is spent: it is recorded, and synced, before anything is sent.
  const claimed: KeyRecord = {
    key,
    profile: profile.id,
    op: "replicate",
    run_id: runId,
    state: "started",
    outcome: null,
    at: nowStamp(ops),
  };
  if (!(await ledger.claimKey(claimed))) {
    // Another profile's request took the key while this one was being prepared.
    const taken = ledger.readKey(key);
    if (taken === null) throw new Error(`idempotency key ${key} is claimed but has no record`);
    return usedKey(ops, taken, profile, runId);
  }
  record.replication = { key, snapshot: snapshot.id, state: "started", at: nowStamp(ops) };
  await ledger.writeRun(record);
  const replication = record.replication;
  const pushed = await push(ops, profile, runId);
  const outcome = settle(record, replication, pushed, { runId, snapshot });
  await ledger.writeRun(record);
  await ledger.writeKey({ ...claimed, state: "done", outcome, at: nowStamp(ops) });
  if (record.replication !== null) await removeTree(stagedTree(ledger, profile, runId));
  return outcome;
}

/**
 * The snapshot that goes: what a dry run previewed (still intact), or without one (the profile
 * allows it) the source as it is now; a refusal when the profile's dry run is missing or stale,
 * or the run is already on the receiver.
 */
async function readySnapshot(
  ops: Ops,
  profile: Profile,
  runId: string,
  record: RunRecord,
): Promise<OpResult | { snapshot: Snapshot }> {
  const { ctx, ledger } = ops;
  let manifest = readManifest(ledger, profile, record);
  const staged = manifest !== null && hasStagedTree(ledger, profile, runId);
  let previewed = staged && record.dry_run?.snapshot === record.snapshot?.id;
  if (previewed && manifest !== null && !(await stagedIntact(ledger, profile, runId, manifest))) {
    ctx.logger.warn(
      { profile: profile.id, run_id: runId },
      "a staged snapshot no longer matched its manifest",
    );
    await dropStaged(ledger, profile, record);
    previewed = false;
    if (profile.requireDryRun) {
      return {
        code: "DRY_RUN_REQUIRED",
        message: `The staged snapshot of run ${runId} no longer matches its manifest, so it was dropped and needs a new rsync-dry-run.`,
      };
    }
  }
  if (profile.requireDryRun && !previewed) {
    return {
      code: "DRY_RUN_REQUIRED",
      message: `Run ${runId} has no successful rsync-dry-run of its snapshot, which profile ${profile.id} requires before a replicate.`,
    };
  }
  const present = await checkRemoteAbsent(ctx, profile, runId);
  if (present !== null) return present;
  if (!previewed) {
    const taken = await stageSnapshot(ctx, ledger, profile, record);
    if (!taken.ok) return taken.error;
    manifest = taken.value.manifest;
  }
  const snapshot = record.snapshot;
  if (manifest === null || snapshot === null) throw new Error(`run ${runId} has no snapshot after staging`);
  return { snapshot };
}

/** The real copy of the staged tree; a transport that throws is a transfer interrupted part way. */
async function push(ops: Ops, profile: Profile, runId: string): Promise<RemoteResult> {
  const { ctx, ledger } = ops;
  ops.pushing.add(runKey(profile, runId));
  try {
    return await ctx.remote.push(profile, stagedTree(ledger, profile, runId), runPath(runId), {
      dryRun: false,
    });
  } catch (err) {
    ctx.logger.error(
      { profile: profile.id, run_id: runId, error: describeError(err).message },
      "push failed",
    );
    return fail({
      code: "TRANSFER_FAILED",
      message: "the transport failed while it ran the copy",
      interrupted: true,
      detail: "",
    });
  } finally {
    ops.pushing.delete(runKey(profile, runId));
  }
}

/**
 * The outcome of a push, and the run's replication state after it: replicated; none when the
 * failure came before anything was written (the run may be replicated later under a new key);
 * unknown otherwise.
 */
function settle(
  record: RunRecord,
  replication: NonNullable<RunRecord["replication"]>,
  pushed: RemoteResult,
  run: { runId: string; snapshot: Snapshot },
): StoredOutcome {
  const { runId, snapshot } = run;
  if (pushed.ok) {
    replication.state = "replicated";
    return replicated(runId, snapshot);
  }
  const failure = pushed.error;
  if (!failure.interrupted && BEFORE_ANY_WRITE.has(failure.code)) {
    record.replication = null;
    return remoteFailure(failure);
  }
  replication.state = "unknown";
  return interruptedWrite(runId, "was interrupted or failed part way", {
    run_id: runId,
    snapshot: snapshot.id,
    cause_code: failure.code,
    cause: sentence(failure.message),
    ...(failure.detail === "" ? {} : { detail: failure.detail }),
  });
}

/**
 * The first outcome under a key. A key left `started` by a process that
 * died is settled from the run's record: replicated if the push was
 * recorded as done before the process stopped, unknown otherwise.
 */
async function replay(ops: Ops, used: KeyRecord, run: RunRecord | null): Promise<OpResult> {
  let outcome = used.outcome;
  if (used.state === "started" || outcome === null) {
    const done = run?.replication?.key === used.key && run.replication.state === "replicated";
    outcome =
      done && run?.snapshot
        ? replicated(used.run_id, run.snapshot)
        : interruptedWrite(used.run_id, "was cut short when the broker stopped");
    await ops.ledger.writeKey({ ...used, state: "done", outcome });
  }
  return { ...outcome, replayed: true };
}

/** The answer for a key already recorded: the first outcome for the same request, a conflict for another. */
async function usedKey(ops: Ops, used: KeyRecord, profile: Profile, runId: string): Promise<OpResult> {
  if (used.profile !== profile.id || used.run_id !== runId || used.op !== "replicate") {
    return {
      code: "IDEMPOTENCY_CONFLICT",
      message: "This idempotency key was already used for a different request, so it is refused here.",
    };
  }
  // Settle the run too (a push left started is unknown), so its record says what the key says.
  return replay(ops, used, await loadRun(ops, profile, runId));
}
