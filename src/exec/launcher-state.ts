import { type ChildProcess, fork } from "node:child_process";
import { type Clock, type Logger, RelayError, type StageTimes } from "../core/index.js";
import {
  decodeFromLauncher,
  type FromLauncher,
  fromWireError,
  type LinkMessage,
  type ToLauncher,
  toWireRequest,
} from "./launcher-protocol.js";
import { startNativeLink } from "./native-link.js";
import type { ProcessOutcome } from "./types.js";

/**
 * The launchers of a launcher runner (launcher-runner.ts) and the requests open on them: how one
 * is started and watched, how its messages settle requests, and how it is retired when it dies or
 * falls out of step. The runner decides when; these steps say how.
 */

/** How the launcher is started: the script and the node flags it runs with. */
export interface LauncherEntry {
  script: string;
  execArgv: string[];
}

export interface Launcher {
  child: ChildProcess;
  /** Hands a message to the launcher (over its IPC channel, or the native one's pipe). */
  send(message: LinkMessage): void;
  ready: boolean;
  /** Messages held until the launcher says it listens. */
  queue: LinkMessage[];
  /** Requests sent to this launcher and not answered yet. */
  open: number;
  retired: boolean;
}

export interface Pending {
  launcher: Launcher;
  started: number;
  /** The launcher's own stage times of a traced request. */
  stages?: StageTimes;
  resolve(outcome: ProcessOutcome): void;
  reject(err: Error): void;
  detach(): void;
}

/** One runner's state: the launcher now in use and every request open on any launcher. */
export interface Runner {
  clock: Clock;
  /** The native program, or null for the Node launcher. */
  nativePath: string | null;
  entry: LauncherEntry;
  logger: Pick<Logger, "error">;
  pending: Map<number, Pending>;
  current: Launcher | undefined;
  nextId: number;
  closed: boolean;
}

export function post(launcher: Launcher, message: LinkMessage): void {
  if (launcher.retired) return;
  if (!launcher.ready) {
    launcher.queue.push(message);
    return;
  }
  launcher.send(message);
}

/** Hold the event loop only while requests are open, like the children of the in-process runner. */
export function holdLoop(launcher: Launcher, change: 1 | -1): void {
  launcher.open += change;
  if (launcher.open === 1 && change === 1) holdHandles(launcher, true);
  else if (launcher.open === 0) holdHandles(launcher, false);
}

export function settle(r: Runner, id: number, launcher: Launcher): Pending | undefined {
  const p = r.pending.get(id);
  if (p === undefined || p.launcher !== launcher) return undefined;
  r.pending.delete(id);
  p.detach();
  holdLoop(launcher, -1);
  return p;
}

/** No more requests go to this launcher (the next run starts another); the open ones reject. */
function retire(r: Runner, launcher: Launcher, why: string, what = "exited"): void {
  if (launcher.retired) return;
  launcher.retired = true;
  launcher.queue = [];
  if (r.current === launcher) r.current = undefined;
  for (const [id, p] of [...r.pending]) {
    if (p.launcher !== launcher) continue;
    settle(r, id, launcher);
    p.reject(new RelayError("OSError", `process launcher ${what} (${why}) before the process finished`));
  }
}

function onMessage(r: Runner, launcher: Launcher, message: FromLauncher): void {
  switch (message.kind) {
    case "ready": {
      launcher.ready = true;
      const queued = launcher.queue;
      launcher.queue = [];
      for (const m of queued) post(launcher, m);
      return;
    }
    case "done": {
      const p = settle(r, message.id, launcher);
      if (p !== undefined && message.stages !== undefined) p.stages = message.stages;
      p?.resolve({ ...message.outcome, durationMs: r.clock.monotonic() - p.started });
      return;
    }
    case "failed":
      settle(r, message.id, launcher)?.reject(fromWireError(message.error));
      return;
    case "broken":
      // The launcher could not read a message of ours: it stops its commands and exits by itself.
      retire(r, launcher, message.why, "stopped on a message it could not read");
  }
}

