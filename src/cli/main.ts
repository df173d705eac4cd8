#!/usr/bin/env node
import type { ParseArgsConfig } from "node:util";
import { setFlagsFromString } from "node:v8";
import {
  ConfigError,
  checkBindSafety,
  configWarnings,
  loadSettingsReport,
  type SettingsReport,
  snapshotEnvironment,
} from "../config/index.js";
import { checkConfig } from "./check-config.js";
import { fail } from "./exit.js";
import { flagTokens } from "./flags.js";
import { packageVersion, readRuntimeInfo } from "./runtime.js";
import { serve } from "./serve.js";
import { runVerifyAudit } from "./verify-audit.js";

const USAGE = `usage: relay-shell [--check-config] [--verify-audit [--audit-path PATH] [--segment] [--json]] [--version] [--help]
       relay-shell infra-broker --config DIR [--socket PATH] [--state DIR] [--allow-key-file DIR]
                                [--allowed-signers FILE]
       relay-shell consent (list | show ID | approve ID | deny ID | leases | revoke ID) [--db PATH] ...
       relay-shell console enrol --name NAME [--passkeys FILE] ...

relay-shell is an MCP server that runs shell commands for an AI client under a
risk classifier, an operator policy and an append-only audit log. With no flag
it serves MCP on the configured transport (stdio by default), configured by
RELAY_SHELL_* environment variables (and an optional .env file in the working
directory).

options:
  --check-config   load and validate the settings, build the server without
                   serving, print the effective settings and any warnings to
                   stderr; exit 0 if OK, 2 if not (for CI pipelines and
                   deployment checks)
  --verify-audit   verify the hash chain of the audit log (RELAY_SHELL_AUDIT_PATH
                   or --audit-path); exit 0 only for an intact chain anchored at
                   genesis, 2 otherwise
  --audit-path PATH  the file --verify-audit checks (a rotated or shipped copy)
  --segment        accept a chain that does not start at genesis (a rotation
                   segment)
  --json           machine-readable output for --verify-audit
  --version        print the version and exit
  --help           show this help and exit

infra-broker starts the infrastructure broker daemon instead of the MCP
server; \`relay-shell infra-broker --help\` describes it. consent decides the
acts the consent gate holds; \`relay-shell consent --help\` describes it.
console enrol adds an operator's passkey for the web console;
\`relay-shell console --help\` describes it.
`;

interface CliOptions {
  help: boolean;
  version: boolean;
  checkConfig: boolean;
  verifyAudit: boolean;
  auditPath: string | null;
  segment: boolean;
  json: boolean;
}

const FLAGS = {
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  "check-config": { type: "boolean" },
  "verify-audit": { type: "boolean" },
  "audit-path": { type: "string" },
  segment: { type: "boolean" },
  json: { type: "boolean" },
} as const satisfies ParseArgsConfig["options"];

/** The flags, or the message that refuses them. */
function parseFlags(argv: readonly string[]): CliOptions | string {
  const tokens = flagTokens(argv, FLAGS);
  if (typeof tokens === "string") return tokens;
  const options: CliOptions = {
    help: false,
    version: false,
    checkConfig: false,
    verifyAudit: false,
    auditPath: null,
    segment: false,
    json: false,
  };
  for (const { name, value } of tokens) {
    if (name === "audit-path") {
      if (value === undefined || value === "") return "--audit-path needs a file path";
      options.auditPath = value;
    } else if (name === "help") options.help = true;
    else if (name === "version") options.version = true;
    else if (name === "check-config") options.checkConfig = true;
    else if (name === "verify-audit") options.verifyAudit = true;
    else if (name === "segment") options.segment = true;
    else options.json = true;
  }
  return options;
}

function loadOrExit(env: Readonly<Record<string, string | undefined>>): SettingsReport {
  try {
    return loadSettingsReport(env, { cwd: process.cwd() });
  } catch (err) {
    if (err instanceof ConfigError) fail(`invalid configuration: ${err.message}`);
    fail(`invalid configuration: ${String(err)}`);
  }
}

/**
 * V8 settings for a long-running daemon whose memory an operator budgets
 * (docs/adr/0013-bounded-session-memory.md). Set first, before any grammar is
 * compiled or any request handled; measured by `npm run bench` (sessions).
 *
 * - `--liftoff-only`: the shell grammars are WebAssembly, and V8 would
 *   recompile their hottest functions with its optimizing compiler in the
 *   background, leaving tens of MiB in allocator arenas that are never given
 *   back, for no measurable gain in classification time.
 * - `--optimize-for-size`: collect garbage before growing the heap by much.
 * - `--semi-space-growth-factor=1`: keep the young generation at its initial
 *   size instead of growing it to 2 x 16 MiB under a burst of large results.
 */
function leanRuntime(): void {
  for (const flag of ["--liftoff-only", "--optimize-for-size", "--semi-space-growth-factor=1"])
    setFlagsFromString(flag);
}

async function main(): Promise<void> {
  // The broker daemon is a second program with its own flags and none of the MCP settings.
  if (process.argv[2] === "infra-broker") {
    // Loaded only here: the MCP server never evaluates the daemon's code.
    const { runInfraBrokerCli } = await import("./infra-broker.js");
    await runInfraBrokerCli(process.argv.slice(3));
    return;
  }
  // The operator's side of the consent gate: it never serves MCP, so it loads none of the server.
  if (process.argv[2] === "consent") {
    const { runConsentCli } = await import("./consent.js");
    // The database and allowed-signers file the server uses, from the same settings; `--db` overrides the first.
    const { settings } = loadOrExit(snapshotEnvironment());
    process.exitCode = await runConsentCli(process.argv.slice(3), {
      db: settings.consentDb,
      allowedSigners: settings.consentAllowedSigners,
      stateUrl: settings.stateUrl,
      instance: settings.instance,
    });
    return;
  }
  // The operator enrols a console passkey: a one-off page, none of the server.
  if (process.argv[2] === "console") {
    const { runConsoleCli } = await import("./console.js");
    process.exitCode = await runConsoleCli(process.argv.slice(3), loadOrExit(snapshotEnvironment()).settings);
    return;
  }
  leanRuntime();
  const parsed = parseFlags(process.argv.slice(2));
  if (typeof parsed === "string") {
    process.stderr.write(`relay_shell: ${parsed}\n${USAGE}`);
    process.exit(2);
  }
  if (parsed.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (parsed.version) {
    process.stdout.write(`relay-shell ${packageVersion()}\n`);
    return;
  }

  const env = snapshotEnvironment();
  if (parsed.verifyAudit) {
    const path = parsed.auditPath ?? loadOrExit(env).settings.auditPath;
    const result = runVerifyAudit({ path, segment: parsed.segment, json: parsed.json });
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    process.exit(result.exitCode);
  }

  const report = loadOrExit(env);
  const settings = report.settings;
  const refusals: string[] = [];
  const bind = checkBindSafety(settings);
  if (bind) refusals.push(bind);
  if (refusals.length > 0) fail(`invalid configuration: ${refusals.join("; ")}`);
  const warnings = configWarnings(settings, { euid: readRuntimeInfo().euid });

  if (parsed.checkConfig) {
    await checkConfig(report, env, warnings);
    return;
  }

  await serve(report, env, warnings);
}

main().catch((err: unknown) => {
  fail(`fatal: ${err instanceof Error ? err.message : String(err)}`, 1);
});
