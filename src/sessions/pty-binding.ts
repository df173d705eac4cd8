import { createRequire } from "node:module";
import { RelayError } from "../core/index.js";

/** What the native fork hands back: the master side, the child and the slave's path. */
interface ForkedPty {
  fd: number;
  pid: number;
  pty: string;
}

/**
 * The native half of @lydell/node-pty (version pinned exactly in
 * package.json). Only its Unix entry points are used: the JavaScript
 * wrapper reads the master through a stream that allocates a fresh buffer
 * for every read, which this project does itself with one reusable buffer
 * (docs/adr/0013-bounded-session-memory.md).
 */
export interface PtyBinding {
  fork(
    file: string,
    args: readonly string[],
    env: readonly string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    utf8: boolean,
    helperPath: string,
    onExit: (code: number, signal: number) => void,
  ): ForkedPty;
  resize(fd: number, cols: number, rows: number): void;
}

const requireFromHere = createRequire(import.meta.url);

/** The positional parameters this module passes, as the pinned binding names them. */
export const EXPECTED_PARAMETERS = {
  fork: ["file", "args", "env", "cwd", "cols", "rows", "uid", "gid", "utf8", "helperPath", "onexit"],
  resize: ["fd", "cols", "rows"],
} as const;

/**
 * The parameters a native entry point declares. A native function's
 * `length` is always 0, but node-pty checks the argument count before
 * anything else and names its parameters in the error (`Usage:
 * pty.fork(file, args, …)`), so a call without arguments reads them
 * without side effects. Null when it answers in any other way.
 */
export function declaredParameters(fn: (...args: unknown[]) => unknown, name: string): string[] | null {
  try {
    fn();
  } catch (err) {
    const usage = /^Usage: pty\.(\w+)\(([^)]*)\)$/.exec(err instanceof Error ? err.message : "");
    if (usage?.[1] !== name) return null;
    return (usage[2] ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p !== "");
  }
  return null;
}

/**
 * Refuse a binding whose entry points take other parameters than the ones
 * this module passes by position: after an upgrade, a shifted argument
 * would fork with the wrong environment or size instead of failing.
 */
export function assertBindingShape(binding: Record<string, unknown>, label: string): void {
  for (const [name, expected] of Object.entries(EXPECTED_PARAMETERS)) {
    const fn = binding[name];
    if (typeof fn !== "function") {
      throw new RelayError("RuntimeError", `${label} lacks ${name}: an unsupported node-pty version`);
    }
    const declared = declaredParameters(fn as (...args: unknown[]) => unknown, name);
    if (declared === null || declared.join(",") !== expected.join(",")) {
      const seen = declared === null ? "an unknown signature" : `(${declared.join(", ")})`;
      throw new RelayError(
        "RuntimeError",
        `${label}: ${name} takes ${seen}, expected (${expected.join(", ")}): an unsupported node-pty version`,
      );
    }
  }
}

/**
 * The binding, checked for the entry points this module calls and their
 * parameters. Node caches the module after the first load, so later calls
 * only repeat the check.
 */
export function ptyBinding(): PtyBinding {
  const name = `@lydell/node-pty-${process.platform}-${process.arch}/pty.node`;
  let loaded: unknown;
  try {
    loaded = requireFromHere(name);
  } catch (err) {
    throw new RelayError(
      "RuntimeError",
      `terminal support is not installed for ${process.platform}-${process.arch} (${name}): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  if (loaded === null || typeof loaded !== "object") {
    throw new RelayError("RuntimeError", `${name} is not a native module: an unsupported node-pty version`);
  }
  assertBindingShape(loaded as Record<string, unknown>, name);
  return loaded as PtyBinding;
}
