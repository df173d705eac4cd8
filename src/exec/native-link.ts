import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { constants as osConstants } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { launcherBinaryFromEnv } from "../config/index.js";
import { KILL_GRACE_MS, MAX_TIMER_MS, PIPE_GRACE_MS, REAP_WAIT_MS, RelayError } from "../core/index.js";
import { type FromLauncher, type LinkMessage, toWireError } from "./launcher-protocol.js";
import { decodeReply, replyFrames } from "./native-replies.js";
import { checkCwd, planSpawn, type SpawnPlan, toSpawnError } from "./spawn-plan.js";
import type { ProcessOutcome, ProcessRequest } from "./types.js";

/**
 * The server's side of the native process launcher (native/, ADR
 * 0031): the program is started with pipes on its stdin and stdout, and both
 * carry frames of a 32-bit little-endian length and a payload whose first
 * byte is its kind. Requests are planned here (planSpawn: the same checks and
 * the same errors as the in-process runner), so the launcher only starts,
 * drains, bounds and stops.
 */

const KIND_RUN = 0x52; // R
const KIND_ABORT = 0x41; // A
const KIND_KILL_ALL = 0x4b; // K
const KIND_CLOSE = 0x43; // C

const ERRNO_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(osConstants.errno).map(([name, value]) => [value, name]),
);

/**
 * Where the built launcher is: dist/exec/relay-launcher, also when running from src/ or the bundle.
 * Run from source (the tests), RELAY_LAUNCHER_BINARY may name another build of it instead, such as
 * the sanitized one (scripts/build-launcher.mjs --sanitize); the built server never reads it.
 */
export function nativeLauncherPath(moduleUrl: string): string | null {
  const named = moduleUrl.endsWith(".ts") ? launcherBinaryFromEnv() : undefined;
  if (named !== undefined && named !== "") return resolve(named);
  const candidates = moduleUrl.endsWith(".ts")
    ? ["../../dist/exec/relay-launcher"]
    : ["./relay-launcher", "../exec/relay-launcher"];
  for (const relative of candidates) {
    const path = fileURLToPath(new URL(relative, moduleUrl));
    try {
      accessSync(path, fsConstants.X_OK);
      return path;
    } catch {
      // Not built here (no C compiler at build time): the Node launcher serves instead.
    }
  }
  return null;
}

export interface NativeLink {
  child: ChildProcess;
  /** Send a message; a run is planned first, and a plan that fails comes back as `failed`. */
  send(message: LinkMessage): void;
}

interface Planning {
  aborted: boolean;
}

/**
 * Start the native launcher; its replies reach `deliver` as the Node launcher's messages would. A
 * reply that is not a well-formed frame means the two sides are out of step: `broken` hears why, the
 * launcher is ended (SIGTERM: it stops its commands first) and nothing it sends later is read.
 */
export function startNativeLink(
  path: string,
  deliver: (message: FromLauncher) => void,
  broken: (why: string) => void,
): NativeLink {
  const child = spawn(path, [], {
    // Every request carries the child's complete environment, so the launcher needs none.
    env: {},
    // stdout carries the replies; stderr is shared so a launcher crash is visible.
    stdio: ["pipe", "pipe", "inherit"],
  });
  const planning = new Map<number, Planning>();
  const plans = new Map<number, SpawnPlan>();
  /** The plan stage of a traced run, timed here; the launcher sends its spawn and drain. */
  const planStages = new Map<number, number>();
  const emit = (message: FromLauncher): void => {
    if (message.kind === "done" && message.stages !== undefined) {
      const plan = planStages.get(message.id);
      planStages.delete(message.id);
      if (plan !== undefined) {
        deliver({ ...message, stages: { plan, ...message.stages } });
        return;
      }
    }
    deliver(message);
  };
  const frames = replyFrames();
  let failed = false;
  const fail = (why: string): void => {
    if (failed) return;
    failed = true;
    broken(why);
    child.kill("SIGTERM");
  };

  child.stdin?.on("error", () => {
    // The launcher is gone: 'close' follows and rejects what was open.
  });
  child.stdout?.on("data", (chunk: Buffer) => {
    if (failed) return;
    // Nothing thrown here may escape: an exception in a stream listener would end the server.
    try {
      const { frames: whole, error } = frames(chunk);
      for (const frame of whole) if (!failed) onFrame(frame);
      if (error !== undefined) fail(error);
    } catch (err) {
      fail(`a reply could not be handled: ${err instanceof Error ? err.message : String(err)}`);
    }
  });

  const write = (payload: Buffer): void => {
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32LE(payload.length, 0);
    child.stdin?.write(Buffer.concat([head, payload]));
  };

  const onFrame = (frame: Buffer): void => {
    const reply = decodeReply(frame);
    switch (reply.kind) {
      case "bad":
        fail(reply.why);
        return;
      case "ready":
        emit(reply);
        return;
      case "done":
        plans.delete(reply.id);
        emit(reply);
        return;
      case "failed": {
        const { id, errno } = reply;
        const plan = plans.get(id);
        plans.delete(id);
        spawnFailure(errno, plan)
          .catch((err: unknown) => err)
          .then((error) => emit({ kind: "failed", id, error: toWireError(error) }))
          .catch(() => undefined); // the runner's own handler threw: nothing is left to tell it
      }
    }
  };

  const run = async (
    id: number,
    request: ProcessRequest,
    aborted: boolean,
    trace: boolean,
  ): Promise<void> => {
    const state: Planning = { aborted };
    planning.set(id, state);
    const started = performance.now();
    let plan: SpawnPlan;
    try {
      plan = await planSpawn(request, process.cwd());
    } catch (err) {
      planning.delete(id);
      emit({ kind: "failed", id, error: toWireError(err) });
      return;
    }
    planning.delete(id);
    if (state.aborted) {
      // Stopped before it started: the outcome of a run whose signal fired before the spawn.
      emit({ kind: "done", id, outcome: emptyOutcome() });
      return;
    }
    plans.set(id, plan);
    if (trace) planStages.set(id, (performance.now() - started) * 1000);
    child.stdin?.write(encodeRun(id, plan, request, trace));
  };

  return {
    child,
    send(message) {
      switch (message.kind) {
        case "run":
          // A throw after planning (a request the frame cannot carry) fails this run, never the server.
          run(message.id, message.request, message.aborted, message.trace === true).catch((err: unknown) => {
            planning.delete(message.id);
            plans.delete(message.id);
            emit({ kind: "failed", id: message.id, error: toWireError(err) });
          });
          return;
        case "abort": {
          const state = planning.get(message.id);
          if (state !== undefined) state.aborted = true;
          else write(Buffer.from([KIND_ABORT, ...u32(message.id)]));
          return;
        }
        case "killAll":
        case "close":
          // Requests still being planned have no child yet: aborting them means nothing starts later.
          for (const state of planning.values()) state.aborted = true;
          write(Buffer.from([message.kind === "close" ? KIND_CLOSE : KIND_KILL_ALL]));
          return;
      }
    },
  };
}

