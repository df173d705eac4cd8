import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import { Socket } from "node:net";
import { constants as osConstants } from "node:os";
import type { Readable, Writable } from "node:stream";
import { waitChild } from "../proc/index.js";

/**
 * Starting a child with posix_spawn(3) from glibc instead of Node's spawn().
 *
 * libuv starts every child with fork(): the kernel copies the page tables of
 * the whole calling process, so each spawn costs time in proportion to the
 * caller's resident memory (a few milliseconds for a Node process). glibc's
 * posix_spawn clones with CLONE_VM|CLONE_VFORK instead: the child borrows the
 * parent's memory until it calls exec, and nothing is copied. The child is set
 * up the way libuv sets up a detached child (its own session, every signal at
 * its default disposition, an empty signal mask, stdio on pipes or /dev/null),
 * and it inherits no other descriptor at all (closefrom 3), which is stricter
 * than libuv, which relies on every other descriptor being close-on-exec.
 *
 * libuv does not know these children, so their exit status is collected here:
 * on SIGCHLD, each live child of this module is waited for by its own pid
 * (never "any child", which would take statuses libuv is waiting for).
 *
 * Needs glibc 2.34 or later (posix_spawn_file_actions_addclosefrom_np); where
 * it is not there, nativeSpawnAvailable() is false and callers use spawn().
 */

/** What the runner needs of a started child: Node's ChildProcess has the same shape. */
export interface SpawnedChild {
  readonly pid?: number | undefined;
  readonly stdin: Writable | null;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  once(event: "exit", listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}

export interface NativeSpawnRequest {
  file: string;
  /** argv[0] first, then the arguments. */
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  /** undefined = the caller's working directory. */
  cwd: string | undefined;
  /** A pipe for stdin (true) or /dev/null (false). */
  stdinPipe: boolean;
}

/** posix_spawn failed before the program ran: `errno` as returned, with Node's error code name. */
export class NativeSpawnError extends Error {
  constructor(
    readonly errno: number,
    readonly code: string,
  ) {
    super(`posix_spawn failed: ${code}`);
  }
}

interface Posix {
  spawn(
    pid: number[],
    path: string,
    actions: Buffer,
    attr: Buffer,
    argv: (string | null)[],
    envp: (string | null)[],
  ): number;
  actionsInit(actions: Buffer): number;
  actionsDestroy(actions: Buffer): number;
  addDup2(actions: Buffer, fd: number, newFd: number): number;
  addOpen(actions: Buffer, fd: number, path: string, flags: number, mode: number): number;
  addChdir(actions: Buffer, path: string): number;
  addCloseFrom(actions: Buffer, lowFd: number): number;
  pipe2(fds: Buffer, flags: number): number;
  close(fd: number): number;
  errno(): number;
  /** Set up once: new session, default dispositions, empty mask. */
  attr: Buffer;
}

const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSID = 0x80;
const O_CLOEXEC = 0o2000000;
const O_RDONLY = 0;
/** sizeof(posix_spawn_file_actions_t) and sizeof(posix_spawnattr_t) on 64-bit glibc are 80 and 336: room to spare. */
const ACTIONS_BYTES = 256;
const ATTR_BYTES = 512;
const SIGSET_BYTES = 128;

let posix: Posix | null | undefined;

function load(): Posix | null {
  if (posix !== undefined) return posix;
  posix = null;
  if (process.platform !== "linux") return posix;
  try {
    const koffi = createRequire(import.meta.url)("koffi") as typeof import("koffi");
    const lib = koffi.load("libc.so.6");
    const spawn = lib.func(
      "int posix_spawn(_Out_ int *pid, const char *path, void *actions, void *attr, const char **argv, const char **envp)",
    );
    const attrInit = lib.func("int posix_spawnattr_init(void *attr)");
    const setFlags = lib.func("int posix_spawnattr_setflags(void *attr, short flags)");
    const setSigDefault = lib.func("int posix_spawnattr_setsigdefault(void *attr, void *set)");
    const setSigMask = lib.func("int posix_spawnattr_setsigmask(void *attr, void *set)");
    const sigFill = lib.func("int sigfillset(void *set)");
    const sigEmpty = lib.func("int sigemptyset(void *set)");
    const loaded: Posix = {
      spawn,
      actionsInit: lib.func("int posix_spawn_file_actions_init(void *actions)"),
      actionsDestroy: lib.func("int posix_spawn_file_actions_destroy(void *actions)"),
      addDup2: lib.func("int posix_spawn_file_actions_adddup2(void *actions, int fd, int newfd)"),
      addOpen: lib.func(
        "int posix_spawn_file_actions_addopen(void *actions, int fd, const char *path, int flags, uint32_t mode)",
      ),
      addChdir: lib.func("int posix_spawn_file_actions_addchdir_np(void *actions, const char *path)"),
      addCloseFrom: lib.func("int posix_spawn_file_actions_addclosefrom_np(void *actions, int lowfd)"),
      pipe2: lib.func("int pipe2(void *fds, int flags)"),
      close: lib.func("int close(int fd)"),
      errno: () => koffi.errno(),
      attr: Buffer.alloc(ATTR_BYTES),
    };
    const all = Buffer.alloc(SIGSET_BYTES);
    const none = Buffer.alloc(SIGSET_BYTES);
    if (
      attrInit(loaded.attr) !== 0 ||
      sigFill(all) !== 0 ||
      sigEmpty(none) !== 0 ||
      setSigDefault(loaded.attr, all) !== 0 ||
      setSigMask(loaded.attr, none) !== 0 ||
      setFlags(loaded.attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK) !== 0
    ) {
      return posix;
    }
    // The attribute object holds copies of the sets; it lives as long as the process.
    posix = loaded;
  } catch {
    // No koffi build here, or a libc without these calls (musl, glibc before 2.34).
  }
  return posix;
}

/** Whether children can be started with posix_spawn here (loads the binding on first call). */
export function nativeSpawnAvailable(): boolean {
  return load() !== null;
}

const ERRNO_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(osConstants.errno).map(([name, value]) => [value, name]),
);
const SIGNAL_NAMES: Record<number, NodeJS.Signals> = Object.fromEntries(
  Object.entries(osConstants.signals).map(([name, value]) => [value, name as NodeJS.Signals]),
);

