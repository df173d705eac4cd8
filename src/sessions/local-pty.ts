import { accessSync, closeSync, constants as fsConstants, openSync, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { type IPty, spawn as spawnPty } from "@lydell/node-pty";
import { RelayError } from "../core/index.js";
import { readStat, sessionMembers, signalGroup, signalSession } from "./process-tree.js";
import { signalNumber } from "./signals.js";
import type { SessionTransport, TransportEvents } from "./types.js";

export interface LocalPtyRequest {
  /** argv[0] is looked up on the PATH of `env`, as the child's execvp would. */
  argv: readonly string[];
  /** "" = the server's working directory. */
  cwd: string;
  /** The complete environment of the child. */
  env: Readonly<Record<string, string>>;
  cols: number;
  rows: number;
  /** How long TERM/HUP get before KILL when the session is closed; default 5000 ms. */
  killGraceMs?: number;
}

const TERMINAL_TYPE = "xterm-256color";
const DEFAULT_KILL_GRACE_MS = 5000;
const KILL_WAIT_MS = 2000;
const { SIGHUP, SIGTERM, SIGCONT, SIGKILL } = osConstants.signals;

type Pending = { kind: "data"; chunk: Uint8Array } | { kind: "exit"; code: number | null };

/**
 * Start `argv` on a new pseudo-terminal. The child leads a new session (and
 * process group), so closing the session can find and kill everything it
 * started. A missing program or working directory is reported here, before
 * anything is forked, instead of as text the child prints before dying.
 */
export function openLocalPty(request: LocalPtyRequest): SessionTransport {
  const argv0 = request.argv[0];
  if (argv0 === undefined || argv0 === "") throw new RelayError("ValueError", "empty command");
  const cwd = checkCwd(request.cwd === "" ? process.cwd() : request.cwd);
  const file = findExecutable(argv0, cwd, request.env.PATH ?? "");
  const term: IPty = spawnPty(file, request.argv.slice(1), {
    name: TERMINAL_TYPE,
    cols: request.cols,
    rows: request.rows,
    cwd,
    env: { ...request.env },
    // null: raw Buffers, so the session decodes UTF-8 across chunk boundaries itself.
    encoding: null,
  });
  const pid = term.pid;
  const leaderStart = readStat(pid)?.startTime ?? null;
  const graceMs = request.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  let slave = holdSlave(term);
  const releaseSlave = (): void => {
    if (slave === null) return;
    const fd = slave;
    slave = null;
    try {
      closeSync(fd);
    } catch {
      // Already closed: nothing is held any more.
    }
  };

  let events: TransportEvents | null = null;
  const pending: Pending[] = [];
  let exited = false;
  /** Processes of the terminal's session outlived the child (background jobs). */
  let leftovers = false;
  let destroyed = false;
  let closing: Promise<void> | null = null;
  const exitWaiters = new Set<() => void>();

  const deliver = (item: Pending): void => {
    if (destroyed) return;
    if (!events) {
      pending.push(item);
      return;
    }
    if (item.kind === "data") events.data(item.chunk);
    else events.exit(item.code);
  };

  // With encoding null node-pty hands out Buffers; its typings only know strings.
  term.onData((chunk) => deliver({ kind: "data", chunk: chunk as unknown as Buffer }));
  term.onExit(({ exitCode, signal }) => {
    exited = true;
    // Looked at once, now: later the child's pid may be reused, and with it the session id.
    leftovers = sessionMembers(pid).length > 0;
    releaseSlave();
    for (const wake of exitWaiters) wake();
    exitWaiters.clear();
    deliver({ kind: "exit", code: signal ? -signal : exitCode });
  });

  /**
   * Signal what is left of the terminal's session. After the child exited,
   * only members found by session id are signalled, and nothing at all when
   * none outlived it or when a new process now holds the child's pid (its
   * session would be somebody else's).
   */
  const signalAll = (signals: readonly number[]): void => {
    if (!exited) {
      signalSession(pid, signals, true);
      return;
    }
    if (!leftovers) return;
    const holder = readStat(pid);
    if (holder && holder.startTime !== leaderStart) return;
    signalSession(pid, signals, false);
  };

  /** Wait until the child has exited and nothing else in its session lives, or the time is up. */
  const settle = async (ms: number): Promise<boolean> => {
    const deadline = performance.now() + ms;
    let step = 10;
    for (;;) {
      if (exited && (!leftovers || sessionMembers(pid).length === 0)) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise<void>((done) => {
        const timer = setTimeout(finish, Math.min(step, left));
        function finish() {
          clearTimeout(timer);
          exitWaiters.delete(finish);
          done();
        }
        exitWaiters.add(finish);
      });
      step = Math.min(100, step * 2);
    }
  };

  return {
    kind: "local",
    start(handlers) {
      events = handlers;
      for (const item of pending.splice(0)) deliver(item);
    },
    write(data) {
      if (exited) return;
      term.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength) as unknown as string);
    },
    resize(cols, rows) {
      try {
        term.resize(cols, rows);
      } catch (err) {
        // The terminal closed under us (the child just exited): there is no window left to size.
        if (!exited) throw err;
      }
    },
    signal(name) {
      if (exited) return name;
      const signum = signalNumber(name);
      signalGroup(pid, signum);
      // Like a key typed at the terminal, also reach the job in the foreground (a shell runs each job
      // in a process group of its own, which a signal to the shell's group would miss).
      const foreground = readStat(pid)?.tpgid ?? -1;
      if (foreground > 0 && foreground !== pid) signalGroup(foreground, signum);
      return name;
    },
    close() {
      closing ??= (async () => {
        // HUP is what a closing terminal sends; an interactive shell ignores TERM but not HUP.
        // CONT lets stopped jobs receive both.
        signalAll([SIGHUP, SIGTERM, SIGCONT]);
        if (await settle(graceMs)) return;
        signalAll([SIGKILL]);
        await settle(KILL_WAIT_MS);
      })();
      return closing;
    },
    destroy() {
      destroyed = true;
      signalAll([SIGKILL]);
      releaseSlave();
    },
  };
}