function u32(value: number): number[] {
  return [value & 0xff, (value >>> 8) & 0xff, (value >>> 16) & 0xff, (value >>> 24) & 0xff];
}

function emptyOutcome(): ProcessOutcome {
  return { exitCode: null, timedOut: false, output: "", totalBytes: 0, droppedBytes: 0, durationMs: 0 };
}

/** The error a failed posix_spawn stands for, named as the in-process runner names it. */
async function spawnFailure(errno: number, plan: SpawnPlan | undefined): Promise<Error> {
  const code = ERRNO_NAMES[errno] ?? `errno ${errno}`;
  if (plan === undefined)
    return new RelayError("OSError", `the process launcher could not start it: ${code}`);
  const failure = Object.assign(new Error(`spawn ${plan.file} ${code}`), { code });
  if (code === "ENOENT" && plan.cwd !== undefined) {
    // The cwd may have vanished between the check and the spawn; name it rather than the program.
    try {
      await checkCwd(plan.cwd, process.cwd());
    } catch (err) {
      return err as Error;
    }
  }
  return toSpawnError(failure, plan.programName);
}

/**
 * A timing as the launcher takes it, whole milliseconds from 0 to the longest a timer honours, read
 * as supervise.ts reads it: Infinity is no bound (the longest there is), NaN none at all (0).
 */
function clampMs(ms: number): bigint {
  return BigInt(Math.floor(Number.isNaN(ms) ? 0 : Math.min(Math.max(ms, 0), MAX_TIMER_MS)));
}

/**
 * A whole 'R' frame, its length first, written into one buffer. It carries every timing of the
 * command (timeout, kill grace, pipe grace, reap wait), so the launcher owns none of them (ADR 0039).
 */
export function encodeRun(id: number, plan: SpawnPlan, request: ProcessRequest, trace: boolean): Buffer {
  const argv = [plan.argv0, ...plan.args];
  const env = Object.entries(request.env).map(([key, value]) => `${key}=${value}`);
  const texts = [plan.file, plan.cwd === undefined ? "" : resolve(process.cwd(), plan.cwd), ...argv, ...env];
  const stdin = plan.stdin;
  let size = 4 + 1 + 4 + 1 + 8 * 5 + 4 + 4 + 1 + (stdin === undefined ? 0 : 4 + stdin.length);
  for (const text of texts) size += 4 + Buffer.byteLength(text, "utf8");
  const frame = Buffer.allocUnsafe(size);
  let at = frame.writeUInt32LE(size - 4, 0);
  at = frame.writeUInt8(KIND_RUN, at);
  at = frame.writeUInt32LE(id, at);
  at = frame.writeUInt8((trace ? 1 : 0) | (request.mergeStderr ? 2 : 0), at);
  at = frame.writeBigUInt64LE(clampMs(request.timeoutMs), at);
  at = frame.writeBigUInt64LE(clampMs(request.killGraceMs ?? KILL_GRACE_MS), at);
  at = frame.writeBigUInt64LE(clampMs(request.pipeGraceMs ?? PIPE_GRACE_MS), at);
  at = frame.writeBigUInt64LE(clampMs(REAP_WAIT_MS), at);
  const budget = Number.isFinite(request.maxBufferBytes)
    ? Math.max(0, Math.floor(request.maxBufferBytes))
    : 0;
  at = frame.writeBigUInt64LE(BigInt(budget), at);
  const text = (value: string): void => {
    const length = frame.write(value, at + 4, "utf8");
    at = frame.writeUInt32LE(length, at) + length;
  };
  text(texts[0] as string);
  text(texts[1] as string);
  at = frame.writeUInt32LE(argv.length, at);
  for (const arg of argv) text(arg);
  at = frame.writeUInt32LE(env.length, at);
  for (const entry of env) text(entry);
  if (stdin === undefined) {
    frame.writeUInt8(0, at);
  } else {
    at = frame.writeUInt8(1, at);
    at = frame.writeUInt32LE(stdin.length, at);
    stdin.copy(frame, at);
  }
  return frame;
}