class NativeChild extends EventEmitter implements SpawnedChild {
  constructor(
    readonly pid: number,
    readonly stdin: Socket | null,
    readonly stdout: Socket,
    readonly stderr: Socket,
  ) {
    super();
  }
}

/** Children started here whose exit status has not been collected yet. */
const live = new Map<number, NativeChild>();
let listening = false;

/** Collect the status of every child of ours that has exited; each gets its 'exit' event once. */
function collectExits(): void {
  for (const [pid, child] of live) {
    const state = waitChild(pid);
    if (state.kind === "running") continue;
    live.delete(pid);
    if (live.size === 0 && listening) {
      process.off("SIGCHLD", collectExits);
      listening = false;
    }
    if (state.kind === "gone") child.emit("exit", null, null);
    else child.emit("exit", state.code, state.signal === null ? null : (SIGNAL_NAMES[state.signal] ?? null));
  }
}

function pipe(p: Posix): [read: number, write: number] {
  const fds = Buffer.alloc(8);
  if (p.pipe2(fds, O_CLOEXEC) !== 0) {
    const errno = p.errno();
    throw new NativeSpawnError(errno, ERRNO_NAMES[errno] ?? `errno ${errno}`);
  }
  return [fds.readInt32LE(0), fds.readInt32LE(4)];
}

/**
 * Start `request` with posix_spawn. Throws NativeSpawnError when the program
 * could not be started (ENOENT, EACCES, ...), with nothing left behind.
 * Call only when nativeSpawnAvailable() is true.
 */
export function nativeSpawn(request: NativeSpawnRequest): SpawnedChild {
  const p = load();
  if (p === null) throw new Error("posix_spawn is not available");
  const opened: number[] = [];
  const actions = Buffer.alloc(ACTIONS_BYTES);
  let actionsReady = false;
  try {
    const stdin = request.stdinPipe ? pipe(p) : null;
    if (stdin) opened.push(...stdin);
    const stdout = pipe(p);
    opened.push(...stdout);
    const stderr = pipe(p);
    opened.push(...stderr);
    if (p.actionsInit(actions) !== 0) throw new NativeSpawnError(12, "ENOMEM");
    actionsReady = true;
    const step = (rc: number): void => {
      if (rc !== 0) throw new NativeSpawnError(rc, ERRNO_NAMES[rc] ?? `errno ${rc}`);
    };
    if (stdin) step(p.addDup2(actions, stdin[0], 0));
    else step(p.addOpen(actions, 0, "/dev/null", O_RDONLY, 0));
    step(p.addDup2(actions, stdout[1], 1));
    step(p.addDup2(actions, stderr[1], 2));
    step(p.addCloseFrom(actions, 3));
    if (request.cwd !== undefined) step(p.addChdir(actions, request.cwd));
    const envp: (string | null)[] = Object.entries(request.env).map(([k, v]) => `${k}=${v}`);
    envp.push(null);
    const pid = [0];
    step(p.spawn(pid, request.file, actions, p.attr, [...request.argv, null], envp));
    // The child holds its ends now; ours of them go, so EOF comes when the child's side closes.
    for (const fd of [stdin?.[0], stdout[1], stderr[1]]) if (fd !== undefined) p.close(fd);
    const child = new NativeChild(
      pid[0] as number,
      stdin ? new Socket({ fd: stdin[1], readable: false, writable: true }) : null,
      new Socket({ fd: stdout[0], readable: true, writable: false }),
      new Socket({ fd: stderr[0], readable: true, writable: false }),
    );
    live.set(child.pid, child);
    if (!listening) {
      // Node's signal listeners never keep the event loop alive; the pipes and timers do.
      process.on("SIGCHLD", collectExits);
      listening = true;
    }
    // An exit that came before the listener was there raised a SIGCHLD nobody heard.
    setImmediate(collectExits);
    return child;
  } catch (err) {
    for (const fd of opened) p.close(fd);
    throw err;
  } finally {
    if (actionsReady) p.actionsDestroy(actions);
  }
}
