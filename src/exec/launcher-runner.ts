import { type ChildProcess, fork } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type Clock,
  type Logger,
  markStage,
  mergeStages,
  RelayError,
  type StageTimes,
  stageTraceEnabled,
  systemClock,
} from "../core/index.js";
import {
  decodeFromLauncher,
  type FromLauncher,
  fromWireError,
  type LinkMessage,
  type ToLauncher,
  toWireRequest,
} from "./launcher-protocol.js";
import { nativeLauncherPath, startNativeLink } from "./native-link.js";
import type { ProcessOutcome, ProcessRequest, ProcessRunner } from "./types.js";

export interface LauncherRunnerDeps {
  /** Measures durationMs on this side, so it includes the hop to the launcher and back. */
  clock?: Clock;
  /**
   * Which launcher to start: the native program (native/, ADR 0031) or the Node
   * one (launcher.ts). By default the native one where it was built, the Node one otherwise.
   */
  kind?: LauncherKind;
  /** Where a launcher that is out of step is reported; one line on stderr when absent. */
  logger?: Pick<Logger, "error">;
  /** The Node launcher's script and flags: launcher.ts beside this module unless a test stands in. */
  entry?: LauncherEntry;
}

export type LauncherKind = "native" | "node";

/** The launcher createLauncherRunner starts by default here. */
export function defaultLauncherKind(): LauncherKind {
  return nativeLauncherPath(import.meta.url) === null ? "node" : "native";
}

export interface LauncherRunner extends ProcessRunner {
  /**
   * Stop for good: the launcher SIGKILLs every live process group, answers the
   * requests still open (killed outcomes) and exits. Later runs reject.
   */
  close(): void;
  /**
   * Fork the launcher now if none is running, so the first command does not
   * wait for it. It does not hold the event loop until a request is open.
   * A fork that fails here is left for the first run to report.
   */
  prestart(): void;
}

/** What prestart() runs once through a new launcher. */
const WARM_UP: ProcessRequest = {
  command: "true",
  env: {},
  timeoutMs: 5000,
  maxBufferBytes: 1024,
  mergeStderr: false,
};

/** How the launcher is started: the script and the node flags it runs with. */
export interface LauncherEntry {
  script: string;
  execArgv: string[];
}

