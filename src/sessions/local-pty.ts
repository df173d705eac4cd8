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

/** One terminal's state: the child and its session, the master's stream, how far the end has got. */
interface Pty {
  pid: number;
  masterFd: number;
  /** The child's start time, so a process that took its pid later is not mistaken for it. */
  leaderStart: number | null;
  graceMs: number;
  /** What the reaper tracks of the processes that leave the terminal's session. */
  escaped: ReturnType<DescendantReaper["track"]> | undefined;
  /** Our descriptor on the slave side, while held (see holdSlave). */
  slave: number | null;
  /** Held until start(): the read buffer is reused, so held output is copied. */
  events: ReturnType<typeof holdTerminalEvents>;
  master: ReadStream;
  streamClosed: boolean;
  drainTimer: NodeJS.Timeout | null;
  exited: boolean;
  /** The exit went out to the session, after the last output. */
  reported: boolean;
  /** Processes of the terminal's session outlived the child (background jobs). */
  leftovers: boolean;
  destroyed: boolean;
  closing: Promise<void> | null;
  exitWaiters: Set<() => void>;
  /** Output arrived since the drain after the exit last looked. */
  sawData: boolean;
}

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
  let p: Pty | undefined;
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
    (code, signal) => {
      if (p !== undefined) onChildExit(p, signal ? -signal : code);
    },
  );
  const pid = forked.pid;
  // The PTY library waits for this pid itself; the tracker must not reap it before that.
  const escaped = reaper?.track(pid);
  const parts: Omit<Pty, "master"> = {
    pid,
    masterFd: forked.fd,
    leaderStart: readProc(pid)?.startTime ?? null,
    graceMs: request.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    escaped,
    slave: holdSlave(forked.pty),
    events: holdTerminalEvents(true),
    streamClosed: false,
    drainTimer: null,
    exited: false,
    reported: false,
    leftovers: false,
    destroyed: false,
    closing: null,
    exitWaiters: new Set(),
    sawData: false,
  };
  const pty: Pty = Object.assign(parts, { master: openMaster(parts) });
  p = pty;
  return transportOf(pty);
}

/**
 * The master side as a stream. Every read lands in one buffer and is copied out (into the ring)
 * before the next read, so a flood of output allocates nothing per read
 * (docs/adr/0013-bounded-session-memory.md).
 */
function openMaster(p: Omit<Pty, "master">): ReadStream {
  const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  const master = new ReadStream(p.masterFd, {
    onread: {
      buffer: readBuffer,
      callback: (bytes: number) => {
        if (bytes > 0) {
          p.sawData = true;
          p.events.data(readBuffer.subarray(0, bytes));
        }
        return true;
      },
    },
  } as ConstructorParameters<typeof ReadStream>[1]);
  // EAGAIN is retried by the stream itself; EIO would mean no slave is left, which our hold prevents.
  master.on("error", () => undefined);
  master.on("close", () => {
    p.streamClosed = true;
  });
  master.resume();
  return master;
}

function transportOf(p: Pty): SessionTransport {
  return {
    kind: "local",
    start(handlers) {
      p.events.start(handlers);
    },
    write(data) {
      if (p.exited) return;
      p.master.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    },
    resize: (cols, rows) => resize(p, cols, rows),
    signal: (name) => signal(p, name),
    close() {
      p.closing ??= close(p);
      return p.closing;
    },
    destroy: () => destroy(p),
  };
}

function releaseSlave(p: Pty): void {
  if (p.slave === null) return;
  const fd = p.slave;
  p.slave = null;
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing is held any more.
  }
}

/**
 * The child is gone, but what it printed last may still be queued in the
 * terminal. Read on until a quiet spell, QUIET_MS long and ending in a pass
 * of the event loop over the descriptor, brings nothing; then close the
 * master, let go of the slave and report the exit, after all the output.
 * A background job that keeps printing is cut off after DRAIN_AFTER_EXIT_MS,
 * as a closed terminal would cut it off.
 */
