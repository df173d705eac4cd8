import { constants as osConstants } from "node:os";
import {
  enableStageTrace,
  LAUNCHER_CLOSE_DEADLINE_MS,
  RelayError,
  type StageTimes,
  traceCall,
} from "../core/index.js";
import { createSubreaper } from "../proc/index.js";
import {
  decodeToLauncher,
  type FromLauncher,
  fromWireRequest,
  type ToLauncher,
  toWireError,
  type WireRequest,
} from "./launcher-protocol.js";
import { nativeSpawnAvailable } from "./native-spawn.js";
import { createProcessRunner } from "./process-runner.js";

/** The exit status after a message of the server could not be read (EX_DATAERR). */
const EXIT_OUT_OF_STEP = 65;

/**
 * The launcher side: answer run requests from the parent with the in-process
 * runner, until the parent says close or goes away. Whatever way it ends, every
 * live process group is SIGKILLed first, so no child outlives the server.
 */
export function serveLauncher(host: NodeJS.Process): void {
  if (host.send === undefined) throw new Error("the process launcher needs an IPC channel to its parent");
  // Every orphan a command leaves comes back here, however it detached, so nothing it started
  // outlives the call, and nothing at all outlives the launcher
  // (docs/adr/0019-one-shot-commands-stop-what-they-start.md).
  const runner = createProcessRunner({ subreaper: createSubreaper({ adopt: true }) });
  // Bind posix_spawn now, while no command waits: the first command then pays nothing for it.
  nativeSpawnAvailable();
  const inflight = new Map<number, AbortController>();
  let unsent = 0;
  let closing = false;
  let exitStatus = 0;

  const stopAll = (): void => {
    runner.killAll();
    // Requests still being planned have no child yet: aborting them means nothing starts later.
    for (const controller of inflight.values()) controller.abort();
  };

  const exitIfDone = (): void => {
    if (closing && inflight.size === 0 && unsent === 0) host.exit(exitStatus);
  };

  const reply = (message: FromLauncher): void => {
    if (!host.connected) return;
    unsent += 1;
    host.send?.(message, undefined, undefined, () => {
      // A failed send means the parent is gone: the 'disconnect' handler ends everything.
      unsent -= 1;
      exitIfDone();
    });
  };

  const run = (id: number, request: WireRequest, aborted: boolean, trace = false): void => {
    if (closing) {
      const error = new RelayError("OSError", "process launcher is closing");
      reply({ kind: "failed", id, error: toWireError(error) });
      return;
    }
    const controller = new AbortController();
    // Aborted before the runner sees the signal, as when a caller passes an aborted signal in-process.
    if (aborted) controller.abort();
    inflight.set(id, controller);
    // A traced request (the server traces its calls) sends back its spawn and drain times.
    let stages: StageTimes | undefined;
    if (trace) enableStageTrace();
    const work = () => runner.run(fromWireRequest(request), controller.signal);
    const running = trace ? traceCall("launcher", work, (r) => (stages = r.stages)) : work();
    running.then(
      (outcome) => {
        inflight.delete(id);
        reply(stages === undefined ? { kind: "done", id, outcome } : { kind: "done", id, outcome, stages });
      },
      (err: unknown) => {
        inflight.delete(id);
        reply({ kind: "failed", id, error: toWireError(err) });
      },
    );
  };

  /** Stop every command, answer what is still open, then exit. */
  const close = (): void => {
    closing = true;
    stopAll();
    setTimeout(() => host.exit(exitStatus), LAUNCHER_CLOSE_DEADLINE_MS).unref();
    exitIfDone();
  };

  const handle = (message: ToLauncher): void => {
    switch (message.kind) {
      case "run":
        run(message.id, message.request, message.aborted, message.trace === true);
        return;
      case "abort":
        inflight.get(message.id)?.abort();
        return;
      case "killAll":
        stopAll();
        return;
      case "close":
        close();
    }
  };

  /**
   * The server sent what is none of the protocol's messages: the two sides are out of step, so the
   * launcher says why (the server fails what it had asked and starts another), stops and exits.
   */
  const outOfStep = (why: string): void => {
    if (exitStatus !== 0) return;
    exitStatus = EXIT_OUT_OF_STEP;
    host.stderr.write(`relay-shell process launcher: a message from the server could not be read: ${why}\n`);
    reply({ kind: "broken", why });
    close();
  };

  host.on("message", (raw: unknown) => {
    if (exitStatus !== 0) return;
    // Nothing thrown here may escape: the listener would take the launcher down with its children.
    try {
      const message = decodeToLauncher(raw);
      if (message.kind === "bad") outOfStep(message.why);
      else handle(message);
    } catch (err) {
      outOfStep(`a message could not be handled: ${String(err)}`);
    }
  });

  // The parent closed the channel or died (even by SIGKILL, the kernel closes its end).
  host.on("disconnect", () => {
    stopAll();
    host.exit(0);
  });

  // Ctrl-C in a terminal reaches the whole foreground group, the launcher included; the server
  // handles it and closes the launcher (or dies, which disconnects it). Dying here first would
  // orphan the children the server is about to kill.
  host.on("SIGINT", () => undefined);
  for (const signal of ["SIGTERM", "SIGHUP"] as const) {
    host.on(signal, () => {
      stopAll();
      host.exit(128 + osConstants.signals[signal]);
    });
  }
  host.on("uncaughtException", (err) => {
    stopAll();
    host.stderr.write(`relay-shell process launcher: ${err.stack ?? String(err)}\n`);
    host.exit(70);
  });

  reply({ kind: "ready" });
}
