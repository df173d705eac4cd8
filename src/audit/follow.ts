import {
  closeSync,
  constants,
  type FSWatcher,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  watch,
} from "node:fs";
import { basename, dirname } from "node:path";
import { type Clock, describeError, systemClock } from "../core/index.js";
import {
  endLine,
  hasPendingLine,
  type LineCursor,
  newCursor,
  nextFile,
  positionOf,
  takeBytes,
} from "./follow-lines.js";
import type { AuditFollower, FollowedLine, FollowOptions, FollowReset } from "./follow-types.js";

/** A line longer than this is reported by its length and never held whole. */
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
/** How often the file is looked at when no change notification arrives. */
const DEFAULT_POLL_MS = 100;
/** Bytes read per system call; a batch holds at most the records of one read. */
const CHUNK = 256 * 1024;
/** Reads per turn before yielding to the event loop, so a long backlog does not starve it. */
const READS_PER_TURN = 4;

/**
 * Follows an audit file as it grows, whoever writes it: this process, or any
 * other appending to the same path. Growth is noticed through a directory
 * watch, with a poll every `pollMs` as the fallback (a watch can be missed or
 * unavailable), and only the bytes past what was read are read. A line is
 * delivered once its newline has arrived. When the path comes to name another
 * file (rename-based rotation) the old file is read to its end first, after
 * waiting one poll period for a writer that looked at the path just before the
 * switch; when the file shrinks (truncation) it is read again from its start.
 * Either way the follower reports the reset and line numbers start again at 1.
 */
export function followAudit(path: string, options: FollowOptions): AuditFollower {
  const { maxLine, pollMs, clock } = checkedOptions(options);
  const follower: Follower = {
    path,
    pollMs,
    clock,
    options,
    cursor: newCursor(maxLine, options.from),
    fd: null,
    identity: null,
    replacedSince: null,
    lastError: "",
    closed: false,
    immediate: null,
    buffer: Buffer.allocUnsafe(CHUNK),
  };
  const watcher = watchDirectory(path, () => schedule(follower));
  const poll = setInterval(() => schedule(follower), pollMs);
  schedule(follower);
  return {
    position: () => positionOf(follower.cursor),
    close: () => closeFollower(follower, poll, watcher),
  };
}

/** The options with their defaults, or a RangeError naming the one that cannot be used. */
function checkedOptions(options: FollowOptions): { maxLine: number; pollMs: number; clock: Clock } {
  const maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  if (!Number.isSafeInteger(maxLine) || maxLine < 1)
    throw new RangeError(`maxLineBytes: expected a positive integer, got ${maxLine}`);
  if (!Number.isFinite(pollMs) || pollMs < 1)
    throw new RangeError(`pollMs: expected at least 1, got ${pollMs}`);
  const from = options.from;
  if (
    from !== undefined &&
    !(
      Number.isSafeInteger(from.offset) &&
      from.offset >= 0 &&
      Number.isSafeInteger(from.line) &&
      from.line >= 0
    )
  )
    throw new RangeError(
      `from: expected a non-negative offset and line, got ${from.offset} and ${from.line}`,
    );
  return { maxLine, pollMs, clock: options.clock ?? systemClock };
}

/** One follower's state: the file it holds, where it stands in it, and its timers. */
interface Follower {
  readonly path: string;
  readonly pollMs: number;
  readonly clock: Clock;
  readonly options: FollowOptions;
  readonly cursor: LineCursor;
  fd: number | null;
  identity: { dev: number; ino: number } | null;
  /** When the path was first seen naming another file than the one held; null while it names it. */
  replacedSince: number | null;
  lastError: string;
  closed: boolean;
  immediate: NodeJS.Immediate | null;
  readonly buffer: Buffer;
}

/**
 * Watches the directory, not the file: a rename-based rotation replaces the file under the name.
 * Null when no watch can be had (no directory yet, or no inotify instance left): the poll alone
 * notices growth then, as it does after a watch fails.
 */
function watchDirectory(path: string, onChange: () => void): { close(): void } | null {
  const base = basename(path);
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(dirname(path), (_event, name) => {
      if (name === null || name === base) onChange();
    });
    watcher.on("error", () => {
      watcher?.close(); // the poll carries on alone
      watcher = null;
    });
  } catch {
    return null;
  }
  return { close: () => watcher?.close() };
}

