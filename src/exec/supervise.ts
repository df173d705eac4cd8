import { MAX_TIMER_MS, REAP_WAIT_MS } from "../core/index.js";
import { type CommandTracker, signalGroup, toExitCode } from "../proc/index.js";
import type { SpawnedChild } from "./native-spawn.js";
import type { OutputSink, StreamName } from "./output-sink.js";

export interface SuperviseOptions {
  timeoutMs: number;
  killGraceMs: number;
  /** After the child exits, how long its pipes may stay open before what holds them is killed. */
  pipeGraceMs: number;
  signal: AbortSignal | undefined;
  sink: OutputSink;
  stdin: Buffer | undefined;
  /** Called once with a hard-kill handle; the returned function is called when the run ends. */
  track(kill: () => void): () => void;
  /** Everything the child starts, wherever it went (setsid, double fork): stopped when the run ends. */
  descendants: CommandTracker;
}

export interface SupervisedExit {
  exitCode: number | null;
  timedOut: boolean;
  /**
   * Processes the child started that were still running when the run ended, and were stopped;
   * on a timeout, the members of its own group still below it are the timeout's and not counted.
   */
  stoppedProcesses: number;
}

/**
 * Drive one spawned child (already a process-group leader) to its end: feed
 * stdin, drain stdout/stderr into the sink, enforce the timeout and abort by
 * TERM then KILL of the whole group, and resolve once the child has exited and
 * its pipes are closed, or once the bounded waits have run out. Never rejects.
 * Whatever the child started and left running is stopped then: a one-shot
 * command does not outlive its call.
 */
export function superviseChild(
  child: SpawnedChild,
  pgid: number,
  opts: SuperviseOptions,
): Promise<SupervisedExit> {
  return new Promise((resolve) => {
    const timers = new Set<NodeJS.Timeout>();
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let openPipes = 0;
    let timedOut = false;
    let termSent = false;
    let killSent = false;
    let done = false;

    const after = (ms: number, fn: () => void): NodeJS.Timeout => {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          fn();
        },
        Math.min(Math.max(ms, 0), MAX_TIMER_MS),
      );
      timers.add(timer);
      return timer;
    };

    const finish = (): void => {
      if (done) return;
      done = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      opts.signal?.removeEventListener("abort", onAbort);
      untrack();
      // Background jobs, setsid and double-forked daemons alike: one scan, then everything goes.
      // It runs before the group kill, so what the kill would end unseen is still found and counted.
      const stoppedProcesses = opts.descendants.end();
      // A group we had to stop may still hold members that ignored TERM or never held our
      // pipes; none of them may outlive the call.
      if (termSent || killSent) signalGroup(pgid, "SIGKILL");
      child.stdin?.destroy();
      child.stdout?.destroy();
      child.stderr?.destroy();
      const exitCode = timedOut || exit === undefined ? null : toExitCode(exit.code, exit.signal);
      resolve({ exitCode, timedOut, stoppedProcesses });
    };

    const kill = (): void => {
      if (killSent || done) return;
      killSent = true;
      // A process that escaped the group may be what holds the pipes open.
      opts.descendants.stopDescendants(() => signalGroup(pgid, "SIGKILL"));
      after(REAP_WAIT_MS, finish);
    };

    const terminate = (): void => {
      if (termSent || killSent || done) return;
      termSent = true;
      opts.descendants.signalDescendants("SIGTERM", () => signalGroup(pgid, "SIGTERM"));
      after(opts.killGraceMs, kill);
    };

    function onAbort(): void {
      terminate();
    }

    const untrack = opts.track(kill);

    const timeoutTimer = after(opts.timeoutMs, () => {
      if (exit !== undefined) return;
      timedOut = true;
      terminate();
    });

    child.once("exit", (code, signal) => {
      // libuv has collected the status: from here on the pid is not ours to protect.
      opts.descendants.leaderReaped();
      if (done) return;
      exit = { code, signal };
      clearTimeout(timeoutTimer);
      timers.delete(timeoutTimer);
      if (openPipes === 0) finish();
      else after(opts.pipeGraceMs, kill);
    });

    const drain = (name: StreamName, stream: NodeJS.ReadableStream | null): void => {
      if (stream === null) return;
      openPipes += 1;
      stream.on("data", (chunk: Buffer) => opts.sink.write(name, chunk));
      stream.on("error", () => {
        // A read error on our end of the pipe: 'close' follows, and the run ends with what was read.
      });
      stream.once("close", () => {
        openPipes -= 1;
        if (openPipes === 0 && exit !== undefined) finish();
      });
    };
    drain("stdout", child.stdout);
    drain("stderr", child.stderr);

    if (opts.stdin !== undefined && child.stdin !== null) {
      child.stdin.on("error", () => {
        // EPIPE/ECONNRESET: the child exited or closed stdin without reading it all. That is
        // the child's choice, not a failure of the run.
      });
      child.stdin.end(opts.stdin);
    }

    if (opts.signal !== undefined) {
      if (opts.signal.aborted) terminate();
      else opts.signal.addEventListener("abort", onAbort, { once: true });
    }
  });
}
