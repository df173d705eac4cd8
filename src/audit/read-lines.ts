import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { decodeUtf8 } from "../core/index.js";
import { openIfExists } from "../files/index.js";

/** Bytes read per step when scanning a file from either end. */
const CHUNK = 64 * 1024;
/**
 * Ceiling on what a backwards scan may hold in memory. Records are a few KiB
 * (args are length-bounded by redaction), so this only bites on a corrupt or
 * foreign file; the scan then stops instead of swallowing the file.
 */
const MAX_SCAN_BYTES = 64 * 1024 * 1024;
/** Ceiling on the decompressed size of a rotated `.gz` sibling. */
const MAX_GUNZIP_BYTES = 256 * 1024 * 1024;

const NEWLINE = 0x0a;

function isBlank(line: string): boolean {
  return line.trim() === "";
}

/** True when the buffer starts with the gzip magic number. */
function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b;
}

/** Whole contents of a (possibly gzip-compressed) file, decompression bounded. */
function readWholeFile(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const size = fstatSync(fd).size;
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const buf = Buffer.allocUnsafe(Math.max(CHUNK, Math.min(size - total, 16 * CHUNK)));
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
      total += n;
    }
    const data = Buffer.concat(chunks, total);
    return isGzip(data) ? gunzipSync(data, { maxOutputLength: MAX_GUNZIP_BYTES }) : data;
  } finally {
    closeSync(fd);
  }
}

/** The last `max` non-blank lines of a buffer, oldest first. */
function lastLinesOfBuffer(data: Buffer, max: number): string[] {
  const out: string[] = [];
  let end = data.length;
  while (end > 0 && out.length < max) {
    const nl = data.lastIndexOf(NEWLINE, end - 1);
    const line = decodeUtf8(data.subarray(nl + 1, end));
    if (!isBlank(line)) out.push(line);
    end = Math.max(nl, 0);
  }
  return out.reverse();
}

/**
 * The last `max` non-blank lines of a file, oldest first, read backwards in
 * chunks so memory follows the window rather than the file. Returns null when
 * the file does not exist; other errors propagate. A `.gz` file (by its magic
 * number) is decompressed whole, within {@link MAX_GUNZIP_BYTES}.
 */
export function readLastLines(path: string, max: number): string[] | null {
  const fd = openIfExists(path);
  if (fd === null) return null;
  try {
    const size = fstatSync(fd).size;
    if (size === 0 || max <= 0) return [];
    const head = Buffer.alloc(2);
    if (readSync(fd, head, 0, 2, 0) === 2 && isGzip(head)) {
      return lastLinesOfBuffer(readWholeFile(path), max);
    }
    return scanBackwards(fd, size, max);
  } finally {
    closeSync(fd);
  }
}

function scanBackwards(fd: number, size: number, max: number): string[] {
  const out: string[] = []; // newest first
  let pos = size;
  let carry: Buffer = Buffer.alloc(0); // bytes after the last newline seen, not yet a whole line
  while (pos > 0 && out.length < max) {
    const len = Math.min(CHUNK, pos);
    pos -= len;
    const chunk = Buffer.allocUnsafe(len);
    readSync(fd, chunk, 0, len, pos);
    let data = carry.length > 0 ? Buffer.concat([chunk, carry]) : chunk;
    let end = data.length;
    let nl = data.lastIndexOf(NEWLINE, end - 1);
    while (nl >= 0 && out.length < max) {
      const line = decodeUtf8(data.subarray(nl + 1, end));
      if (!isBlank(line)) out.push(line);
      end = nl;
      nl = end > 0 ? data.lastIndexOf(NEWLINE, end - 1) : -1;
    }
    data = data.subarray(0, end);
    carry = Buffer.from(data);
    if (carry.length > MAX_SCAN_BYTES) return out.reverse(); // a runaway line: give up on it
  }
  if (pos === 0 && out.length < max && carry.length > 0) {
    const line = decodeUtf8(carry);
    if (!isBlank(line)) out.push(line);
  }
  return out.reverse();
}

/**
 * Calls `onLine(text, lineNumber)` for every line of the file in order
 * (1-based numbers, blank lines included, a final line without a newline
 * included). Reads in chunks; a `.gz` file is decompressed whole. Returning
 * false from `onLine` stops the walk.
 */
export function forEachLine(path: string, onLine: (line: string, lineNo: number) => boolean): void {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(2);
    if (readSync(fd, head, 0, 2, 0) === 2 && isGzip(head)) {
      walkBuffer(readWholeFile(path), onLine);
      return;
    }
    let lineNo = 0;
    let carry: Buffer = Buffer.alloc(0);
    const chunk = Buffer.allocUnsafe(16 * CHUNK);
    let offset = 0;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, offset);
      if (n === 0) break;
      offset += n;
      const data = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
      let start = 0;
      let nl = data.indexOf(NEWLINE, start);
      while (nl >= 0) {
        lineNo++;
        if (!onLine(decodeUtf8(data.subarray(start, nl)), lineNo)) return;
        start = nl + 1;
        nl = data.indexOf(NEWLINE, start);
      }
      carry = Buffer.from(data.subarray(start));
    }
    if (carry.length > 0) onLine(decodeUtf8(carry), lineNo + 1);
  } finally {
    closeSync(fd);
  }
}

function walkBuffer(data: Buffer, onLine: (line: string, lineNo: number) => boolean): void {
  let lineNo = 0;
  let start = 0;
  while (start < data.length) {
    let nl = data.indexOf(NEWLINE, start);
    if (nl < 0) nl = data.length;
    lineNo++;
    if (!onLine(decodeUtf8(data.subarray(start, nl)), lineNo)) return;
    start = nl + 1;
  }
}