/** Stops the timers and the watch and lets the file go; a second call does nothing. */
function closeFollower(f: Follower, poll: NodeJS.Timeout, watcher: { close(): void } | null): void {
  if (f.closed) return;
  f.closed = true;
  clearInterval(poll);
  if (f.immediate !== null) clearImmediate(f.immediate);
  f.immediate = null;
  watcher?.close();
  if (f.fd !== null) closeSync(f.fd);
  f.fd = null;
}

function fail(f: Follower, err: unknown): void {
  const error = err instanceof Error ? err : new Error(String(err));
  // The poll would repeat an unchanged failure ten times a second.
  if (error.message === f.lastError) return;
  f.lastError = error.message;
  f.options.onError?.(error);
}

function deliver(f: Follower, batch: FollowedLine[]): void {
  if (batch.length === 0 || f.closed) return;
  try {
    f.options.onRecords(batch);
  } catch (err) {
    fail(f, err);
  }
}

/** A file ends without a newline: what is pending is its last line, whole as far as it goes. */
function flushTail(f: Follower): void {
  if (!hasPendingLine(f.cursor)) return;
  const batch: FollowedLine[] = [];
  endLine(f.cursor, batch);
  deliver(f, batch);
}

function startOver(f: Follower, reason: FollowReset["reason"]): void {
  flushTail(f);
  const chainCarried = nextFile(f.cursor);
  f.replacedSince = null;
  if (!f.closed) f.options.onReset?.({ reason, file: f.cursor.file, chainCarried });
}

function open(f: Follower): boolean {
  let opened: number;
  try {
    opened = openSync(f.path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") fail(f, new Error(describeError(err).message));
    return false; // not there yet (or not readable): the next poll tries again
  }
  const st = fstatSync(opened);
  if (!st.isFile()) {
    closeSync(opened);
    fail(f, new Error(`${f.path} is not a regular file`));
    return false;
  }
  f.fd = opened;
  f.identity = { dev: st.dev, ino: st.ino };
  f.lastError = "";
  return true;
}

/** The path names another file (or none) than the one held. */
function replaced(f: Follower): boolean {
  let st: ReturnType<typeof lstatSync> | undefined;
  try {
    st = lstatSync(f.path, { throwIfNoEntry: false });
  } catch {
    return false; // cannot look at the path now: keep reading the file held
  }
  return st === undefined || st.dev !== f.identity?.dev || st.ino !== f.identity?.ino;
}

/** The bytes the lines of a read complete go to the cursor, and those lines to the caller. */
function deliverRead(f: Follower, n: number): void {
  const batch: FollowedLine[] = [];
  takeBytes(f.cursor, f.buffer.subarray(0, n), batch);
  deliver(f, batch);
}

function turn(f: Follower): void {
  f.immediate = null;
  if (f.closed) return;
  try {
    if (f.fd === null && !open(f)) return;
    const held = f.fd as number;
    if (fstatSync(held).size < f.cursor.readPos) startOver(f, "truncated");
    for (let reads = 0; reads < READS_PER_TURN; reads++) {
      const n = readSync(held, f.buffer, 0, CHUNK, f.cursor.readPos);
      if (n === 0) {
        switchIfReplaced(f, held);
        return;
      }
      f.lastError = ""; // reading again: a later failure is news
      deliverRead(f, n);
      if (f.closed) return;
    }
    schedule(f); // more may be waiting: go on after the event loop has had a turn
  } catch (err) {
    fail(f, err);
  }
}

function switchIfReplaced(f: Follower, held: number): void {
  if (!replaced(f)) {
    f.replacedSince = null;
    return;
  }
  // A writer that looked at the path just before the rename still appends to the old file:
  // give it one poll period, then read the old file to its end once more and move on.
  const now = f.clock.monotonic();
  if (f.replacedSince === null) f.replacedSince = now;
  if (now - f.replacedSince < f.pollMs) return;
  if (lstatSync(f.path, { throwIfNoEntry: false }) === undefined) return; // no new file yet
  for (;;) {
    const n = readSync(held, f.buffer, 0, CHUNK, f.cursor.readPos);
    if (n === 0) break;
    deliverRead(f, n);
  }
  closeSync(held);
  f.fd = null;
  f.identity = null;
  startOver(f, "rotated");
  schedule(f);
}

function schedule(f: Follower): void {
  if (f.immediate === null && !f.closed) f.immediate = setImmediate(() => turn(f));
}