function onChildExit(p: Pty, code: number | null): void {
  p.exited = true;
  p.escaped?.leaderReaped();
  // Looked at once, now: later the child's pid may be reused, and with it the session id.
  p.leftovers = sessionMembers(p.pid).length > 0;
  const deadline = performance.now() + DRAIN_AFTER_EXIT_MS;
  const look = (): void => {
    // setImmediate runs after the next poll phase, which reads whatever the terminal holds.
    setImmediate(() => {
      if (p.destroyed) return;
      if (p.sawData && !p.streamClosed && performance.now() < deadline) {
        p.sawData = false;
        p.drainTimer = setTimeout(look, QUIET_MS);
        return;
      }
      p.drainTimer = null;
      if (!p.streamClosed) p.master.destroy();
      releaseSlave(p);
      p.reported = true;
      p.events.exit(code);
      for (const wake of p.exitWaiters) wake();
      p.exitWaiters.clear();
    });
  };
  p.sawData = false;
  p.drainTimer = setTimeout(look, QUIET_MS);
}

/**
 * Signal what is left of the terminal's session. After the child exited,
 * only members found by session id are signalled, and nothing at all when
 * none outlived it or when a new process now holds the child's pid (its
 * session would be somebody else's).
 */
function signalAll(p: Pty, signals: readonly number[]): void {
  if (!p.exited) {
    signalSession(p.pid, signals, true);
    return;
  }
  if (!p.leftovers) return;
  const holder = readProc(p.pid);
  if (holder && holder.startTime !== p.leaderStart) return;
  signalSession(p.pid, signals, false);
}

/** Wait until the child's exit was reported and nothing else in its session lives, or the time is up. */
async function settle(p: Pty, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  let step = 10;
  for (;;) {
    if (p.reported && (!p.leftovers || sessionMembers(p.pid).length === 0)) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    await new Promise<void>((done) => {
      const timer = setTimeout(finish, Math.min(step, left));
      function finish() {
        clearTimeout(timer);
        p.exitWaiters.delete(finish);
        done();
      }
      p.exitWaiters.add(finish);
    });
    step = Math.min(100, step * 2);
  }
}

function resize(p: Pty, cols: number, rows: number): void {
  // Once the master is closed its descriptor number may belong to another file: never touch it.
  if (p.streamClosed) return;
  try {
    ptyBinding().resize(p.masterFd, cols, rows);
  } catch (err) {
    // The terminal closed under us (the child just exited): there is no window left to size.
    if (!p.exited) throw err;
  }
}

function signal(p: Pty, name: string): string {
  if (p.exited) return name;
  const signum = signalNumber(name);
  signalGroup(p.pid, signum);
  // Like a key typed at the terminal, also reach the job in the foreground (a shell runs each job
  // in a process group of its own, which a signal to the shell's group would miss).
  const foreground = readProc(p.pid)?.tpgid ?? -1;
  if (foreground > 0 && foreground !== p.pid) signalGroup(foreground, signum);
  return name;
}

async function close(p: Pty): Promise<void> {
  // HUP is what a closing terminal sends; an interactive shell ignores TERM but not HUP.
  // CONT lets stopped jobs receive both.
  signalAll(p, [SIGHUP, SIGTERM, SIGCONT]);
  // What left the terminal's session has no terminal to hang up: it gets TERM now and KILL below.
  p.escaped?.signalDescendants("SIGTERM");
  if (!(await settle(p, p.graceMs))) {
    signalAll(p, [SIGKILL]);
    await settle(p, KILL_WAIT_MS);
  }
  p.escaped?.end();
}

function destroy(p: Pty): void {
  p.destroyed = true;
  p.events.stop();
  if (p.drainTimer) clearTimeout(p.drainTimer);
  p.master.destroy();
  signalAll(p, [SIGKILL]);
  p.escaped?.end();
  releaseSlave(p);
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