/** Like a malformed native reply: reported once, what it held fails with why, the next run starts another. */
function outOfStep(r: Runner, launcher: Launcher, why: string): void {
  if (launcher.retired) return;
  r.logger.error(
    { why, pid: launcher.child.pid },
    "process launcher sent a malformed message; restarting it",
  );
  retire(r, launcher, why, "sent a malformed message");
  launcher.child.kill("SIGTERM");
}

/** A message off the IPC channel, decoded first; nothing thrown here may escape the listener. */
function onIpc(r: Runner, launcher: Launcher, raw: unknown): void {
  if (launcher.retired) return;
  try {
    const message = decodeFromLauncher(raw);
    if (message.kind === "bad") outOfStep(r, launcher, message.why);
    else onMessage(r, launcher, message);
  } catch (err) {
    outOfStep(r, launcher, `a message could not be handled: ${String(err)}`);
  }
}

/** Starts the launcher the runner uses (the native one where it was built) and makes it current. */
export function startLauncher(r: Runner): Launcher {
  return r.nativePath === null ? startNode(r) : startNative(r, r.nativePath);
}

/** The Node launcher: launcher.ts forked with an IPC channel and V8 serialization. */
function startNode(r: Runner): Launcher {
  const child = fork(r.entry.script, [], {
    execArgv: r.entry.execArgv,
    // Every request carries the child's complete environment, so the launcher needs none, and
    // NODE_OPTIONS meant for the server (an inspector port, heap sizes) must not apply to it.
    env: {},
    serialization: "advanced",
    // stdout belongs to the MCP protocol; stderr is shared so a launcher crash is visible.
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const send = (message: LinkMessage): void => {
    const wire: ToLauncher =
      message.kind === "run" ? { ...message, request: toWireRequest(message.request) } : message;
    child.send(wire, undefined, undefined, () => {
      // A failed send means the channel is gone: 'close' follows and rejects what was open.
    });
  };
  const launcher: Launcher = { child, send, ready: false, queue: [], open: 0, retired: false };
  child.on("message", (raw: unknown) => onIpc(r, launcher, raw));
  return watch(r, launcher);
}

/** The native launcher (native/): frames over its stdin and stdout. */
function startNative(r: Runner, path: string): Launcher {
  let launcher: Launcher | undefined;
  const link = startNativeLink(
    path,
    (message) => {
      if (launcher !== undefined) onMessage(r, launcher, message);
    },
    // Out of step with us: the link ends it, and what it held fails with the reason.
    (why) => {
      if (launcher !== undefined) retire(r, launcher, why, "sent a malformed reply");
    },
  );
  launcher = { child: link.child, send: link.send, ready: false, queue: [], open: 0, retired: false };
  return watch(r, launcher);
}

function watch(r: Runner, launcher: Launcher): Launcher {
  const { child } = launcher;
  // Nothing holds the event loop while no request is open (holdLoop refs it per request).
  holdHandles(launcher, false);
  child.on("error", (err) => {
    // After a successful start, errors are about signals or sends; 'close' reports the end.
    if (child.pid === undefined) retire(r, launcher, `could not start: ${err.message}`);
  });
  // 'close' comes after both the exit and the end of the IPC channel, so every outcome the
  // launcher sent before dying has been delivered by then.
  child.once("close", (code, signal) => retire(r, launcher, signal ? `signal ${signal}` : `code ${code}`));
  r.current = launcher;
  return launcher;
}

/** Let the handles that keep the event loop alive for a launcher (process, channel, pipes) hold it or not. */
function holdHandles(launcher: { child: ChildProcess }, hold: boolean): void {
  const { child } = launcher;
  const handles: Array<{ ref(): void; unref(): void } | null | undefined> = [
    child,
    child.channel,
    child.stdin as unknown as { ref(): void; unref(): void } | null,
    child.stdout as unknown as { ref(): void; unref(): void } | null,
  ];
  for (const handle of handles) {
    if (typeof handle?.ref !== "function") continue;
    if (hold) handle.ref();
    else handle.unref();
  }
}
