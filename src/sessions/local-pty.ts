import { accessSync, closeSync, constants as fsConstants, openSync, statSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { ReadStream } from "node:tty";
import { holdTerminalEvents, RelayError } from "../core/index.js";
import { readProc, sessionMembers, signalGroup, signalSession } from "../proc/index.js";
import { ptyBinding } from "./pty-binding.js";
import { signalNumber } from "./signals.js";
import type { DescendantReaper, SessionTransport } from "./types.js";

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
/** How long after the child's exit output may still be read (what a background job prints). */
const DRAIN_AFTER_EXIT_MS = 200;
/** A spell this long without output, after the child's exit, means the terminal is drained. */
const QUIET_MS = 10;
/** One read of the master; Linux hands out at most a few KiB per read anyway. */
const READ_BUFFER_BYTES = 65536;
const { SIGHUP, SIGTERM, SIGCONT, SIGKILL } = osConstants.signals;

/**
 * Start `argv` on a new pseudo-terminal. The child leads a new session (and
 * process group), so closing the session can find and kill everything it
 * started. A missing program or working directory is reported here, before
 * anything is forked, instead of as text the child prints before dying.
 * With a `reaper`, processes that left the terminal's session (setsid,
 * daemons) die with the session too.
 */
export function openLocalPty(request: LocalPtyRequest, reaper?: DescendantReaper): SessionTransport {
  const argv0 = request.argv[0];
  if (argv0 === undefined || argv0 === "") throw new RelayError("ValueError", "empty command");
  const cwd = checkCwd(request.cwd === "" ? process.cwd() : request.cwd);
  const file = findExecutable(argv0, cwd, request.env.PATH ?? "");
  let streamClosed = false;
  let drainTimer: NodeJS.Timeout | null = null;
  const forked = ptyBinding().fork(
    file,
    request.argv.slice(1),
    environmentPairs({ ...request.env, TERM: TERMINAL_TYPE, PWD: cwd }),
    cwd,
    request.cols,
    request.rows,
    -1,
    -1,
    true,
    "",
    (code, signal) => onChildExit(signal ? -signal : code),
  );
  const pid = forked.pid;
  // The PTY library waits for this pid itself; the tracker must not reap it before that.
  const escaped = reaper?.track(pid);
  const masterFd = forked.fd;
  const leaderStart = readProc(pid)?.startTime ?? null;
  const graceMs = request.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  let slave = holdSlave(forked.pty);
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

  // Held until start(): the read buffer is reused, so held output is copied.
  const events = holdTerminalEvents(true);
  let exited = false;
  /** The exit went out to the session, after the last output. */
  let reported = false;
  /** Processes of the terminal's session outlived the child (background jobs). */
  let leftovers = false;
  let destroyed = false;
  let closing: Promise<void> | null = null;
  const exitWaiters = new Set<() => void>();

  // Every read lands in this one buffer and is copied out (into the ring) before the next read,
  // so a flood of output allocates nothing per read (docs/adr/0013-bounded-session-memory.md).
  const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  /** Output arrived since the drain after the exit last looked. */
  let sawData = false;
  const master = new ReadStream(masterFd, {
    onread: {
      buffer: readBuffer,
      callback: (bytes: number) => {
        if (bytes > 0) {
          sawData = true;
          events.data(readBuffer.subarray(0, bytes));
        }
        return true;
      },
    },
  } as ConstructorParameters<typeof ReadStream>[1]);
  // EAGAIN is retried by the stream itself; EIO would mean no slave is left, which our hold prevents.
  master.on("error", () => undefined);
  master.on("close", () => {
    streamClosed = true;
  });
  master.resume();

  /**
   * The child is gone, but what it printed last may still be queued in the
   * terminal. Read on until a quiet spell, QUIET_MS long and ending in a pass
   * of the event loop over the descriptor, brings nothing; then close the
   * master, let go of the slave and report the exit, after all the output.
   * A background job that keeps printing is cut off after DRAIN_AFTER_EXIT_MS,
   * as a closed terminal would cut it off.
   */
  function onChildExit(code: number | null): void {
    exited = true;
    escaped?.leaderReaped();
    // Looked at once, now: later the child's pid may be reused, and with it the session id.
    leftovers = sessionMembers(pid).length > 0;
    const deadline = performance.now() + DRAIN_AFTER_EXIT_MS;
    const look = (): void => {
      // setImmediate runs after the next poll phase, which reads whatever the terminal holds.
      setImmediate(() => {
        if (destroyed) return;
        if (sawData && !streamClosed && performance.now() < deadline) {
          sawData = false;
          drainTimer = setTimeout(look, QUIET_MS);
          return;
        }
        drainTimer = null;
        if (!streamClosed) master.destroy();
        releaseSlave();
        reported = true;
        events.exit(code);
        for (const wake of exitWaiters) wake();
        exitWaiters.clear();
      });
    };
    sawData = false;
    drainTimer = setTimeout(look, QUIET_MS);
  }

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
    const holder = readProc(pid);
    if (holder && holder.startTime !== leaderStart) return;
    signalSession(pid, signals, false);
  };

  /** Wait until the child's exit was reported and nothing else in its session lives, or the time is up. */
  const settle = async (ms: number): Promise<boolean> => {
    const deadline = performance.now() + ms;
    let step = 10;
    for (;;) {
      if (reported && (!leftovers || sessionMembers(pid).length === 0)) return true;
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
      events.start(handlers);
    },
    write(data) {
      if (exited) return;
      master.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    },
    resize(cols, rows) {
      // Once the master is closed its descriptor number may belong to another file: never touch it.
      if (streamClosed) return;
      try {
        ptyBinding().resize(masterFd, cols, rows);
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
      const foreground = readProc(pid)?.tpgid ?? -1;
      if (foreground > 0 && foreground !== pid) signalGroup(foreground, signum);
      return name;
    },
    close() {
      closing ??= (async () => {
        // HUP is what a closing terminal sends; an interactive shell ignores TERM but not HUP.
        // CONT lets stopped jobs receive both.
        signalAll([SIGHUP, SIGTERM, SIGCONT]);
        // What left the terminal's session has no terminal to hang up: it gets TERM now and KILL below.
        escaped?.signalDescendants("SIGTERM");
        if (!(await settle(graceMs))) {
          signalAll([SIGKILL]);
          await settle(KILL_WAIT_MS);
        }
        escaped?.end();
      })();
      return closing;
    },
    destroy() {
      destroyed = true;
      events.stop();
      if (drainTimer) clearTimeout(drainTimer);
      master.destroy();
      signalAll([SIGKILL]);
      escaped?.end();
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
 * master never hangs up early; the drain after the child's exit reads what is
 * left, then closes the master and lets go of the slave. O_NOCTTY: the server
 * must not adopt the terminal as its own.
 */
function holdSlave(path: string): number | null {
  if (path === "") return null;
  try {
    return openSync(path, fsConstants.O_RDWR | fsConstants.O_NOCTTY);
  } catch {
    // Without it the session still works; only the tail race above is back.
    return null;
  }
}

/** The child's environment as the `NAME=value` list execve takes. */
function environmentPairs(env: Readonly<Record<string, string>>): string[] {
  return Object.entries(env).map(([name, value]) => `${name}=${value}`);
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
