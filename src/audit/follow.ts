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
import { decodeUtf8, describeError, systemClock } from "../core/index.js";
import type { ChainAnchor } from "./chain.js";
import type { AuditFollower, FollowChain, FollowedLine, FollowOptions, FollowReset } from "./follow-types.js";
import { checkLine, createWalkState, type ParsedLine, parseLine, type WalkState } from "./verify.js";

/** A line longer than this is reported by its length and never held whole. */
const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;
/** How often the file is looked at when no change notification arrives. */
const DEFAULT_POLL_MS = 100;
/** Bytes read per system call; a batch holds at most the records of one read. */
const CHUNK = 256 * 1024;
/** Reads per turn before yielding to the event loop, so a long backlog does not starve it. */
const READS_PER_TURN = 4;
const NEWLINE = 0x0a;

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
  const maxLine = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const clock = options.clock ?? systemClock;
  const base = basename(path);
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

  let fd: number | null = null;
  let identity: { dev: number; ino: number } | null = null;
  let fileNo = 0;
  let readPos = options.from?.offset ?? 0;
  let lineStart = readPos;
  let lineNo = options.from?.line ?? 0;
  let carry: Buffer[] = [];
  let carryBytes = 0;
  /** Bytes of an over-long line seen so far, while it is being skipped; null otherwise. */
  let skipping: number | null = null;
  let walk = walkFrom(options.from?.anchor ?? null);
  let replacedSince: number | null = null;
  let lastError = "";
  let closed = false;
  let immediate: NodeJS.Immediate | null = null;
  const buffer = Buffer.allocUnsafe(CHUNK);

  function fail(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    // The poll would repeat an unchanged failure ten times a second.
    if (error.message === lastError) return;
    lastError = error.message;
    options.onError?.(error);
  }

  function deliver(batch: FollowedLine[]): void {
    if (batch.length === 0 || closed) return;
    try {
      options.onRecords(batch);
    } catch (err) {
      fail(err);
    }
  }

  function judge(parsed: ParsedLine, at: number): FollowChain {
    if (walk.brokenAt === null) {
      const before = walk.records;
      const reason = checkLine(walk, parsed, at);
      if (reason !== null) {
        walk.brokenAt = at;
        walk.reason = reason;
      } else if (walk.records > before) {
        return { status: "verified", seq: walk.expectedSeq - 1, anchored: walk.anchored };
      } else {
        return { status: "unchained" };
      }
    }
    return { status: "broken", brokenAt: walk.brokenAt, reason: walk.reason };
  }

  function lineOf(bytes: Buffer | null, length: number, at: number): FollowedLine | null {
    if (bytes === null) {
      return {
        file: fileNo,
        line: at,
        bytes: length,
        record: null,
        text: null,
        unreadable: `line of ${length} bytes, over the limit of ${maxLine}`,
        chain: judge({ ok: false }, at),
      };
    }
    const text = decodeUtf8(bytes);
    if (text.trim() === "") return null;
    const parsed = parseLine(text);
    let unreadable: string | null = null;
    if (!parsed.ok) unreadable = "not JSON";
    else if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value))
      unreadable = "not a JSON object";
    return {
      file: fileNo,
      line: at,
      bytes: length,
      record: unreadable === null ? (parsed as { value: Record<string, unknown> }).value : null,
      text,
      unreadable,
      chain: judge(parsed, at),
    };
  }

  /** Splits what was read into lines; complete lines go into `batch`, the rest waits in `carry`. */
  function consume(data: Buffer, batch: FollowedLine[]): void {
    let start = 0;
    while (start < data.length) {
      const nl = data.indexOf(NEWLINE, start);
      const end = nl < 0 ? data.length : nl;
      const piece = data.subarray(start, end);
      if (skipping !== null) {
        skipping += piece.length;
      } else if (carryBytes + piece.length > maxLine) {
        skipping = carryBytes + piece.length;
        carry = [];
        carryBytes = 0;
      } else {
        carry.push(Buffer.from(piece));
        carryBytes += piece.length;
      }
      if (nl < 0) break;
      endLine(batch);
      lineStart = readPos + nl + 1;
      start = nl + 1;
    }
    readPos += data.length;
  }

  /** The pending line is complete (its newline arrived, or its file ended). */
  function endLine(batch: FollowedLine[]): void {
    lineNo += 1;
    const followed =
      skipping !== null
        ? lineOf(null, skipping, lineNo)
        : lineOf(Buffer.concat(carry, carryBytes), carryBytes, lineNo);
    if (followed !== null) batch.push(followed);
    carry = [];
    carryBytes = 0;
    skipping = null;
  }

  /** A file ends without a newline: what is pending is its last line, whole as far as it goes. */
  function flushTail(): void {
    if (carryBytes === 0 && skipping === null) return;
    const batch: FollowedLine[] = [];
    endLine(batch);
    deliver(batch);
  }

  function startOver(reason: FollowReset["reason"]): void {
    flushTail();
    const chainCarried = walk.brokenAt === null;
    if (!chainCarried) walk = createWalkState();
    fileNo += 1;
    readPos = 0;
    lineStart = 0;
    lineNo = 0;
    replacedSince = null;
    if (!closed) options.onReset?.({ reason, file: fileNo, chainCarried });
  }

  function open(): boolean {
    let opened: number;
    try {
      opened = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") fail(new Error(describeError(err).message));
      return false; // not there yet (or not readable): the next poll tries again
    }
    const st = fstatSync(opened);
    if (!st.isFile()) {
      closeSync(opened);
      fail(new Error(`${path} is not a regular file`));
      return false;
    }
    fd = opened;
    identity = { dev: st.dev, ino: st.ino };
    lastError = "";
    return true;
  }

  /** The path names another file (or none) than the one held. */
  function replaced(): boolean {
    let st: ReturnType<typeof lstatSync> | undefined;
    try {
      st = lstatSync(path, { throwIfNoEntry: false });
    } catch {
      return false; // cannot look at the path now: keep reading the file held
    }
    return st === undefined || st.dev !== identity?.dev || st.ino !== identity?.ino;
  }

  function turn(): void {
    immediate = null;
    if (closed) return;
    try {
      if (fd === null && !open()) return;
      const held = fd as number;
      if (fstatSync(held).size < readPos) startOver("truncated");
      for (let reads = 0; reads < READS_PER_TURN; reads++) {
        const n = readSync(held, buffer, 0, CHUNK, readPos);
        if (n === 0) {
          switchIfReplaced(held);
          return;
        }
        lastError = ""; // reading again: a later failure is news
        const batch: FollowedLine[] = [];
        consume(buffer.subarray(0, n), batch);
        deliver(batch);
        if (closed) return;
      }
      schedule(); // more may be waiting: go on after the event loop has had a turn
    } catch (err) {
      fail(err);
    }
  }

  function switchIfReplaced(held: number): void {
    if (!replaced()) {
      replacedSince = null;
      return;
    }
    // A writer that looked at the path just before the rename still appends to the old file:
    // give it one poll period, then read the old file to its end once more and move on.
    const now = clock.monotonic();
    if (replacedSince === null) replacedSince = now;
    if (now - replacedSince < pollMs) return;
    if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return; // no new file yet
    for (;;) {
      const n = readSync(held, buffer, 0, CHUNK, readPos);
      if (n === 0) break;
      const batch: FollowedLine[] = [];
      consume(buffer.subarray(0, n), batch);
      deliver(batch);
    }
    closeSync(held);
    fd = null;
    identity = null;
    startOver("rotated");
    schedule();
  }

  function schedule(): void {
    if (immediate === null && !closed) immediate = setImmediate(turn);
  }

  let watcher: FSWatcher | null = null;
  try {
    // The directory, not the file: a rename-based rotation replaces the file under the name.
    watcher = watch(dirname(path), (_event, name) => {
      if (name === null || name === base) schedule();
    });
    watcher.on("error", () => {
      watcher?.close(); // the poll carries on alone
      watcher = null;
    });
  } catch {
    watcher = null; // no directory yet, or no inotify instance left: the poll alone notices growth
  }
  const poll = setInterval(schedule, pollMs);
  schedule();

  return {
    position: () => ({
      offset: lineStart,
      line: lineNo,
      anchor:
        walk.brokenAt === null && walk.startSeq !== null
          ? { seq: walk.expectedSeq, prev: walk.lastChain }
          : null,
    }),
    close: () => {
      if (closed) return;
      closed = true;
      clearInterval(poll);
      if (immediate !== null) clearImmediate(immediate);
      immediate = null;
      watcher?.close();
      watcher = null;
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}

/** A walk that starts at `anchor` (inside a chain) or, without one, before any chained record. */
function walkFrom(anchor: ChainAnchor | null): WalkState {
  const state = createWalkState();
  if (anchor !== null) {
    state.startSeq = anchor.seq;
    state.expectedSeq = anchor.seq;
    state.lastChain = anchor.prev;
  }
  return state;
}
