import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import {
  type Clock,
  KILL_GRACE_MS,
  markStage,
  PIPE_GRACE_MS,
  RelayError,
  systemClock,
} from "../core/index.js";
import { createSubreaper, type Subreaper } from "../proc/index.js";
import { NativeSpawnError, nativeSpawn, nativeSpawnAvailable, type SpawnedChild } from "./native-spawn.js";
import { createOutputSink } from "./output-sink.js";
import { checkCwd, planSpawn, type SpawnPlan, toSpawnError } from "./spawn-plan.js";
import { superviseChild } from "./supervise.js";
import type { ProcessOutcome, ProcessRequest, ProcessRunner } from "./types.js";

export interface ProcessRunnerDeps {
  clock?: Clock;
  /**
   * Finds and stops what each command leaves running. The default does not
   * adopt orphans (only the process launcher does), so it reaches what is
   * still below a live leader, not what was reparented away.
   */
  subreaper?: Subreaper;
  /**
   * false: start children with Node's spawn, as where the posix_spawn binding cannot load (a C
   * library without posix_spawn_file_actions_addclosefrom_np: glibc before 2.34, musl), so the
   * tests hold that path to the same cases. By default posix_spawn wherever it loads.
   */
  posixSpawn?: boolean;
}

/**
 * The one place that starts local one-shot processes.
 *
 * Each child is a session and process-group leader (detached), so timeouts,
 * aborts and killAll() reach its grandchildren too. Children stay referenced
 * on the event loop: the caller is awaiting the outcome, and at shutdown
 * killAll() ends them rather than leaving them behind. What a command leaves
 * running when it ends (background jobs, daemons) is stopped and counted in
 * its outcome.
 */
export function createProcessRunner(deps: ProcessRunnerDeps = {}): ProcessRunner {
  const clock = deps.clock ?? systemClock;
  const subreaper = deps.subreaper ?? createSubreaper({ adopt: false });
  const live = new Set<() => void>();

  const track = (kill: () => void): (() => void) => {
    live.add(kill);
    return () => live.delete(kill);
  };

  async function run(request: ProcessRequest, signal?: AbortSignal): Promise<ProcessOutcome> {
    const started = clock.monotonic();
    const serverCwd = process.cwd();
    const plan = await planSpawn(request, serverCwd);
    markStage("plan");
    const sink = createOutputSink(request.maxBufferBytes, request.mergeStderr);
    if (signal?.aborted) {
      return { exitCode: null, timedOut: false, ...sink.drained(), durationMs: clock.monotonic() - started };
    }
    const posix = deps.posixSpawn !== false && nativeSpawnAvailable();
    const child = await startChild(plan, request, serverCwd, posix);
    const pid = child.pid as number;
    markStage("spawn");
    const result = await superviseChild(child, pid, {
      timeoutMs: request.timeoutMs,
      killGraceMs: request.killGraceMs ?? KILL_GRACE_MS,
      pipeGraceMs: request.pipeGraceMs ?? PIPE_GRACE_MS,
      signal,
      sink,
      stdin: plan.stdin,
      track,
      descendants: subreaper.track(pid),
    });
    markStage("drain");
    const { stoppedProcesses, ...exit } = result;
    return {
      ...exit,
      ...sink.drained(),
      ...(stoppedProcesses > 0 ? { stoppedProcesses } : {}),
      durationMs: clock.monotonic() - started,
    };
  }

  return {
    run,
    active: () => live.size,
    killAll: () => {
      for (const kill of [...live]) kill();
      subreaper.killStrays();
    },
  };
}

/**
 * Spawn the planned child, or reject with a typed error; an 'error' event never goes unheard.
 * Where glibc offers it (`posix`), the child is started with posix_spawn (native-spawn.ts): no
 * copy of this process's page tables, which is most of what a spawn costs a Node process, and no
 * descriptor but 0, 1 and 2 inherited. planSpawn has refused every NUL a C string would cut.
 */
async function startChild(
  plan: SpawnPlan,
  request: ProcessRequest,
  serverCwd: string,
  posix: boolean,
): Promise<SpawnedChild> {
  if (posix) {
    try {
      return nativeSpawn({
        file: plan.file,
        argv: [plan.argv0, ...plan.args],
        env: request.env,
        cwd: plan.cwd === undefined ? undefined : resolve(serverCwd, plan.cwd),
        stdinPipe: plan.stdin !== undefined,
      });
    } catch (err) {
      if (!(err instanceof NativeSpawnError)) throw err;
      const failure = Object.assign(new Error(`spawn ${plan.file} ${err.code}`), { code: err.code });
      if (err.code === "ENOENT" && plan.cwd !== undefined) await checkCwd(plan.cwd, serverCwd);
      throw toSpawnError(failure, plan.programName);
    }
  }
  let child: ChildProcess;
  try {
    child = spawn(plan.file, plan.args, {
      argv0: plan.argv0,
      ...(plan.cwd === undefined ? {} : { cwd: plan.cwd }),
      env: request.env,
      stdio: [plan.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: true,
    });
  } catch (err) {
    // Node validates arguments synchronously (for instance an env value it cannot pass on).
    throw err instanceof RelayError ? err : toSpawnError(err, plan.programName);
  }
  if (child.pid !== undefined) {
    child.on("error", () => {
      // Only spawn failures are reported here in practice; signals go through process.kill
      // on the group, so there is nothing left for this event to tell a running child.
    });
    return child;
  }
  const failure = await new Promise<unknown>((resolve) => child.once("error", resolve));
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.destroy();
  if ((failure as NodeJS.ErrnoException).code === "ENOENT" && plan.cwd !== undefined) {
    // The cwd may have vanished between the check and the spawn; name it rather than the program.
    await checkCwd(plan.cwd, serverCwd);
  }
  throw toSpawnError(failure, plan.programName);
}
