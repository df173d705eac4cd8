import type { AuditLog } from "../audit/index.js";
import { consoleOrigin, type Settings } from "../config/index.js";
import { openCountersDir, type PasskeyCounters } from "../consent/index.js";
import { type Clock, isLoopbackHost, type Logger, systemClock } from "../core/index.js";
import { createConsoleApp } from "./app.js";
import type { ApprovalsChannel } from "./approvals.js";
import { loadAssets } from "./assets.js";
import { type ConsoleHandler, nodeHandler } from "./listen.js";
import type { LoginStore } from "./logins.js";
import type { Posture } from "./pages.js";
import { watchPasskeyFile } from "./passkey-file.js";
import { originHostProblem, rpIdProblem } from "./rp-id.js";
import type { ConsoleSessions } from "./sessions-view.js";

export type ConsoleSettings = Pick<
  Settings,
  | "transport"
  | "httpHost"
  | "httpPort"
  | "httpPath"
  | "console"
  | "consolePort"
  | "consolePasskeys"
  | "consoleRpId"
  | "consoleOrigin"
  | "consoleSessionTtl"
  | "consoleStateDir"
  | "auditPath"
  | "sessionRecordDir"
>;

/**
 * Why the console cannot be served with these settings (its relying party, its origin, or its path
 * beside MCP), or null.
 */
export function consoleOriginProblem(settings: ConsoleSettings): string | null {
  const rpProblem = rpIdProblem(settings.consoleRpId);
  if (rpProblem) return `RELAY_SHELL_CONSOLE_RP_ID: ${rpProblem}`;
  const origin = new URL(consoleOrigin(settings));
  const hostProblem = originHostProblem(origin);
  if (hostProblem) return `RELAY_SHELL_CONSOLE_ORIGIN: ${hostProblem}`;
  const rpId = settings.consoleRpId.toLowerCase();
  if (origin.hostname !== rpId && !origin.hostname.endsWith(`.${rpId}`)) {
    return `RELAY_SHELL_CONSOLE_RP_ID: "${settings.consoleRpId}" must be the host of the console's origin ${origin.origin} or a parent domain of it (WebAuthn binds passkeys to it)`;
  }
  if (origin.protocol === "http:" && !isLoopbackHost(origin.hostname)) {
    return `RELAY_SHELL_CONSOLE_ORIGIN: ${origin.origin} is plain HTTP on a name that is not loopback; browsers allow passkeys there only over https (serve the console behind TLS and set an https:// origin)`;
  }
  const path = settings.httpPath;
  if (settings.transport === "http" && (path === "/console" || path.startsWith("/console/"))) {
    return `RELAY_SHELL_HTTP_PATH: ${path} is under /console, where the console is served; choose another MCP path`;
  }
  if (settings.transport === "http" && !isLoopbackHost(settings.httpHost) && origin.protocol !== "https:") {
    return `RELAY_SHELL_CONSOLE_ORIGIN: the HTTP listener ${settings.httpHost} is not loopback, so the console's origin must be https:// (behind TLS), got ${origin.origin}`;
  }
  return null;
}

export interface ConsoleDeps {
  /** Read on every render of the first page. */
  posture(): Promise<Posture>;
  /** The uid the relay runs as: the passkeys file must not be writable by it. */
  selfUid: number;
  logger: Logger;
  clock?: Clock;
  /** Consent's store and passkey verifier, for the approvals page; absent when consent is off. */
  approvals?: ApprovalsChannel;
  /** The relay's terminals, for the sessions page. */
  sessions: ConsoleSessions;
  /** The relay's audit log, where the operator's kills are written. */
  audit: Pick<AuditLog, "append" | "reserve">;
  /**
   * The passkeys' sign counters, the store consent's passkey verifier counts in too (the database
   * several relays share); absent, the file in RELAY_SHELL_CONSOLE_STATE_DIR.
   */
  counters?: PasskeyCounters;
  /** Where logins are kept (the database several relays share); absent, this process's memory. */
  logins?: LoginStore;
}

export interface OperatorConsole {
  origin: string;
  handler: ConsoleHandler;
}

/**
 * Build the operator console (docs/console.md). Throws, so the relay does
 * not start, when the origin cannot carry passkeys, the passkeys file is
 * unsafe or malformed, or the sign counter state cannot be opened.
 */
export function createOperatorConsole(settings: ConsoleSettings, deps: ConsoleDeps): OperatorConsole {
  const problem = consoleOriginProblem(settings);
  if (problem) throw new Error(problem);
  const passkeys = watchPasskeyFile(settings.consolePasskeys, deps.selfUid);
  const read = passkeys.current();
  if (!read.ok) {
    throw new Error(
      `RELAY_SHELL_CONSOLE_PASSKEYS: the passkeys file cannot be used: ${read.error.join("; ")}`,
    );
  }
  if (read.value.length === 0) {
    deps.logger.warn(
      { file: settings.consolePasskeys },
      "the console's passkeys file names no passkey: nobody can log in",
    );
  }
  let counters: PasskeyCounters;
  try {
    counters = deps.counters ?? openCountersDir(settings.consoleStateDir);
  } catch (err) {
    throw new Error(`RELAY_SHELL_CONSOLE_STATE_DIR: ${err instanceof Error ? err.message : String(err)}`);
  }
  const origin = consoleOrigin(settings);
  const app = createConsoleApp({
    origin,
    rpId: settings.consoleRpId,
    sessionTtlSeconds: settings.consoleSessionTtl,
    passkeys,
    counters,
    assets: loadAssets(),
    posture: deps.posture,
    auditPath: settings.auditPath,
    sessions: deps.sessions,
    audit: deps.audit,
    recordDir: settings.sessionRecordDir,
    clock: deps.clock ?? systemClock,
    logger: deps.logger,
    ...(deps.approvals ? { approvals: deps.approvals } : {}),
    ...(deps.logins ? { logins: deps.logins } : {}),
  });
  return { origin, handler: nodeHandler(app) };
}