interface Launcher {
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

interface Pending {
  launcher: Launcher;
  started: number;
  /** The launcher's own stage times of a traced request. */
  stages?: StageTimes;
  resolve(outcome: ProcessOutcome): void;
  reject(err: Error): void;
  detach(): void;
}

/**
 * A ProcessRunner that starts children from a small helper process instead of
 * the server itself. On Linux, spawning forks the caller and the fork costs
 * time in proportion to the caller's resident memory; the server carries the
 * parser's wasm heap and the SDK, the launcher only the runner, so its forks
 * are several times cheaper than the server's.
 *
 * The launcher is the native program (native/, ADR 0031) where the build made
 * it, else a Node process running the in-process runner unchanged; either
 * way the output budget, timeouts and group kills apply there and only the
 * bounded outcome crosses back. It is started by prestart() (the server calls
 * it once the client is initialized, so it never delays start-up) or else on
 * first use, and again after it died; requests it held when it died reject
 * with an OSError. It kills its children and exits when this process goes
 * away, even by SIGKILL.
 *
 * active() counts requests in flight, from run() until the outcome arrives,
 * which includes the short planning step before the child exists; killAll()
 * stops all of them, so nothing it counted starts afterwards.
 */
export function createLauncherRunner(deps: LauncherRunnerDeps = {}): LauncherRunner {
  const clock = deps.clock ?? systemClock;
  // One look for the built program: it decides the default as well.
  const nativePath = deps.kind === "node" ? null : nativeLauncherPath(import.meta.url);
  if (deps.kind === "native" && nativePath === null)
    throw new Error("the native process launcher is not built");
  const entry = deps.entry ?? launcherEntry(import.meta.url);
  const logger = deps.logger ?? stderrLogger;
  const pending = new Map<number, Pending>();
  let current: Launcher | undefined;
  let nextId = 1;
  let closed = false;

  const post = (launcher: Launcher, message: LinkMessage): void => {
    if (launcher.retired) return;
    if (!launcher.ready) {
      launcher.queue.push(message);
      return;
    }
    launcher.send(message);
  };

  /** Hold the event loop only while requests are open, like the children of the in-process runner. */
  const holdLoop = (launcher: Launcher, change: 1 | -1): void => {
    launcher.open += change;
    if (launcher.open === 1 && change === 1) holdHandles(launcher, true);
    else if (launcher.open === 0) holdHandles(launcher, false);
  };

  const settle = (id: number, launcher: Launcher): Pending | undefined => {
    const p = pending.get(id);
    if (p === undefined || p.launcher !== launcher) return undefined;
    pending.delete(id);
    p.detach();
    holdLoop(launcher, -1);
    return p;
  };

  /** No more requests go to this launcher (the next run starts another); the open ones reject. */
  const retire = (launcher: Launcher, why: string, what = "exited"): void => {
    if (launcher.retired) return;
    launcher.retired = true;
    launcher.queue = [];
    if (current === launcher) current = undefined;
    for (const [id, p] of [...pending]) {
      if (p.launcher !== launcher) continue;
      settle(id, launcher);
      p.reject(new RelayError("OSError", `process launcher ${what} (${why}) before the process finished`));
    }
  };

  const onMessage = (launcher: Launcher, message: FromLauncher): void => {
    switch (message.kind) {
      case "ready": {
        launcher.ready = true;
        const queued = launcher.queue;
        launcher.queue = [];
        for (const m of queued) post(launcher, m);
        return;
      }
      case "done": {
        const p = settle(message.id, launcher);
        if (p !== undefined && message.stages !== undefined) p.stages = message.stages;
        p?.resolve({ ...message.outcome, durationMs: clock.monotonic() - p.started });
        return;
      }
      case "failed":
        settle(message.id, launcher)?.reject(fromWireError(message.error));
        return;
      case "broken":
        // The launcher could not read a message of ours: it stops its commands and exits by itself.
        retire(launcher, message.why, "stopped on a message it could not read");
    }
  };

  /** Like a malformed native reply: reported once, what it held fails with why, the next run starts another. */
  const outOfStep = (launcher: Launcher, why: string): void => {
    if (launcher.retired) return;
    logger.error(
      { why, pid: launcher.child.pid },
      "process launcher sent a malformed message; restarting it",
    );
    retire(launcher, why, "sent a malformed message");
    launcher.child.kill("SIGTERM");
  };

  /** A message off the IPC channel, decoded first; nothing thrown here may escape the listener. */
  const onIpc = (launcher: Launcher, raw: unknown): void => {
    if (launcher.retired) return;
    try {
      const message = decodeFromLauncher(raw);
      if (message.kind === "bad") outOfStep(launcher, message.why);
      else onMessage(launcher, message);
    } catch (err) {
      outOfStep(launcher, `a message could not be handled: ${String(err)}`);
    }
  };

  /** The Node launcher: launcher.ts forked with an IPC channel and V8 serialization. */
  const startNode = (): Launcher => {
    const child = fork(entry.script, [], {
      execArgv: entry.execArgv,
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
    child.on("message", (raw: unknown) => onIpc(launcher, raw));
    return watch(launcher);
  };

  /** The native launcher (native/): frames over its stdin and stdout. */
  const startNative = (path: string): Launcher => {
    let launcher: Launcher | undefined;
    const link = startNativeLink(
      path,
      (message) => {
        if (launcher !== undefined) onMessage(launcher, message);
      },
      // Out of step with us: the link ends it, and what it held fails with the reason.
      (why) => {
        if (launcher !== undefined) retire(launcher, why, "sent a malformed reply");
      },
    );
    launcher = { child: link.child, send: link.send, ready: false, queue: [], open: 0, retired: false };
    return watch(launcher);
  };

  const start = (): Launcher => (nativePath === null ? startNode() : startNative(nativePath));

  const watch = (launcher: Launcher): Launcher => {
    const { child } = launcher;
    // Nothing holds the event loop while no request is open (holdLoop refs it per request).
    holdHandles(launcher, false);
    child.on("error", (err) => {
      // After a successful start, errors are about signals or sends; 'close' reports the end.
      if (child.pid === undefined) retire(launcher, `could not start: ${err.message}`);
    });
    // 'close' comes after both the exit and the end of the IPC channel, so every outcome the
    // launcher sent before dying has been delivered by then.
    child.once("close", (code, signal) => retire(launcher, signal ? `signal ${signal}` : `code ${code}`));
    current = launcher;
    return launcher;
  };

  function run(request: ProcessRequest, signal?: AbortSignal): Promise<ProcessOutcome> {
    const started = clock.monotonic();
    if (closed) return Promise.reject(new RelayError("OSError", "process launcher is closed"));
    let launcher: Launcher;
    try {
      launcher = current ?? start();
    } catch (err) {
      // fork() throws at once for some failures (resource limits); others arrive as 'error'.
      const message = `cannot start the process launcher: ${err instanceof Error ? err.message : String(err)}`;
      return Promise.reject(new RelayError("OSError", message, { cause: err }));
    }
    const id = nextId++;
    const traced = stageTraceEnabled();
    if (traced) markStage("exec_request");
    let entry: Pending | undefined;
    const outcome = new Promise<ProcessOutcome>((resolve, reject) => {
      const onAbort = (): void => post(launcher, { kind: "abort", id });
      entry = {
        launcher,
        started,
        resolve,
        reject,
        detach: () => signal?.removeEventListener("abort", onAbort),
      };
      pending.set(id, entry);
      holdLoop(launcher, 1);
      // An already aborted signal travels with the request, so the launcher's runner sees it
      // aborted from the start: the request's own checks run (a bad cwd rejects), nothing starts.
      const aborted = signal?.aborted === true;
      try {
        const message: LinkMessage = { kind: "run", id, request, aborted };
        post(launcher, traced ? { ...message, trace: true } : message);
      } catch (err) {
        // The request could not be serialized: nothing was sent.
        settle(id, launcher);
        reject(err);
        return;
      }
      if (!aborted) signal?.addEventListener("abort", onAbort, { once: true });
    });
    if (!traced) return outcome;
    // The wait for the launcher holds its spawn and drain; what is left of it is the hop.
    return outcome.then((o) => {
      markStage("launcher_hop");
      mergeStages("launcher_hop", entry?.stages);
      return o;
    });
  }

  return {
    run,
    active: () => pending.size,
    killAll: () => {
      if (current !== undefined) post(current, { kind: "killAll" });
    },
    close: () => {
      if (closed) return;
      closed = true;
      if (current !== undefined) post(current, { kind: "close" });
    },
    prestart: () => {
      if (closed || current !== undefined) return;
      try {
        start();
      } catch {
        // The first run forks again and reports why it could not.
        return;
      }
      // One trip through the whole path (the request over the channel, plan, spawn, drain, the
      // outcome back) while no command waits, so the first command does not pay for loading and
      // compiling it. It runs `true` with an empty environment; nothing a client asked for. A
      // signal goes with it as with every call (listening for an abort loads code of its own).
      run(WARM_UP, new AbortController().signal).catch(() => undefined);
    },
  };
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

/**
 * V8 grows the young generation up to 16 MiB per semi-space as decoded outputs
 * churn through it, and every resident page is copied into the page tables of
 * each fork. Capped at 1 MiB the launcher stays near 20 MiB of anonymous memory
 * instead of drifting towards 40 MiB, which measurably shortens each spawn.
 */
export const LAUNCHER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];

/**
 * The launcher script next to this module: dist/exec/launcher.js when built.
 * Run from source (vitest, tsx) this module is a .ts file; the test workers
 * carry no TypeScript loader in process.execArgv, so the launcher gets tsx
 * explicitly. The server's own node flags are not passed on either way: an
 * inspector port or a heap size chosen for the server has no place in it.
 */
export function launcherEntry(moduleUrl: string): LauncherEntry {
  if (moduleUrl.endsWith(".ts")) {
    return {
      script: fileURLToPath(new URL("./launcher.ts", moduleUrl)),
      execArgv: ["--import", tsxLoader(moduleUrl), ...LAUNCHER_NODE_FLAGS],
    };
  }
  // Beside this module when the tree is unbundled; from the server's bundle (dist/cli/main.js,
  // scripts/bundle.mjs) the launcher keeps its own modules in dist/exec/.
  const beside = fileURLToPath(new URL("./launcher.js", moduleUrl));
  const script = existsSync(beside) ? beside : fileURLToPath(new URL("../exec/launcher.js", moduleUrl));
  return { script, execArgv: [...LAUNCHER_NODE_FLAGS] };
}

function tsxLoader(moduleUrl: string): string {
  try {
    return pathToFileURL(createRequire(moduleUrl).resolve("tsx")).href;
  } catch {
    // Not resolvable from here: let node resolve it from the working directory.
    return "tsx";
  }
}

/** Without the server's logger, the report goes where the launcher's own crash reports go. */
const stderrLogger: Pick<Logger, "error"> = {
  error: (facts, message) => void process.stderr.write(`relay-shell: ${message}: ${JSON.stringify(facts)}\n`),
};
