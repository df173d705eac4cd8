import { describeError, isoTimestamp } from "../core/index.js";
import type { OutcomeCode } from "../infra-protocol/index.js";
import { type KeyRecord, type Ledger, openLedger, type RunRecord, type StoredOutcome } from "./ledger.js";
import { countItemized } from "./listing.js";
import {
  checkRemoteAbsent,
  dropStaged,
  emptyRun,
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
import type { InfraContext, Operations, OpResult, Profile, RemoteResult } from "./types.js";
import { verifyRun } from "./verify.js";

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

function interruptedWrite(runId: string, what: string, data?: Record<string, unknown>): StoredOutcome {
  const outcome: StoredOutcome = {
    code: "WRITE_INTERRUPTED",
    message: `The write of run ${runId} ${what}, so its state on the receiver is unknown; it is not retried, and only verify can establish it.`,
  };
  if (data !== undefined) outcome.data = data;
  return outcome;
}

/**
 * The operations of the broker (docs/infra-broker.md §Replication): probe,
 * rsync-dry-run, replicate and verify, over the run ledger under the state
 * directory. The dispatcher has already checked the profile, the principal,
 * the approval and the request's fields; it runs one operation at a time per
 * profile, and so does this module (a queue per profile), so the ledger of a
 * profile has one writer.
 */
export function createOperations(ctx: InfraContext): Operations {
  const ledger: Ledger = openLedger(ctx.stateDir, ctx.ids);
  /** Runs whose push is running in this process: a `started` record of any other run was left by a process that died. */
  const pushing = new Set<string>();
  const queues = new Map<string, Promise<unknown>>();
  const now = () => isoTimestamp(ctx.clock.now());

  function serial<T>(profile: Profile, work: () => Promise<T>): Promise<T> {
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

  const runKey = (profile: Profile, runId: string) => `${profile.id}/${runId}`;

  /** The run's record, with a push this process is not running (it was killed mid-write) turned into `unknown`. */
  async function loadRun(profile: Profile, runId: string): Promise<RunRecord | null> {
    const record = ledger.readRun(profile.id, runId);
    if (record?.replication?.state === "started" && !pushing.has(runKey(profile, runId))) {
      record.replication.state = "unknown";
      await ledger.writeRun(record);
      await removeTree(stagedTree(ledger, profile, runId));
      ctx.logger.warn(
        { profile: profile.id, run_id: runId },
        "a replication left started by an earlier process is unknown",
      );
    }
    return record;
  }

  async function preflight(profile: Profile): Promise<OpResult | null> {
    const checked = await ctx.remote.preflight(profile);
    return checked.ok ? null : remoteFailure(checked);
  }

  async function probe(profile: Profile): Promise<OpResult> {
    const refused = await preflight(profile);
    if (refused !== null) return refused;
    const probed = await ctx.remote.probe(profile);
    if (!probed.ok) return remoteFailure(probed);
    const entries = probed.output.split("\n").filter((line) => line.trim() !== "").length;
    return {
      code: "OK",
      message: `The receiver of profile ${profile.id} answered with its pinned host key and listed its root.`,
      data: { root_entries: entries, duration_ms: Math.round(probed.durationMs) },
    };
  }

  /**
   * The preflight, then the record of a run that is not written yet; a run
   * already replicated is refused (`why` completes the sentence), since a
   * run directory is written once.
   */
  async function unwrittenRun(profile: Profile, runId: string, why: string): Promise<OpResult | RunRecord> {
    const refused = await preflight(profile);
    if (refused !== null) return refused;
    const record = (await loadRun(profile, runId)) ?? emptyRun(profile, runId);
    if (record.replication === null) return record;
    return {
      code: "RUN_EXISTS",
      message: `Run ${runId} was already replicated (${record.replication.state})${why}.`,
    };
  }

  async function dryRun(profile: Profile, runId: string): Promise<OpResult> {
    const record = await unwrittenRun(profile, runId, ", and a run is written once");
    if ("code" in record) return record;
    const present = await checkRemoteAbsent(ctx, profile, runId);
    if (present !== null) return present;
    const staged = await stageSnapshot(ctx, ledger, profile, record);
    if (!staged.ok) return staged.result;
    const pushed = await ctx.remote.push(profile, stagedTree(ledger, profile, runId), runPath(runId), {
      dryRun: true,
    });
    if (!pushed.ok) return remoteFailure(pushed);
    record.dry_run = { snapshot: staged.id, at: now() };
    await ledger.writeRun(record);
    return {
      code: "OK",
      message: `The dry run of run ${runId} previewed snapshot ${staged.id.slice(0, 12)} and wrote nothing.`,
      data: {
        run_id: runId,
        snapshot: staged.id,
        files: staged.manifest.total_files,
        bytes: staged.manifest.total_bytes,
        itemized_changes: countItemized(pushed.output),
      },
    };
  }

  /** What a replicate answers when its push succeeded. */
  function replicated(runId: string, snapshot: NonNullable<RunRecord["snapshot"]>): StoredOutcome {
    return {
      code: "OK",
      message: `Run ${runId} was written to ${runPath(runId)} on the receiver; verify it to trust it.`,
      data: { run_id: runId, snapshot: snapshot.id, files: snapshot.files, bytes: snapshot.bytes },
    };
  }

  /**
   * The first outcome under a key. A key left `started` by a process that
   * died is settled from the run's record: replicated if the push was
   * recorded as done before the process stopped, unknown otherwise.
   */
  async function replay(used: KeyRecord, run: RunRecord | null): Promise<OpResult> {
    let outcome = used.outcome;
    if (used.state === "started" || outcome === null) {
      const done = run?.replication?.key === used.key && run.replication.state === "replicated";
      outcome =
        done && run?.snapshot
          ? replicated(used.run_id, run.snapshot)
          : interruptedWrite(used.run_id, "was cut short when the broker stopped");
      await ledger.writeKey({ ...used, state: "done", outcome });
    }
    return { ...outcome, replayed: true };
  }

  /** The answer for a key already recorded: the first outcome for the same request, a conflict for another. */
  async function usedKey(used: KeyRecord, profile: Profile, runId: string): Promise<OpResult> {
    if (used.profile !== profile.id || used.run_id !== runId || used.op !== "replicate") {
      return {
        code: "IDEMPOTENCY_CONFLICT",
        message: "This idempotency key was already used for a different request, so it is refused here.",
      };
    }
    // Settle the run too (a push left started is unknown), so its record says what the key says.
    return replay(used, await loadRun(profile, runId));
  }

  async function replicate(profile: Profile, runId: string, key: string): Promise<OpResult> {
    const used = ledger.readKey(key);
    if (used !== null) return usedKey(used, profile, runId);
    const record = await unwrittenRun(profile, runId, " under another idempotency key");
    if ("code" in record) return record;
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
    // What a dry run previewed is what goes; without one (the profile allows it), the source as it is now.
    if (!previewed) {
      const taken = await stageSnapshot(ctx, ledger, profile, record);
      if (!taken.ok) return taken.result;
      manifest = taken.manifest;
    }
    const snapshot = record.snapshot;
    if (manifest === null || snapshot === null) throw new Error(`run ${runId} has no snapshot after staging`);

    // From here the key is spent: it is recorded, and synced, before anything is sent.
    const claimed: KeyRecord = {
      key,
      profile: profile.id,
      op: "replicate",
      run_id: runId,
      state: "started",
      outcome: null,
      at: now(),
    };
    if (!(await ledger.claimKey(claimed))) {
      // Another profile's request took the key while this one was being prepared.
      const taken = ledger.readKey(key);
      if (taken === null) throw new Error(`idempotency key ${key} is claimed but has no record`);
      return usedKey(taken, profile, runId);
    }
    record.replication = { key, snapshot: snapshot.id, state: "started", at: now() };
    await ledger.writeRun(record);
    pushing.add(runKey(profile, runId));
    let pushed: RemoteResult;
    try {
      pushed = await ctx.remote.push(profile, stagedTree(ledger, profile, runId), runPath(runId), {
        dryRun: false,
      });
    } catch (err) {
      ctx.logger.error(
        { profile: profile.id, run_id: runId, error: describeError(err).message },
        "push failed",
      );
      pushed = {
        ok: false,
        code: "TRANSFER_FAILED",
        message: "the transport failed while it ran the copy",
        interrupted: true,
        detail: "",
      };
    } finally {
      pushing.delete(runKey(profile, runId));
    }

    let outcome: StoredOutcome;
    if (pushed.ok) {
      outcome = replicated(runId, snapshot);
      record.replication.state = "replicated";
    } else if (!pushed.interrupted && BEFORE_ANY_WRITE.has(pushed.code)) {
      outcome = remoteFailure(pushed);
      // Nothing reached the run directory: the run may be replicated later under a new key.
      record.replication = null;
    } else {
      outcome = interruptedWrite(runId, "was interrupted or failed part way", {
        run_id: runId,
        snapshot: snapshot.id,
        cause_code: pushed.code,
        cause: sentence(pushed.message),
        ...(pushed.detail === "" ? {} : { detail: pushed.detail }),
      });
      record.replication.state = "unknown";
    }
    await ledger.writeRun(record);
    await ledger.writeKey({ ...claimed, state: "done", outcome, at: now() });
    if (record.replication !== null) await removeTree(stagedTree(ledger, profile, runId));
    return outcome;
  }

  async function verify(profile: Profile, runId: string): Promise<OpResult> {
    const record = await loadRun(profile, runId);
    if (record === null || record.snapshot === null) {
      return {
        code: "RUN_NOT_FOUND",
        message: `This broker holds no snapshot of run ${runId} for profile ${profile.id}, so there is nothing to verify against.`,
      };
    }
    const manifest = readManifest(ledger, profile, record);
    if (manifest === null)
      throw new Error(`the manifest of run ${runId} is missing or does not match its id`);
    const refused = await preflight(profile);
    if (refused !== null) return refused;
    const result = await verifyRun(ctx, ledger, profile, runId, record.snapshot.id, manifest);
    if (result.code === "OK") {
      record.verified = { snapshot: record.snapshot.id, at: now() };
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

  return {
    probe: (profile) => serial(profile, () => probe(profile)),
    dryRun: (profile, runId) => serial(profile, () => dryRun(profile, runId)),
    replicate: (profile, runId, key) => serial(profile, () => replicate(profile, runId, key)),
    verify: (profile, runId) => serial(profile, () => verify(profile, runId)),
  };
}
