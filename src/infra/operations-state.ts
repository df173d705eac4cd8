import { isoTimestamp } from "../core/index.js";
import type { Ledger, RunRecord } from "./ledger.js";
import { emptyRun, remoteFailure, stagedTree } from "./runs.js";
import { removeTree } from "./snapshot.js";
import type { InfraContext, OpResult, Profile } from "./types.js";

/**
 * What the broker's operations (operations.ts, operations-replicate.ts) share: the daemon's
 * context, the run ledger, and the runs whose push this process is running.
 */
export interface Ops {
  ctx: InfraContext;
  ledger: Ledger;
  /** Runs whose push is running in this process: a `started` record of any other run was left by a process that died. */
  pushing: Set<string>;
}

export function nowStamp(ops: Ops): string {
  return isoTimestamp(ops.ctx.clock.now());
}

export function runKey(profile: Profile, runId: string): string {
  return `${profile.id}/${runId}`;
}

/** The run's record, with a push this process is not running (it was killed mid-write) turned into `unknown`. */
export async function loadRun(ops: Ops, profile: Profile, runId: string): Promise<RunRecord | null> {
  const { ledger } = ops;
  const record = ledger.readRun(profile.id, runId);
  if (record?.replication?.state === "started" && !ops.pushing.has(runKey(profile, runId))) {
    record.replication.state = "unknown";
    await ledger.writeRun(record);
    await removeTree(stagedTree(ledger, profile, runId));
    ops.ctx.logger.warn(
      { profile: profile.id, run_id: runId },
      "a replication left started by an earlier process is unknown",
    );
  }
  return record;
}

/** The receiver's preflight; null when it passed, else the refusal. */
export async function preflight(ops: Ops, profile: Profile): Promise<OpResult | null> {
  const checked = await ops.ctx.remote.preflight(profile);
  return checked.ok ? null : remoteFailure(checked.error);
}

/**
 * The preflight, then the record of a run that is not written yet; a run
 * already replicated is refused (`why` completes the sentence), since a
 * run directory is written once.
 */
export async function unwrittenRun(
  ops: Ops,
  profile: Profile,
  runId: string,
  why: string,
): Promise<OpResult | RunRecord> {
  const refused = await preflight(ops, profile);
  if (refused !== null) return refused;
  const record = (await loadRun(ops, profile, runId)) ?? emptyRun(profile, runId);
  if (record.replication === null) return record;
  return {
    code: "RUN_EXISTS",
    message: `Run ${runId} was already replicated (${record.replication.state})${why}.`,
  };
}
