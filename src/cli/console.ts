import { resolve } from "node:path";
import type { Settings } from "../config/index.js";
import { configWarnings } from "../config/index.js";
import {
  createOperatorConsole,
  createPgLoginStore,
  type OperatorConsole,
  type Posture,
  passkeyNameProblem,
  runEnrolment,
} from "../console/index.js";
import { type Logger, silentLogger, systemClock } from "../core/index.js";
import { modeSummary } from "../policy/index.js";
import type { BuiltServer } from "./build.js";
import { flagTokens } from "./flags.js";

const CONSOLE_USAGE = `usage: relay-shell console enrol --name NAME [--passkeys FILE] [--port PORT] [--rp-id ID]
                               [--origin ORIGIN] [--timeout SECONDS]

enrol   run as the operator (the owner of the passkeys file, not the relay's
        account): serve a one-off page on 127.0.0.1, print its address and a
        one-time code, register a passkey in the browser that types the code
        (a discoverable credential with user verification), append its line
        to the passkeys file (created 0644 when missing) and exit

options:
  --name NAME        the passkey's name in the file and in the audit log
  --passkeys FILE    the passkeys file (RELAY_SHELL_CONSOLE_PASSKEYS)
  --port PORT        the page's port on 127.0.0.1 (default: any free port)
  --rp-id ID         the WebAuthn relying party (RELAY_SHELL_CONSOLE_RP_ID)
  --origin ORIGIN    the page's origin when it is reached under another name
                     than http://localhost:PORT (RELAY_SHELL_CONSOLE_ORIGIN)
  --timeout SECONDS  how long the page waits (default 600)
  --help             show this help and exit

Exit status 0 when a passkey was added, 1 when none was (timeout, refused
ceremony, too many wrong codes), 2 for a wrong argument.
`;

const FLAGS = {
  help: { type: "boolean", short: "h" },
  name: { type: "string" },
  passkeys: { type: "string" },
  port: { type: "string" },
  "rp-id": { type: "string" },
  origin: { type: "string" },
  timeout: { type: "string" },
} as const;

function usageError(message: string): number {
  process.stderr.write(`relay_shell: ${message}\n${CONSOLE_USAGE}`);
  return 2;
}

function integerFlag(text: string, min: number, max: number): number | null {
  if (!/^[0-9]+$/.test(text)) return null;
  const value = Number(text);
  return value >= min && value <= max ? value : null;
}

/** `relay-shell console ...`: the operator's side of the console. Returns the exit status. */
export async function runConsoleCli(argv: readonly string[], settings: Settings): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--help" || command === "-h" || command === "help") {
    process.stdout.write(CONSOLE_USAGE);
    return 0;
  }
  if (command !== "enrol")
    return usageError(
      command === undefined ? "console needs a command" : `unknown console command: ${command}`,
    );
  const tokens = flagTokens(rest, FLAGS);
  if (typeof tokens === "string") return usageError(tokens);
  const values = new Map<string, string>();
  for (const token of tokens) {
    if (token.name === "help") {
      process.stdout.write(CONSOLE_USAGE);
      return 0;
    }
    if (token.value === undefined || token.value === "") return usageError(`--${token.name} needs a value`);
    values.set(token.name, token.value);
  }
  const name = values.get("name");
  if (name === undefined) return usageError("console enrol needs --name NAME");
  const nameProblem = passkeyNameProblem(name);
  if (nameProblem) return usageError(`--name: ${nameProblem}`);
  const passkeys = values.get("passkeys") ?? settings.consolePasskeys;
  if (passkeys === "")
    return usageError("console enrol needs --passkeys FILE (or RELAY_SHELL_CONSOLE_PASSKEYS)");
  const port = integerFlag(values.get("port") ?? "0", 0, 65535);
  if (port === null) return usageError("--port: expected an integer 0..65535");
  const timeout = integerFlag(values.get("timeout") ?? "600", 10, 86400);
  if (timeout === null) return usageError("--timeout: expected seconds 10..86400");
  const origin = values.get("origin") ?? settings.consoleOrigin;
  if (origin !== "" && (!URL.canParse(origin) || new URL(origin).origin !== origin.replace(/\/$/, ""))) {
    return usageError("--origin: expected an http:// or https:// origin (scheme, host and port only)");
  }
  const outcome = await runEnrolment({
    name,
    passkeysFile: resolve(passkeys),
    rpId: values.get("rp-id") ?? settings.consoleRpId,
    origin: origin.replace(/\/$/, ""),
    port,
    timeoutSeconds: timeout,
    say: (line) => process.stdout.write(`${line}\n`),
    logger: silentLogger,
    clock: systemClock,
  });
  if (!outcome.ok) {
    process.stderr.write(`relay_shell: console enrol: ${outcome.error}\n`);
    return 1;
  }
  process.stdout.write(
    `Added passkey "${outcome.value.passkey.name}" to ${resolve(passkeys)}:\n${outcome.value.line}\n`,
  );
  return 0;
}

/** What the console's first page shows, read from the live server. */
async function posture(settings: Settings, built: BuiltServer, euid: number): Promise<Posture> {
  const audit = built.audit.status();
  return {
    mode: settings.policyMode,
    modeText: modeSummary(settings.policyMode),
    denyList: settings.policyDeny !== null,
    allowList: settings.policyAllow !== null,
    broker: settings.confirmTier3,
    consent: {
      enabled: settings.consent,
      leaseMode: settings.consentLeaseMode,
      pending: await built.consentPending(),
    },
    audit: {
      path: audit.path,
      chain: audit.chain,
      failClosed: settings.auditFailClosed,
      degraded: audit.degraded,
      degradedReason: audit.degradedReason,
    },
    warnings: configWarnings(settings, { euid }),
    policies: built.policies.all().map((p) => ({
      name: p.name,
      source: p.source,
      mode: p.mode,
      deny: p.deny.length,
      allow: p.allow.length,
      consent: p.consent,
      leaseMode: p.consentLeaseMode,
      confirmTier3: p.confirmTier3,
      maxTier: p.maxTier,
    })),
  };
}

/** The console of a running relay, or null when it is off; throws (start-up fails) on a problem. */
export function buildConsole(settings: Settings, built: BuiltServer, logger: Logger): OperatorConsole | null {
  if (!settings.console) return null;
  const euid = process.geteuid?.() ?? 0;
  return createOperatorConsole(settings, {
    posture: () => posture(settings, built, euid),
    selfUid: euid,
    logger,
    sessions: built.sessions,
    audit: built.audit,
    ...(built.consentApprovals ? { approvals: built.consentApprovals } : {}),
    ...(built.passkeyCounters ? { counters: built.passkeyCounters } : {}),
    // Logins valid on every relay when several share the state; this process's memory otherwise.
    ...(built.shared
      ? { logins: createPgLoginStore(built.shared, settings.consoleSessionTtl, systemClock) }
      : {}),
  });
}
