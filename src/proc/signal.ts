import { constants as osConstants } from "node:os";
import { sessionMembers } from "./tree.js";

/**
 * Send a signal to every member of a process group (children are started as
 * session leaders, so their pid is the group id). Returns false when no member
 * could be signalled. Group ids 0 and 1 are refused: `kill(0)` would reach our
 * own group and `kill(-1)` every process we may signal.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | number): boolean {
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ESRCH: every member is gone already. EPERM: the remaining members run under other
    // credentials (a setuid program); nothing more can be done from here.
    if (code === "ESRCH" || code === "EPERM") return false;
    throw err;
  }
}

/** Signal one process, whatever became of it meanwhile. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, osConstants.signals[signal]);
  } catch {
    // ESRCH: it died meanwhile. EPERM: it runs under other credentials now (a setuid program).
  }
}

/**
 * Signal every process group that has a member in session `sid`; returns how
 * many groups were reached. `withLeaderGroup` also signals group `sid` itself
 * without finding it first (only while the leader is known to be alive, so a
 * reused pid is never hit).
 */
export function signalSession(sid: number, signals: readonly number[], withLeaderGroup: boolean): number {
  const groups = new Set<number>(withLeaderGroup ? [sid] : []);
  for (const member of sessionMembers(sid)) groups.add(member.pgid);
  let reached = 0;
  for (const pgid of groups) {
    let ok = false;
    for (const signal of signals) ok = signalGroup(pgid, signal) || ok;
    if (ok) reached += 1;
  }
  return reached;
}

/** Exit status, or the negative signal number for a signal death (docs/wire-contract.md §13). */
export function toExitCode(code: number | null, signal: NodeJS.Signals | null): number | null {
  if (code !== null) return code;
  if (signal === null) return null;
  const signum = osConstants.signals[signal];
  return typeof signum === "number" ? -signum : null;
}
