import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  type Clock,
  type Logger,
  markStage,
  mergeStages,
  RelayError,
  stageTraceEnabled,
  systemClock,
} from "../core/index.js";
import type { LinkMessage } from "./launcher-protocol.js";
import {
  holdLoop,
  type Launcher,
  type LauncherEntry,
  type Pending,
  post,
  type Runner,
  settle,
  startLauncher,
} from "./launcher-state.js";
import { nativeLauncherPath } from "./native-link.js";
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
  // One look for the built program: it decides the default as well.
  const nativePath = deps.kind === "node" ? null : nativeLauncherPath(import.meta.url);
  if (deps.kind === "native" && nativePath === null)
    throw new Error("the native process launcher is not built");
  const r: Runner = {
    clock: deps.clock ?? systemClock,
    nativePath,
    entry: deps.entry ?? launcherEntry(import.meta.url),
    logger: deps.logger ?? stderrLogger,
    pending: new Map(),
    current: undefined,
    nextId: 1,
    closed: false,
  };
  return {
    run: (request, signal) => run(r, request, signal),
    active: () => r.pending.size,
    killAll: () => {
      if (r.current !== undefined) post(r.current, { kind: "killAll" });
    },
    close: () => {
      if (r.closed) return;
      r.closed = true;
      if (r.current !== undefined) post(r.current, { kind: "close" });
    },
    prestart: () => prestart(r),
  };
}

function run(r: Runner, request: ProcessRequest, signal?: AbortSignal): Promise<ProcessOutcome> {
  const started = r.clock.monotonic();
  if (r.closed) return Promise.reject(new RelayError("OSError", "process launcher is closed"));
  let launcher: Launcher;
  try {
    launcher = r.current ?? startLauncher(r);
  } catch (err) {
    // fork() throws at once for some failures (resource limits); others arrive as 'error'.
    const message = `cannot start the process launcher: ${err instanceof Error ? err.message : String(err)}`;
    return Promise.reject(new RelayError("OSError", message, { cause: err }));
  }
  const id = r.nextId++;
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
    r.pending.set(id, entry);
    holdLoop(launcher, 1);
    // An already aborted signal travels with the request, so the launcher's runner sees it
    // aborted from the start: the request's own checks run (a bad cwd rejects), nothing starts.
    const aborted = signal?.aborted === true;
    try {
      const message: LinkMessage = { kind: "run", id, request, aborted };
      post(launcher, traced ? { ...message, trace: true } : message);
    } catch (err) {
      // The request could not be serialized: nothing was sent.
      settle(r, id, launcher);
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

function prestart(r: Runner): void {
  if (r.closed || r.current !== undefined) return;
  try {
    startLauncher(r);
  } catch {
    // The first run forks again and reports why it could not.
    return;
  }
  // One trip through the whole path (the request over the channel, plan, spawn, drain, the
  // outcome back) while no command waits, so the first command does not pay for loading and
  // compiling it. It runs `true` with an empty environment; nothing a client asked for. A
  // signal goes with it as with every call (listening for an abort loads code of its own).
  run(r, WARM_UP, new AbortController().signal).catch(() => undefined);
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
