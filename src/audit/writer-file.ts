import { closeSync, fstatSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { AuditFile } from "./sink.js";
import { type AuditFileIo, NO_SPACE_CODES, UNSUPPORTED_CODES } from "./space.js";

/**
 * The steps the audit writer (writer.ts) takes on the file it holds: reserving room, writing one
 * line whole, cutting back a torn one. Each works on the file it is handed and the system calls it
 * is given, so the writer's own state stays in the writer.
 */

const RESERVE_CHUNK = 256 * 1024;

/** The open file and what the writer knows of it. */
export interface Held extends AuditFile {
  /** Blocks are allocated (by this writer) up to this offset. */
  reservedEnd: number;
  /** Size seen at the last look; a smaller one later means it was truncated in place. */
  lastSize: number;
  /** The file ends inside a line, so the next record must start with a newline. */
  midLine: boolean;
  /** The file system refused fallocate as unsupported: check free space instead. */
  cannotAllocate: boolean;
}

/** Room for the records could not be made: the reason names the file and what was missing. */
export class ReserveError extends Error {}

/** Make sure `need` bytes past `size` can be written without running out of space. */
export function ensureRoom(io: AuditFileIo, path: string, file: Held, size: number, need: number): void {
  if (file.reservedEnd - size >= need) return;
  if (!file.cannotAllocate && allocate(io, path, file, size, need)) return;
  // No way to reserve on this file system: the next best thing is to see that the room is there.
  const free = io.freeBytes(dirname(path));
  if (free < need) {
    throw new ReserveError(
      `cannot reserve room for audit records in ${path}: ${free} bytes free, ${need} needed (the file system cannot preallocate)`,
    );
  }
}

/**
 * Allocates a chunk (or at least `need`) past `size`; false when the file system cannot
 * preallocate at all, which is remembered on the file. Any other failure throws.
 */
function allocate(io: AuditFileIo, path: string, file: Held, size: number, need: number): boolean {
  const want = Math.max(RESERVE_CHUNK, need);
  let outcome = io.allocate(file.fd, size, want);
  if (outcome.ok) {
    file.reservedEnd = size + want;
    return true;
  }
  // A nearly full disk may still hold the minimum when it cannot hold a chunk.
  if (NO_SPACE_CODES.has(outcome.error.code) && want > need) {
    outcome = io.allocate(file.fd, size, need);
    if (outcome.ok) {
      file.reservedEnd = size + need;
      return true;
    }
  }
  if (!UNSUPPORTED_CODES.has(outcome.error.code)) {
    throw new ReserveError(`cannot reserve room for audit records in ${path}: ${outcome.error.message}`);
  }
  file.cannotAllocate = true;
  return false;
}

/** After a write failed part way: remove what it wrote, if nobody wrote after it. */
function cutBack(io: AuditFileIo, file: Held, start: number, written: number): void {
  try {
    if (fstatSync(file.fd).size === start + written) {
      io.truncate(file.fd, start);
      file.reservedEnd = start; // truncation also frees the blocks reserved past the end
      file.lastSize = start;
      return;
    }
  } catch {
    // An append-only (chattr +a) file cannot be cut: fall through to the newline.
  }
  file.midLine = true;
}

/** One record line, written whole at the end of the file or cut back; throws when it could not be. */
export function writeLine(io: AuditFileIo, path: string, file: Held, size: number, line: string): void {
  const bytes = Buffer.from(`${file.midLine ? "\n" : ""}${line}\n`, "utf8");
  if (file.reservedEnd - size < bytes.length) {
    try {
      ensureRoom(io, path, file, size, bytes.length);
    } catch {
      // Write anyway: the space may be there without a reservation, and a failure is cut back.
    }
  }
  let off = 0;
  try {
    while (off < bytes.length) {
      const n = io.write(file.fd, bytes, off, bytes.length - off);
      if (n <= 0) throw new Error("short write: the audit file accepted no bytes");
      off += n;
    }
  } catch (err) {
    if (off > 0) cutBack(io, file, size, off);
    throw err;
  }
  file.midLine = false;
  file.lastSize = size + bytes.length;
}

/** Node's side of a write(2) of `line`, into /dev/null: what a rehearsal warms, the audit file untouched. */
export function writeToNowhere(line: string): void {
  const bytes = Buffer.from(`${line}\n`, "utf8");
  const sink = openSync("/dev/null", "w");
  try {
    writeSync(sink, bytes, 0, bytes.length);
  } finally {
    closeSync(sink);
  }
}

/** Closes a descriptor the writer owns; closing one can only fail if it is already gone. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed
  }
}
