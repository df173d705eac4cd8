import { constants as fsConstants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { RelayError } from "../core/index.js";
import type { ProcessRequest } from "./types.js";

const SHELL = "/bin/sh";
// Used when the child's environment has no PATH at all (what libuv's own lookup falls back to).
const FALLBACK_PATH = "/usr/bin:/bin";
// Merging stderr into stdout through this one-line shell gives the child a single pipe on fds 1
// and 2, so lines keep the order the child wrote them in (two pipes read by Node can reorder a
// quick `echo out; echo err >&2`). The shell execs at once: same pid, same process group.
const MERGE_WRAPPER = 'exec "$0" "$@" 2>&1';
const MERGE_PREFIX = "exec 2>&1\n";

/** Everything spawn() needs, worked out and checked before any process exists. */
export interface SpawnPlan {
  file: string;
  args: string[];
  argv0: string;
  /** undefined = inherit the server's cwd. */
  cwd: string | undefined;
  stdin: Buffer | undefined;
  /** The name to use in error messages about the program. */
  programName: string;
}

/**
 * Validate a request and turn it into a SpawnPlan. Rejects with a RelayError
 * naming the cwd or the program when either is missing or unusable, because
 * Node's own ENOENT for a bad cwd names the binary instead.
 */
export async function planSpawn(request: ProcessRequest, serverCwd: string): Promise<SpawnPlan> {
  const { command, argv } = request;
  if ((command === undefined) === (argv === undefined)) {
    throw new RelayError("ValueError", "exactly one of command or argv must be given");
  }
  rejectNulInEnv(request.env);
  const cwd = request.cwd ? request.cwd : undefined;
  if (cwd !== undefined) {
    rejectNul(cwd, "cwd");
    await checkCwd(cwd, serverCwd);
  }
  const stdin = request.stdin ? Buffer.from(request.stdin, "utf8") : undefined;
  const merge = request.mergeStderr;

  if (command !== undefined) {
    rejectNul(command, "command");
    // For a shell command the same shell can point its own stderr at stdout first: no second
    // exec on the hot path. The prefix is a line of its own, so the command parses as given
    // (only the line numbers in a syntax error shift by one).
    const args = merge ? ["-c", `${MERGE_PREFIX}${command}`] : ["-c", command];
    return { file: SHELL, args, argv0: SHELL, cwd, stdin, programName: SHELL };
  }

  const words = argv ?? [];
  const name = words[0];
  if (name === undefined || name === "") throw new RelayError("ValueError", "empty command");
  for (const word of words) rejectNul(word, "argv");
  const file = await resolveProgram(name, request.env.PATH, resolve(serverCwd, cwd ?? "."));
  const rest = words.slice(1);
  if (merge) {
    // The wrapper execs "$0", so the program sees its resolved path as argv[0].
    return {
      file: SHELL,
      args: ["-c", MERGE_WRAPPER, file, ...rest],
      argv0: SHELL,
      cwd,
      stdin,
      programName: name,
    };
  }
  return { file, args: rest, argv0: name, cwd, stdin, programName: name };
}

/** Throws the typed error for a cwd that is missing, not a directory or not enterable. */
export async function checkCwd(cwd: string, serverCwd: string): Promise<void> {
  const path = resolve(serverCwd, cwd);
  try {
    const info = await stat(path);
    if (!info.isDirectory()) throw new RelayError("NotADirectoryError", `cwd is not a directory: ${cwd}`);
    await access(path, fsConstants.X_OK);
  } catch (err) {
    if (err instanceof RelayError) throw err;
    switch ((err as NodeJS.ErrnoException).code) {
      case "ENOENT":
        throw new RelayError("FileNotFoundError", `cwd does not exist: ${cwd}`, { cause: err });
      case "ENOTDIR":
        throw new RelayError("NotADirectoryError", `cwd is not a directory: ${cwd}`, { cause: err });
      case "EACCES":
      case "EPERM":
        throw new RelayError("PermissionError", `cwd is not accessible: ${cwd}`, { cause: err });
      default:
        throw new RelayError("OSError", `cannot use cwd ${cwd}: ${(err as Error).message}`, { cause: err });
    }
  }
}

/**
 * Find the program the way execvp does: a name with a slash is a path (relative
 * to the child's cwd), otherwise each PATH entry is tried in order (an empty
 * entry means the cwd). A candidate that exists but cannot be executed is
 * skipped and, if nothing else matches, reported as a PermissionError.
 */
async function resolveProgram(name: string, pathVar: string | undefined, dir: string): Promise<string> {
  const candidates = name.includes("/")
    ? [resolve(dir, name)]
    : (pathVar ?? FALLBACK_PATH).split(":").map((entry) => resolve(dir, entry, name));
  let denied = false;
  for (const candidate of candidates) {
    const verdict = await probeExecutable(candidate);
    if (verdict === "ok") return candidate;
    if (verdict === "denied") denied = true;
  }
  if (denied) throw new RelayError("PermissionError", `permission denied: ${name}`);
  throw new RelayError("FileNotFoundError", `command not found: ${name}`);
}

async function probeExecutable(path: string): Promise<"ok" | "missing" | "denied"> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return "denied";
    await access(path, fsConstants.X_OK);
    return "ok";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "EACCES" || code === "EPERM" ? "denied" : "missing";
  }
}

/** Map an error from spawn() itself (rare after planning: a race or resource exhaustion). */
export function toSpawnError(err: unknown, programName: string): RelayError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case "ENOENT":
      return new RelayError("FileNotFoundError", `command not found: ${programName}`, { cause: err });
    case "EACCES":
    case "EPERM":
      return new RelayError("PermissionError", `permission denied: ${programName}`, { cause: err });
    case "ENOTDIR":
      return new RelayError("NotADirectoryError", `not a directory: ${programName}`, { cause: err });
    default:
      return new RelayError("OSError", `cannot start ${programName}: ${message}`, { cause: err });
  }
}

function rejectNul(text: string, what: string): void {
  if (text.includes("\0")) throw new RelayError("ValueError", `${what} contains a NUL byte`);
}

/**
 * A C string ends at a NUL, so the child would get another environment than the one asked for.
 * buildEnv already leaves such variables out; a caller that builds its own is refused here, on
 * every path alike (posix_spawn, Node's spawn, the native launcher).
 */
function rejectNulInEnv(env: Readonly<Record<string, string>>): void {
  for (const key in env) {
    if (key.includes("\0") || (env[key] ?? "").includes("\0"))
      throw new RelayError("ValueError", "an environment variable contains a NUL byte");
  }
}
