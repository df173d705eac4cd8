import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  mkdirSync,
  openSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname } from "node:path";
import { type Clock, describeError, isoTimestamp } from "../core/index.js";
import { type ChainAnchor, GENESIS, resumeAnchor, sealRecord } from "./chain.js";
import { formatRecord } from "./format.js";
import { buildRecord } from "./record.js";
import { tailAudit } from "./tail.js";
import type { AuditConfig, AuditEntry, AuditLog, AuditStatus, TailQuery } from "./types.js";

export interface AuditLogDeps {
  clock: Clock;
  /**
   * Receives whole lines (`AUDIT <record>\n`) for the stderr echo and for
   * records that could not reach the file. Default: process.stderr.
   */
  stderr?: (line: string) => void;
}

/** Prefix that marks audit records on stderr (CONTRACT §4.6). */
export const STDERR_PREFIX = "AUDIT ";

// O_NONBLOCK keeps start-up from hanging on a FIFO nobody reads (open then
// fails with ENXIO and the log degrades); it changes nothing for regular files.
const OPEN_FLAGS = constants.O_APPEND | constants.O_CREAT | constants.O_WRONLY | constants.O_NONBLOCK;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

interface OpenSink {
  fd: number;
  dev: number;
  ino: number;
  regular: boolean;
  kind: string;
}

function kindOf(st: {
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
}): string {
  if (st.isCharacterDevice()) return "character device";
  if (st.isBlockDevice()) return "block device";
  if (st.isFIFO()) return "FIFO";
  if (st.isSocket()) return "socket";
  return "special file";
}

/** Opens (creating with 0600) the audit file for appending and tightens a regular file's mode. */
function openSink(path: string): OpenSink {
  const fd = openSync(path, OPEN_FLAGS, FILE_MODE);
  try {
    const st = fstatSync(fd);
    const regular = st.isFile();
    if (regular && (st.mode & 0o777) !== FILE_MODE) {
      try {
        fchmodSync(fd, FILE_MODE);
      } catch {
        // Best effort, as the contract asks: a file owned by someone else or
        // made append-only (chattr +a) still takes records.
      }
    }
    return { fd, dev: st.dev, ino: st.ino, regular, kind: regular ? "file" : kindOf(st) };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function errorText(err: unknown): string {
  return describeError(err).message;
}

/**
 * The append-only audit writer of CONTRACT §6.5–6.7. Each append is one
 * synchronous write of one line on an O_APPEND descriptor, so the record is
 * in the file before append returns. Rotation by rename is noticed by a stat
 * of the path before each write. Nothing here throws into the caller.
 *
 * `degraded` is sticky: once set (at start-up, or by a runtime write failure)
 * it stays set with the reason, because records may have been lost and an
 * operator should look. `lastWriteOk` is what recovers: it is false only
 * while the most recent write failed, and the fail-closed gate keys on it.
 */
export function createAuditLog(config: AuditConfig, deps: AuditLogDeps): AuditLog {
  const { path, format } = config;
  const emit = deps.stderr ?? ((line: string) => void process.stderr.write(line));
  // Chaining needs the JSON form; the config layer refuses the other combinations.
  const chainOn = config.chain && format === "jsonl";

  let sink: OpenSink | null = null;
  let toStderr = false; // start-up could not open the path: stderr is the sink
  let startReason = "";
  let runtimeReason = "";
  let writeFailures = 0;
  let lastWriteOk = true;
  let closed = false;
  let partialLine = false; // a failed write may have left half a line behind
  let anchor: ChainAnchor = { seq: 0, prev: GENESIS };

  try {
    mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
    sink = openSink(path);
    if (!sink.regular) {
      startReason = `audit path ${path} is a ${sink.kind}, not a regular file: records are not kept durably`;
    }
  } catch (err) {
    toStderr = true;
    startReason = `cannot open audit file ${path}: ${errorText(err)}; records go to stderr`;
  }
  const echo = config.stderrEcho && startReason === "";
  // A device or the stderr fallback keeps nothing to resume from: genesis.
  if (chainOn && sink?.regular) anchor = resumeAnchor(path).anchor;

  function toStderrLine(line: string): void {
    try {
      emit(`${STDERR_PREFIX}${line}\n`);
    } catch {
      // stderr is the last resort; if even it fails there is nowhere left to report to
    }
  }

  function closeSink(): void {
    if (sink === null) return;
    try {
      closeSync(sink.fd);
    } catch {
      // closing a descriptor we own can only fail if it is already gone
    }
    sink = null;
  }

  /** Reopen when the path now names another file (rotation) or nothing. */
  function currentSink(): OpenSink {
    if (sink !== null) {
      const st = statSync(path, { throwIfNoEntry: false });
      if (st !== undefined && st.ino === sink.ino && st.dev === sink.dev) return sink;
      closeSink();
    }
    try {
      sink = openSink(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      // The directory went away with the rotation; make it again once.
      mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
      sink = openSink(path);
    }
    return sink;
  }

  function writeAll(fd: number, bytes: Buffer): void {
    let off = 0;
    while (off < bytes.length) {
      const n = writeSync(fd, bytes, off, bytes.length - off);
      if (n <= 0) throw new Error("short write: the audit sink accepted no bytes");
      partialLine = true;
      off += n;
    }
    partialLine = false;
  }

  function noteFailure(err: unknown): void {
    writeFailures += 1;
    lastWriteOk = false;
    runtimeReason = `audit write failed (${writeFailures} failure(s) since start, last: ${errorText(err)})`;
  }

  function writeLine(line: string): boolean {
    if (toStderr) {
      toStderrLine(line);
      lastWriteOk = true;
      return true;
    }
    try {
      const target = currentSink();
      writeAll(target.fd, Buffer.from(`${partialLine ? "\n" : ""}${line}\n`, "utf8"));
      lastWriteOk = true;
      if (echo) toStderrLine(line);
      return true;
    } catch (err) {
      noteFailure(err);
      closeSink(); // the next append reopens the path from scratch
      toStderrLine(line); // keep the record somewhere rather than nowhere
      return false;
    }
  }

  function append(entry: AuditEntry): boolean {
    if (closed) return false;
    try {
      const record = buildRecord(entry, isoTimestamp(deps.clock.now()));
      if (chainOn) sealRecord(record, anchor);
      const ok = writeLine(formatRecord(record, format));
      if (ok && chainOn && record.chain !== undefined) anchor = { seq: anchor.seq + 1, prev: record.chain };
      return ok;
    } catch (err) {
      // Building the record failed (a hostile args object); count it like a lost write.
      noteFailure(err);
      return false;
    }
  }

  function status(): AuditStatus {
    const reasons = [startReason, runtimeReason].filter((r) => r !== "");
    return {
      path,
      format,
      chain: chainOn,
      degraded: reasons.length > 0,
      degradedReason: reasons.join("; "),
      writeFailures,
      lastWriteOk,
    };
  }

  return {
    append,
    status,
    tail: (query: TailQuery) => tailAudit(path, query),
    close(): void {
      closed = true;
      closeSink();
    },
  };
}
