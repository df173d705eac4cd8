import { accessSync, constants } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { readEnvFile } from "./env-file.js";
import { createSettingsSchema, lenientWarnings, type RawSettings, SETTING_ENV_NAMES } from "./schema.js";
import type { Settings } from "./types.js";
import type { PathContext } from "./values.js";
import { rememberLoadWarnings } from "./warnings.js";

/** Invalid configuration: one line per problem, every problem at once. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    this.problems = Object.freeze([...problems]);
  }
}

export interface LoadOptions {
  /** Directory of the optional `.env` file and base of relative paths; default process.cwd(). */
  cwd?: string;
  /** Home directory for `~`; default `$HOME` from `env`, else the account's home. */
  homeDir?: string;
  /** Base of the embedded state defaults; default `$XDG_STATE_HOME` from `env`. Ignored unless absolute. */
  xdgStateHome?: string;
}

export interface SettingsReport {
  settings: Settings;
  /** `RELAY_SHELL_*` names that are not settings (typos, removed settings), upper-cased and sorted. */
  unknown: string[];
  /** The `.env` file that was read, or null. */
  envFile: string | null;
}

const PREFIX = "RELAY_SHELL_";
// Deploy-time variables for the edge proxy templates; the server must not read them.
const EDGE_PREFIX = "RELAY_SHELL_EDGE_";

/** A frozen copy of the process environment: the one place in src/ that reads it. */
export function snapshotEnvironment(): Readonly<Record<string, string | undefined>> {
  return Object.freeze({ ...process.env });
}

function absoluteOrUndefined(value: string | undefined): string | undefined {
  return value !== undefined && value !== "" && isAbsolute(value) ? value : undefined;
}

function pathContext(env: Readonly<Record<string, string | undefined>>, options: LoadOptions): PathContext {
  const cwd = resolve(options.cwd ?? process.cwd());
  const home = resolve(options.homeDir ?? absoluteOrUndefined(env.HOME) ?? homedir());
  const xdg = absoluteOrUndefined(options.xdgStateHome ?? env.XDG_STATE_HOME);
  const stateDir = xdg ? join(resolve(xdg), "relay-shell") : join(home, ".local", "state", "relay-shell");
  return { cwd, home, stateDir };
}

/**
 * Our variables from the process environment, keyed by upper-cased name.
 * Names are case-insensitive, so two spellings with different values are
 * ambiguous and refused rather than resolved by an arbitrary order.
 */
function collectProcessEnv(env: Readonly<Record<string, string | undefined>>, problems: string[]) {
  const found = new Map<string, { names: string[]; values: Set<string> }>();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const upper = name.toUpperCase();
    if (!upper.startsWith(PREFIX)) continue;
    const entry = found.get(upper) ?? { names: [], values: new Set<string>() };
    entry.names.push(name);
    entry.values.add(value);
    found.set(upper, entry);
  }
  const values = new Map<string, string>();
  for (const [upper, entry] of found) {
    const [first] = entry.values;
    if (entry.values.size > 1 || first === undefined) {
      problems.push(`${upper}: set more than once with different values (${entry.names.sort().join(", ")})`);
      continue;
    }
    values.set(upper, first);
  }
  return values;
}

/**
 * Load, validate and freeze the settings, and report unknown names. The
 * process environment wins over `.env`: the file only fills in what the
 * environment leaves unset (an empty variable counts as set).
 */
export function loadSettingsReport(
  env: Readonly<Record<string, string | undefined>>,
  options: LoadOptions = {},
): SettingsReport {
  const ctx = pathContext(env, options);
  const problems: string[] = [];
  const file = readEnvFile(ctx.cwd);
  problems.push(...file.problems);
  const merged = collectProcessEnv(env, problems);
  for (const [upper, { value }] of file.values) {
    if (!merged.has(upper)) merged.set(upper, value);
  }

  const known = new Set(Object.values(SETTING_ENV_NAMES));
  const unknown = [...merged.keys()]
    .filter((name) => !known.has(name) && !name.startsWith(EDGE_PREFIX))
    .sort();

  const raw: RawSettings = {};
  for (const [field, name] of Object.entries(SETTING_ENV_NAMES) as [keyof Settings, string][]) {
    const value = merged.get(name);
    if (value !== undefined) raw[field] = value;
  }

  const result = createSettingsSchema(ctx).safeParse(raw);
  if (!result.success) {
    for (const issue of result.error.issues) {
      // Our checks write complete lines; anything else names the field.
      problems.push(
        issue.code === "custom" ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`,
      );
    }
  }
  if (result.success && result.data.consent && file.path !== null && relayCanRewrite(file.path)) {
    problems.push(
      `RELAY_SHELL_CONSENT is on and settings are read from ${file.path}, which the relay's own account can write or replace: a command the relay runs could change its consent and policy settings for the next start. Set them in the environment (the service's EnvironmentFile) or make the file and its directory unwritable by this account (docs/consent.md)`,
    );
  }
  if (result.success && result.data.stateUrl !== "" && result.data.instance === "") {
    problems.push(
      "RELAY_SHELL_STATE_URL is set, so several relays may share the state: RELAY_SHELL_INSTANCE must name this one (1-32 lowercase letters, digits and inner hyphens, different on each relay); it marks its audit records and its terminals (docs/scaling.md)",
    );
  }
  if (problems.length > 0 || !result.success) throw new ConfigError(problems);
  const settings = Object.freeze(result.data);
  rememberLoadWarnings(settings, lenientWarnings(merged));
  return { settings, unknown, envFile: file.path };
}

/**
 * The launcher build the test suites name with RELAY_LAUNCHER_BINARY (the sanitized one in CI).
 * Only exec/native-link.ts asks, and only when running from source: the built server never does.
 */
export function launcherBinaryFromEnv(): string | undefined {
  return process.env.RELAY_LAUNCHER_BINARY;
}

/** Load, validate and freeze the settings; throws ConfigError naming every invalid value. */
export function loadSettings(
  env: Readonly<Record<string, string | undefined>>,
  options: LoadOptions = {},
): Settings {
  return loadSettingsReport(env, options).settings;
}

/** Whether this process could rewrite `path`, or replace it through its directory. */
function relayCanRewrite(path: string): boolean {
  const writable = (p: string): boolean => {
    try {
      accessSync(p, constants.W_OK);
      return true;
    } catch {
      return false;
    }
  };
  return writable(path) || writable(dirname(path));
}
