import { decodeUtf8, fail } from "../core/index.js";
import type { ChainAnchor } from "./chain.js";
import type { FollowChain, FollowedLine, FollowPosition } from "./follow-types.js";
import { checkLine, createWalkState, type ParsedLine, parseLine, type WalkState } from "./verify.js";

const NEWLINE = 0x0a;

/**
 * Where a follower (follow.ts) stands in the file it reads: the bytes read, the line being put
 * together, and the chain walk over the lines delivered. Reading the file is the follower's; this
 * only turns bytes into lines, so the splitting and judging can be followed without the I/O.
 */
export interface LineCursor {
  /** A line longer than this is reported by its length and never held whole. */
  readonly maxLine: number;
  /** Which file: one more each time the follower starts over. */
  file: number;
  /** The next byte to read. */
  readPos: number;
  /** The start of the line being put together: where a later follower can resume. */
  lineStart: number;
  /** Lines ended so far in this file. */
  line: number;
  carry: Buffer[];
  carryBytes: number;
  /** Bytes of an over-long line seen so far, while it is being skipped; null otherwise. */
  skipping: number | null;
  walk: WalkState;
}

export function newCursor(maxLine: number, from: FollowPosition | undefined): LineCursor {
  const readPos = from?.offset ?? 0;
  return {
    maxLine,
    file: 0,
    readPos,
    lineStart: readPos,
    line: from?.line ?? 0,
    carry: [],
    carryBytes: 0,
    skipping: null,
    walk: walkFrom(from?.anchor ?? null),
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

/** Just after the last line ended, with the link the next record must continue when the chain holds. */
export function positionOf(cursor: LineCursor): FollowPosition {
  const { walk } = cursor;
  return {
    offset: cursor.lineStart,
    line: cursor.line,
    anchor:
      walk.brokenAt === null && walk.startSeq !== null
        ? { seq: walk.expectedSeq, prev: walk.lastChain }
        : null,
  };
}

/** Splits what was read into lines; complete lines go into `batch`, the rest waits in the cursor. */
export function takeBytes(cursor: LineCursor, data: Buffer, batch: FollowedLine[]): void {
  let start = 0;
  while (start < data.length) {
    const nl = data.indexOf(NEWLINE, start);
    const end = nl < 0 ? data.length : nl;
    holdPiece(cursor, data.subarray(start, end));
    if (nl < 0) break;
    endLine(cursor, batch);
    cursor.lineStart = cursor.readPos + nl + 1;
    start = nl + 1;
  }
  cursor.readPos += data.length;
}

/** Keeps a piece of the pending line, or only counts it once the line is over the limit. */
function holdPiece(cursor: LineCursor, piece: Buffer): void {
  if (cursor.skipping !== null) {
    cursor.skipping += piece.length;
  } else if (cursor.carryBytes + piece.length > cursor.maxLine) {
    cursor.skipping = cursor.carryBytes + piece.length;
    cursor.carry = [];
    cursor.carryBytes = 0;
  } else {
    cursor.carry.push(Buffer.from(piece));
    cursor.carryBytes += piece.length;
  }
}

/** A line is being put together (the file so far ends without a newline). */
export function hasPendingLine(cursor: LineCursor): boolean {
  return cursor.carryBytes !== 0 || cursor.skipping !== null;
}

/** The pending line is complete (its newline arrived, or its file ended). */
export function endLine(cursor: LineCursor, batch: FollowedLine[]): void {
  cursor.line += 1;
  const followed =
    cursor.skipping !== null
      ? overLongLine(cursor, cursor.skipping, cursor.line)
      : lineOf(cursor, Buffer.concat(cursor.carry, cursor.carryBytes), cursor.line);
  if (followed !== null) batch.push(followed);
  cursor.carry = [];
  cursor.carryBytes = 0;
  cursor.skipping = null;
}

/**
 * The cursor moves to the start of the next file. The chain walk goes on across the seam when it
 * held (the writer continues its chain across a rotation); answers whether it did.
 */
export function nextFile(cursor: LineCursor): boolean {
  const chainCarried = cursor.walk.brokenAt === null;
  if (!chainCarried) cursor.walk = createWalkState();
  cursor.file += 1;
  cursor.readPos = 0;
  cursor.lineStart = 0;
  cursor.line = 0;
  return chainCarried;
}

function overLongLine(cursor: LineCursor, length: number, at: number): FollowedLine {
  return {
    file: cursor.file,
    line: at,
    bytes: length,
    record: null,
    text: null,
    unreadable: `line of ${length} bytes, over the limit of ${cursor.maxLine}`,
    chain: judge(cursor.walk, fail("not-json"), at),
  };
}

/** A line read whole; null for a blank one, which is counted but not delivered. */
function lineOf(cursor: LineCursor, bytes: Buffer, at: number): FollowedLine | null {
  const text = decodeUtf8(bytes);
  if (text.trim() === "") return null;
  const parsed = parseLine(text);
  const unreadable = unreadableReason(parsed);
  return {
    file: cursor.file,
    line: at,
    bytes: bytes.length,
    record: unreadable === null ? (parsed as { value: Record<string, unknown> }).value : null,
    text,
    unreadable,
    chain: judge(cursor.walk, parsed, at),
  };
}

/** Why a parsed line is no record: not JSON, or JSON but not an object. */
function unreadableReason(parsed: ParsedLine): string | null {
  if (!parsed.ok) return "not JSON";
  if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
    return "not a JSON object";
  }
  return null;
}

/** The chain status of the line at `at`, advancing the walk by the same step `--verify-audit` takes. */
function judge(walk: WalkState, parsed: ParsedLine, at: number): FollowChain {
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
