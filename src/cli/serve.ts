import pino from "pino";
import type { Settings, SettingsReport } from "../config/index.js";
import type { LoopbackListener, OperatorConsole } from "../console/index.js";
import type { Logger } from "../core/index.js";
import { defaultLauncherKind } from "../exec/index.js";
import {
  answerOversized,
  type HttpEdge,
  type HttpEdgeOptions,
  loadHttpEdge,
  openPgOAuthStore,
  serveStdio,
} from "../server/index.js";
import { type BuiltServer, buildServer } from "./build.js";
import { fail } from "./exit.js";

/**
 * Build the server and serve it on the configured transport (with the
 * console when it is on) until the client goes or a signal stops it.
 */
export async function serve(
  report: SettingsReport,
  env: Readonly<Record<string, string | undefined>>,
  warnings: readonly string[],
): Promise<void> {
  const settings = report.settings;
  const logger: Logger = pino({ base: { svc: "relay-shell" } }, pino.destination(2));
  let built: Awaited<ReturnType<typeof buildServer>>;
  try {
    built = await buildServer({ settings, env, logger, adoptOrphans: true });
  } catch (err) {
    fail(`build_server failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  for (const warning of warnings) logger.warn({ warning }, "configuration warning");
  for (const name of report.unknown) logger.warn({ setting: name }, "unknown setting ignored");
  const serving = built;
  // The parser loads in the background; without it no call can be classified, so the server stops.
  built.ready.catch((err: unknown) => {
    logger.error({ err: String(err) }, "the shell classifier failed to load");
    serving.close();
    process.stderr.write(
      `relay_shell: build_server failed: ${err instanceof Error ? err.message : String(err)}\n`,
    );
    process.exit(2);
  });
  const status = built.audit.status();
  if (status.degraded) logger.warn({ reason: status.degradedReason }, "audit sink degraded");
  let operatorConsole: OperatorConsole | null = null;
  try {
    operatorConsole = await openConsole(settings, built, logger);
  } catch (err) {
    built.close();
    fail(`console: ${err instanceof Error ? err.message : String(err)}`);
  }

  if (settings.transport === "http") {
    await serveHttp(built, settings, logger, status.path, operatorConsole);
    return;
  }

  // Over stdio the console has a loopback listener of its own.
  let consoleListener: LoopbackListener | null = null;
  if (operatorConsole) {
    const { listenLoopback } = await import("../console/index.js");
    try {
      consoleListener = await listenLoopback(operatorConsole.handler, settings.consolePort, logger);
    } catch (err) {
      built.close();
      fail(
        `console: cannot listen on 127.0.0.1:${settings.consolePort}: ${err instanceof Error ? err.message : String(err)}`,
        1,
      );
    }
    logger.info({ origin: operatorConsole.origin, port: consoleListener.port }, "console serving");
  }
  const stop = stopOnSignal(async () => {
    await consoleListener?.close();
    built.close();
    await built.server.close();
  });
  logger.info(
    {
      transport: settings.transport,
      policy: settings.policyMode,
      audit: status.path,
      launcher: defaultLauncherKind(),
    },
    "serving",
  );
  try {
    await serveStdio(built.server, {
      maxMessageBytes: maxMessageBytes(settings.maxInput),
      oversized: answerOversized(built.relay),
      onError: (err) => logger.warn({ err: String(err) }, "unreadable message"),
    });
    stop(0);
  } catch (err) {
    logger.error({ err: String(err) }, "transport failed");
    stop(1);
  }
}

/** The console when it is on (loaded only then), or null; throws when it cannot start. */
export async function openConsole(
  settings: Settings,
  built: BuiltServer,
  logger: Logger,
): Promise<OperatorConsole | null> {
  if (!settings.console) return null;
  const { buildConsole } = await import("./console.js");
  return buildConsole(settings, built, logger);
}

export function httpEdgeOptions(
  built: BuiltServer,
  settings: Settings,
  logger: Logger,
  operatorConsole: OperatorConsole | null,
): HttpEdgeOptions {
  return {
    ...(operatorConsole ? { console: operatorConsole.handler } : {}),
    settings,
    mcp: built.mcp,
    calls: built.metrics,
    gauges: built.gauges,
    maxBodyBytes: maxMessageBytes(settings.maxInput),
    logger,
    instance: settings.instance,
    // Several relays share clients, codes and tokens in PostgreSQL; one keeps them in its files.
    ...(built.shared ? { oauthStore: openPgOAuthStore(built.shared) } : {}),
    // A relay whose audit log fails closed refuses every call: the balancer should send none here.
    health: () => {
      const audit = built.audit.status();
      return settings.auditFailClosed && audit.degraded
        ? { ok: false, error: `the audit log fails closed: ${audit.degradedReason}` }
        : { ok: true, value: undefined };
    },
  };
}

/** Serve streamable HTTP until SIGINT/SIGTERM; a listener that cannot bind exits 1. */
async function serveHttp(
  built: BuiltServer,
  settings: Settings,
  logger: Logger,
  auditPath: string,
  operatorConsole: OperatorConsole | null,
): Promise<void> {
  let edge: HttpEdge;
  try {
    const { createHttpEdge } = await loadHttpEdge();
    edge = createHttpEdge(httpEdgeOptions(built, settings, logger, operatorConsole));
  } catch (err) {
    built.close();
    fail(`build_server failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const stop = stopOnSignal(async () => {
    try {
      await edge.close();
    } finally {
      built.close();
    }
  });
  try {
    const bound = await edge.listen();
    logger.info(
      {
        transport: "http",
        host: bound.host,
        port: bound.port,
        path: settings.httpPath,
        oauth: settings.authEnabled,
        console: operatorConsole?.origin ?? null,
        policy: settings.policyMode,
        audit: auditPath,
        launcher: defaultLauncherKind(),
      },
      "serving",
    );
  } catch (err) {
    logger.error({ err: String(err) }, "transport failed");
    stop(1);
  }
}

/**
 * The one way the server stops: SIGINT and SIGTERM stop it with 0, and the
 * returned function stops it with the code given. `shutdown` runs once, however
 * many signals arrive; the process exits when it settles, even if it failed.
 */
function stopOnSignal(shutdown: () => Promise<void>): (code: number) => void {
  let stopping = false;
  const stop = (code: number): void => {
    if (stopping) return;
    stopping = true;
    const exit = (): never => process.exit(code);
    shutdown().then(exit, exit);
  };
  process.on("SIGINT", () => stop(0));
  process.on("SIGTERM", () => stop(0));
  return stop;
}

/**
 * The largest JSON-RPC line read whole: room for an input at the limit even
 * if every byte needs a 6-byte JSON escape, within V8's string limits.
 */
function maxMessageBytes(maxInput: number): number {
  return Math.min(256 * 1024 * 1024, Math.max(8 * 1024 * 1024, maxInput * 6 + 1024 * 1024));
}
