/**
 * What a command that ran leaves, wherever it ran: a local process (exec/, ProcessOutcome) and a
 * command on a host (ssh/, RemoteOutcome) each add their own fields to it, and a command-style
 * tool's result is written from these (runner/, commandOutcome). A non-zero exit is data, not an
 * exception.
 */
export interface RunOutcome {
  /**
   * Exit status, or the negative signal number for a signal death; null when none was reported
   * (a timeout before any status).
   */
  exitCode: number | null;
  timedOut: boolean;
  /** Kept output decoded as UTF-8 with replacement characters. */
  output: string;
  /** Bytes the command wrote to stdout and stderr in all. */
  totalBytes: number;
  /** Bytes drained but not kept because the buffer budget was spent. */
  droppedBytes: number;
  durationMs: number;
}
