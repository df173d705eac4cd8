import { createRequire } from "node:module";
import { RelayError } from "../core/index.js";

/** What the native fork hands back: the master side, the child and the slave's path. */
export interface ForkedPty {
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

/**
 * The binding, checked for the entry points this module calls. Node caches
 * the module after the first load, so later calls only repeat the check.
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
  const candidate = loaded as Partial<PtyBinding> | null;
  if (typeof candidate?.fork !== "function" || typeof candidate.resize !== "function")
    throw new RelayError("RuntimeError", `${name} lacks fork/resize: an unsupported node-pty version`);
  return candidate as PtyBinding;
}
