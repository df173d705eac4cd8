import { constants as osConstants } from "node:os";

/**
 * Send a signal to every member of a process group (children are started as
 * session leaders, so their pid is the group id). Returns false when no member
 * could be signalled.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
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

/** Exit status, or the negative signal number for a signal death (docs/wire-contract.md §13). */
export function toExitCode(code: number | null, signal: NodeJS.Signals | null): number | null {
  if (code !== null) return code;
  if (signal === null) return null;
  const signum = osConstants.signals[signal];
  return typeof signum === "number" ? -signum : null;
}
