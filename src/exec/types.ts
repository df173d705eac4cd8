import type { RunOutcome } from "../core/index.js";

/** One request for a local one-shot process (docs/wire-contract.md §2.3). */
export interface ProcessRequest {
  /** Run through `/bin/sh -c <command>` ... */
  command?: string;
  /** ... or exec this argv directly (use_shell=false, shell_script interpreters). Exactly one of the two. */
  argv?: readonly string[];
  /** "" or undefined = inherit the server's cwd. */
  cwd?: string;
  /** The complete environment of the child (see buildEnv). */
  env: Readonly<Record<string, string>>;
  /** Written to stdin concurrently with draining; undefined or "" = stdin is /dev/null. */
  stdin?: string;
  timeoutMs: number;
  /** Bytes kept in memory across stdout+stderr together; the rest is drained and counted. */
  maxBufferBytes: number;
  /** true: one interleaved stream; false: stdout text then stderr text. */
  mergeStderr: boolean;
  /** Grace between SIGTERM and SIGKILL of the process group on timeout (default KILL_GRACE_MS, core/limits.ts). */
  killGraceMs?: number;
  /** How long the pipes may stay open after the child exits before their holders are killed (default PIPE_GRACE_MS). */
  pipeGraceMs?: number;
}

/** The outcome of a local process: what any command leaves (RunOutcome), and what it left running. */
export interface ProcessOutcome extends RunOutcome {
  /**
   * Processes the command started that were still running when it ended (its
   * leader exited and its output closed, or it timed out) and were stopped.
   * On a timeout, its own job (members of its process group still below it)
   * is what timed out and is not counted. Absent when there were none.
   */
  stoppedProcesses?: number;
}

export interface ProcessRunner {
  /**
   * Run one process to completion. Resolves with the outcome; rejects with a
   * RelayError only when the process could not be started (bad cwd, missing
   * binary), with a message naming what was missing.
   */
  run(request: ProcessRequest, signal?: AbortSignal): Promise<ProcessOutcome>;
  /** Live child processes. */
  active(): number;
  /** Kill every live process group (server shutdown). */
  killAll(): void;
}
