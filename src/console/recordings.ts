import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";

/** A recording's file name: the id of the session it recorded (docs/sessions.md#recordings). */
const RECORDING_NAME = /^(?:sh|ssh)-[0-9a-f]{12}(?:@[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?)?\.cast$/;
/** Recordings listed on the sessions page, newest first. */
const MAX_LISTED = 200;
/** The header line of an asciicast file is small; a longer first line is not a recording of ours. */
const MAX_HEADER_BYTES = 64 * 1024;

export function isRecordingName(name: string): boolean {
  return RECORDING_NAME.test(name);
}

/** One recording on the sessions page. */
export interface RecordingEntry {
  name: string;
  bytes: number;
  /** Last write, in ms since the epoch. */
  modified: number;
  /** From the asciicast header, when it can be read. */
  command: string | null;
  width: number | null;
  height: number | null;
}

/** Read up to `length` bytes at `position`; short only at the end of the file. */
function readAt(fd: number, length: number, position: number): Buffer {
  const buffer = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buffer, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return buffer.subarray(0, got);
}

/**
 * Open a regular file for reading without following a link in its last
 * component: a link planted in the recordings directory is not served.
 */
export function openRegular(path: string): { fd: number; size: number } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error("not a regular file");
    return { fd, size: stat.size };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function header(path: string): Pick<RecordingEntry, "command" | "width" | "height"> {
  const none = { command: null, width: null, height: null };
  let opened: { fd: number; size: number };
  try {
    opened = openRegular(path);
  } catch {
    return none;
  }
  try {
    const head = readAt(opened.fd, Math.min(opened.size, MAX_HEADER_BYTES), 0).toString("utf8");
    const end = head.indexOf("\n");
    if (end === -1) return none;
    const parsed: unknown = JSON.parse(head.slice(0, end));
    if (typeof parsed !== "object" || parsed === null) return none;
    const h = parsed as Record<string, unknown>;
    return {
      command: typeof h.command === "string" ? h.command : null,
      width: typeof h.width === "number" ? h.width : null,
      height: typeof h.height === "number" ? h.height : null,
    };
  } catch {
    return none;
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * The recordings in `dir` (regular files named like a session's recording),
 * newest first, at most {@link MAX_LISTED}. A directory that does not exist
 * yet has none.
 */
export function listRecordings(dir: string): RecordingEntry[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
  const found: Array<{ name: string; bytes: number; modified: number }> = [];
  for (const name of names) {
    if (!isRecordingName(name)) continue;
    try {
      const stat = lstatSync(join(dir, name));
      if (stat.isFile()) found.push({ name, bytes: stat.size, modified: stat.mtimeMs });
    } catch {
      // Removed between the listing and the look: it is simply not listed.
    }
  }
  found.sort((a, b) => b.modified - a.modified || a.name.localeCompare(b.name));
  return found.slice(0, MAX_LISTED).map((f) => ({ ...f, ...header(join(dir, f.name)) }));
}

/**
 * The terminal output a recording holds, as one text, from at most its last
 * `maxBytes` (then from the first whole event line in them): what a viewer
 * joining a live session is shown first, so its screen is not blank until the
 * program redraws. Input and resize events are left out.
 */
export function outputSoFar(path: string, maxBytes: number): { text: string; cut: boolean } {
  const { fd, size } = openRegular(path);
  let raw: string;
  try {
    raw = readAt(fd, Math.min(size, maxBytes), Math.max(0, size - maxBytes)).toString("utf8");
  } finally {
    closeSync(fd);
  }
  const cut = size > maxBytes;
  const lines = raw.split("\n");
  // The first line is the header, or (cut) a piece of an event; the last is "" or an event being written.
  lines.shift();
  let text = "";
  for (const line of lines) {
    if (!line.startsWith("[")) continue;
    try {
      const event: unknown = JSON.parse(line);
      if (Array.isArray(event) && event[1] === "o" && typeof event[2] === "string") text += event[2];
    } catch {
      // An event cut by the read or still being written; the live stream carries what follows.
    }
  }
  return { text, cut };
}