/**
 * Keep our own descriptor on the terminal's slave side while the child runs.
 * When the last slave descriptor closes, Linux may answer reads on the master
 * with EIO before the output still queued in the terminal has been read, so
 * the last few KiB a program printed just before exiting were lost now and
 * then (measured: up to 12 KiB of a 10 MiB stream). With the slave held, the
 * master never hangs up early; node-pty reads what is left and ends the
 * stream itself once the child is gone. O_NOCTTY: the server must not adopt
 * the terminal as its own.
 */
function holdSlave(term: IPty): number | null {
  const path = (term as unknown as { ptsName?: unknown }).ptsName;
  if (typeof path !== "string" || path === "") return null;
  try {
    return openSync(path, fsConstants.O_RDWR | fsConstants.O_NOCTTY);
  } catch {
    // Without it the session still works; only the tail race above is back.
    return null;
  }
}

function checkCwd(cwd: string): string {
  let isDir: boolean;
  try {
    isDir = statSync(cwd).isDirectory();
  } catch {
    throw new RelayError("FileNotFoundError", `cwd does not exist: ${cwd}`);
  }
  if (!isDir) throw new RelayError("NotADirectoryError", `cwd is not a directory: ${cwd}`);
  return cwd;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The program execvp would run, or a clear error instead of a child that only prints "execvp failed". */
export function findExecutable(name: string, cwd: string, pathList: string): string {
  if (name.includes("/")) {
    const path = isAbsolute(name) ? name : resolve(cwd, name);
    if (isExecutableFile(path)) return path;
    throw new RelayError("FileNotFoundError", `command not found or not executable: ${name}`);
  }
  for (const dir of pathList.split(delimiter)) {
    if (dir === "") continue;
    const path = join(isAbsolute(dir) ? dir : resolve(cwd, dir), name);
    if (isExecutableFile(path)) return path;
  }
  throw new RelayError("FileNotFoundError", `command not found: ${name}`);
}
