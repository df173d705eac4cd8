import { isAbsolute, normalize } from "node:path";
import { ConfigError } from "./load.js";

/** What the broker daemon takes from its environment (set by systemd for a service). */
export interface InfraEnvironment {
  /** `$CREDENTIALS_DIRECTORY` (LoadCredential=): where the keys are, or null. */
  credentialsDirectory: string | null;
  /** The first `$RUNTIME_DIRECTORY` (RuntimeDirectory=): the default home of the socket, or null. */
  runtimeDirectory: string | null;
  /** The first `$STATE_DIRECTORY` (StateDirectory=): the default state directory, or null. */
  stateDirectory: string | null;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * One directory variable: unset or empty is null, anything else must be an
 * absolute path. systemd joins several directories with `:`; the first is the
 * one the unit names first.
 */
function directory(env: Env, name: string, list: boolean, problems: string[]): string | null {
  const raw = env[name];
  if (raw === undefined || raw === "") return null;
  const value = list ? (raw.split(":")[0] ?? "") : raw;
  if (!isAbsolute(value) || value.includes("\0")) {
    problems.push(`${name}: expected an absolute directory path, got ${JSON.stringify(raw)}`);
    return null;
  }
  return normalize(value);
}

/**
 * Read the broker daemon's environment. Only absolute paths are taken: a
 * relative one would be resolved against whatever directory the daemon was
 * started in, which is not what a unit file means. Throws ConfigError listing
 * every problem.
 */
export function readInfraEnvironment(env: Env): InfraEnvironment {
  const problems: string[] = [];
  const result: InfraEnvironment = {
    credentialsDirectory: directory(env, "CREDENTIALS_DIRECTORY", false, problems),
    runtimeDirectory: directory(env, "RUNTIME_DIRECTORY", true, problems),
    stateDirectory: directory(env, "STATE_DIRECTORY", true, problems),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return result;
}
