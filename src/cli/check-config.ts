import { describeSettings, type Settings, type SettingsReport } from "../config/index.js";
import type { OperatorConsole } from "../console/index.js";
import { silentLogger } from "../core/index.js";
import { defaultLauncherKind } from "../exec/index.js";
import { modeSummary } from "../policy/index.js";
import { loadHttpEdge } from "../server/index.js";
import { buildServer } from "./build.js";
import { fail } from "./exit.js";
import { policyLine } from "./policy-book.js";
import { httpEdgeOptions, openConsole } from "./serve.js";

function launcherText(kind: "native" | "node"): string {
  return kind === "native"
    ? "native (dist/exec/relay-launcher, ADR 0031)"
    : "node (dist/exec/launcher.js: no native launcher was built here, commands cost more to start)";
}

/**
 * `--check-config`: build the server as a start would (the audit sink, the
 * console, the HTTP edge's state) without serving, print the effective
 * settings and the warnings to stderr; exits 2 on anything a start would refuse.
 */
export async function checkConfig(
  report: SettingsReport,
  env: Readonly<Record<string, string | undefined>>,
  warnings: readonly string[],
): Promise<void> {
  const settings: Settings = report.settings;
  let built: Awaited<ReturnType<typeof buildServer>>;
  try {
    built = await buildServer({ settings, env, logger: silentLogger });
    await built.ready;
  } catch (err) {
    fail(`build_server failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const status = built.audit.status();
  let operatorConsole: OperatorConsole | null = null;
  try {
    operatorConsole = await openConsole(settings, built, silentLogger);
  } catch (err) {
    built.close();
    fail(`console: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (settings.transport === "http") {
    // Builds the edge without binding: opens the OAuth state dir and checks it like a start would.
    try {
      const { createHttpEdge } = await loadHttpEdge();
      await createHttpEdge(httpEdgeOptions(built, settings, silentLogger, operatorConsole)).close();
    } catch (err) {
      built.close();
      fail(`build_server failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  built.close();
  const policies = built.policies.all();
  for (const [name, value] of Object.entries(describeSettings(settings))) {
    process.stderr.write(`relay_shell: setting ${name}=${value === null ? "" : String(value)}\n`);
  }
  if (status.degraded) {
    fail(
      `audit sink degraded (${status.degradedReason}); refuse this configuration for production deployment.`,
    );
  }
  process.stderr.write(
    `relay_shell: config OK (transport=${settings.transport}, policy=${settings.policyMode}, audit=${settings.auditPath})\n`,
  );
  process.stderr.write(`relay_shell: policy ${settings.policyMode}: ${modeSummary(settings.policyMode)}\n`);
  for (const policy of policies)
    process.stderr.write(`relay_shell: policy in force: ${policyLine(policy)}\n`);
  process.stderr.write(`relay_shell: process launcher: ${launcherText(defaultLauncherKind())}\n`);
  for (const warning of warnings) process.stderr.write(`relay_shell: warning: ${warning}\n`);
  for (const name of report.unknown) process.stderr.write(`relay_shell: unknown setting ignored: ${name}\n`);
}
