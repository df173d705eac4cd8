import { closeSync, fstatSync, lstatSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { type Clock, describeError, isoTimestamp } from "../core/index.js";
import { type ChainAnchor, GENESIS, resumeAnchor, sealRecord } from "./chain.js";
import { formatRecord } from "./format.js";
import { buildRecord } from "./record.js";
import { type AuditFile, openAuditFileMakingDir, UnsafeAuditPathError } from "./sink.js";
import { type AuditFileIo, createAuditFileIo, NO_SPACE_CODES, UNSUPPORTED_CODES } from "./space.js";
import { tailAudit } from "./tail.js";
import type { AuditConfig, AuditEntry, AuditLog, AuditStatus, TailQuery } from "./types.js";

export interface AuditLogDeps {
  clock: Clock;
  /**
   * Receives whole lines (`AUDIT <record>\n`) for the stderr echo and for
   * records that could not reach the file. Default: process.stderr.
   */
  stderr?: (line: string) => void;
  /** The system calls made on the file; tests inject short writes and ENOSPC here. */
  io?: AuditFileIo;
  /** The user the file must belong to. Default: the process's effective uid. */
  euid?: number;
}

/** Prefix that marks audit records on stderr (docs/wire-contract.md §4.6). */
const STDERR_PREFIX = "AUDIT ";

/**
 * Room kept allocated past the end of the file before a call above Tier 0
 * may run: far more than any one record, so calls running side by side are
 * covered too. Topped up a chunk at a time, so a typical call makes no
 * allocation call at all (one in some three hundred does).
 */
export const RESERVE_MIN = 64 * 1024;
const RESERVE_CHUNK = 256 * 1024;

/** The open file and what the writer knows of it. */
interface Held extends AuditFile {
  /** Blocks are allocated (by this writer) up to this offset. */
  reservedEnd: number;
  /** Size seen at the last look; a smaller one later means it was truncated in place. */
  lastSize: number;
  /** The file ends inside a line, so the next record must start with a newline. */
  midLine: boolean;
  /** The file system refused fallocate as unsupported: check free space instead. */
  cannotAllocate: boolean;
}

class ReserveError extends Error {}

function errorText(err: unknown): string {
  return describeError(err).message;
}

/**
 * The append-only audit writer of docs/audit.md. Each append is one
 * synchronous write of one line on an O_APPEND descriptor, so the record is
 * in the file before append returns. Nothing here throws into the caller.
 *
 * - `reserve` runs before any work above Tier 0: it re-checks the path,
 *   reopens it after a rotation, and keeps RESERVE_MIN bytes allocated past
 *   the end of the file, so the record of the call that follows cannot fail
 *   for space (ADR 0014). It is also the probe that lets the first call after
 *   a failure through once the file takes records again.
 * - A write that fails part way is cut back to the end of the last complete
 *   record, so no torn line stays in the file and the chain keeps verifying.
 * - Only a regular file owned by the relay's user, opened without following
 *   a link, is written to; anything else at the path degrades the log.
 *
 * `degraded` is sticky once a write failed, because records may have been
 * lost and an operator should look; `lastWriteOk` is what recovers.
 */
export function createAuditLog(config: AuditConfig, deps: AuditLogDeps): AuditLog {
  const { path, format } = config;
  const emit = deps.stderr ?? ((line: string) => void process.stderr.write(line));
  const io = deps.io ?? createAuditFileIo();
  const euid = deps.euid ?? process.geteuid?.();
  // Chaining needs the JSON form; the config layer refuses the other combinations.
  const chainOn = config.chain && format === "jsonl";

  let held: Held | null = null;
  let startReason = "";
  let runtimeReason = "";
  let notReadyReason = ""; // the last reserve failed, and why; cleared by the next one that succeeds
  let writeFailures = 0;
  let lastWriteOk = true;
  let closed = false;
  let anchor: ChainAnchor = { seq: 0, prev: GENESIS };
  let anchorSettled = !chainOn;

  function adopt(file: AuditFile): Held {
    held = {
      ...file,
      reservedEnd: file.size,
      lastSize: file.size,
      midLine: file.endsMidLine,
      cannotAllocate: false,
    };
    if (!anchorSettled) {
      // The first file this writer gets hold of decides where the chain continues.
      anchor = resumeAnchor(path).anchor;
      anchorSettled = true;
    }
    return held;
  }

  function openFailure(err: unknown): string {
    return err instanceof UnsafeAuditPathError
      ? err.message
      : `cannot open audit file ${path}: ${errorText(err)}`;
  }

  try {
    adopt(openAuditFileMakingDir(path, euid));
  } catch (err) {
    startReason = `${openFailure(err)}; records go to stderr`;
  }

  function toStderrLine(line: string): void {
    try {
      emit(`${STDERR_PREFIX}${line}\n`);
    } catch {
      // stderr is the last resort; if even it fails there is nowhere left to report to
    }
  }

  function closeHeld(): void {
    if (held === null) return;
    try {
      closeSync(held.fd);
    } catch {
      // closing a descriptor we own can only fail if it is already gone
    }
    held = null;
  }

  /**
   * The file at the path now, with its size. lstat, not stat: a link put in
   * place of the file is a change of file, and the reopen refuses it.
   */
  function acquire(): { file: Held; size: number } {
    if (held !== null) {
      const st = lstatSync(path, { throwIfNoEntry: false });
      if (st !== undefined && st.ino === held.ino && st.dev === held.dev) {
        // Truncated in place (copytruncate): the blocks reserved past the old end went with it.
        if (st.size < held.lastSize) held.reservedEnd = st.size;
        held.lastSize = st.size;
        return { file: held, size: st.size };
      }
      closeHeld();
    }
    const file = adopt(openAuditFileMakingDir(path, euid));
    return { file, size: file.size };
  }

  /** Make sure `need` bytes past `size` can be written without running out of space. */
  function ensureRoom(file: Held, size: number, need: number): void {
    if (file.reservedEnd - size >= need) return;
    if (!file.cannotAllocate) {
      const want = Math.max(RESERVE_CHUNK, need);
      let outcome = io.allocate(file.fd, size, want);
      if (outcome.ok) {
        file.reservedEnd = size + want;
        return;
      }
      // A nearly full disk may still hold the minimum when it cannot hold a chunk.
      if (NO_SPACE_CODES.has(outcome.code) && want > need) {
        outcome = io.allocate(file.fd, size, need);
        if (outcome.ok) {
          file.reservedEnd = size + need;
          return;
        }
      }
      if (!UNSUPPORTED_CODES.has(outcome.code)) {
        throw new ReserveError(`cannot reserve room for audit records in ${path}: ${outcome.message}`);
      }
      file.cannotAllocate = true;
    }
    // No way to reserve on this file system: the next best thing is to see that the room is there.
    const free = io.freeBytes(dirname(path));
    if (free < need) {
      throw new ReserveError(
        `cannot reserve room for audit records in ${path}: ${free} bytes free, ${need} needed (the file system cannot preallocate)`,
      );
    }
  }

  /** After a write failed part way: remove what it wrote, if nobody wrote after it. */
  function cutBack(file: Held, start: number, written: number): void {
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

  function writeLine(file: Held, size: number, line: string): void {
    const bytes = Buffer.from(`${file.midLine ? "\n" : ""}${line}\n`, "utf8");
    if (file.reservedEnd - size < bytes.length) {
      try {
        ensureRoom(file, size, bytes.length);
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
      if (off > 0) cutBack(file, size, off);
      throw err;
    }
    file.midLine = false;
    file.lastSize = size + bytes.length;
  }

  function noteFailure(err: unknown): void {
    writeFailures += 1;
    lastWriteOk = false;
    const last = err instanceof UnsafeAuditPathError ? err.message : errorText(err);
    runtimeReason = `audit write failed (${writeFailures} failure(s) since start, last: ${last})`;
  }

  function append(entry: AuditEntry): boolean {
    if (closed) return false;
    let target: { file: Held; size: number } | null = null;
    let openError: unknown = null;
    try {
      target = acquire();
    } catch (err) {
      openError = err;
    }
    let line: string;
    let chain: string | undefined;
    try {
      // Sealed after acquire: a first open may have just settled where the chain continues.
      ({ line, chain } = render(entry));
    } catch (err) {
      // Building the record failed (a hostile args object); count it like a lost write.
      noteFailure(err);
      return false;
    }
    if (target === null) {
      noteFailure(openError);
      toStderrLine(line); // keep the record somewhere rather than nowhere
      return false;
    }
    try {
      writeLine(target.file, target.size, line);
    } catch (err) {
      noteFailure(err);
      // Out of space the file is still the right one; anything else is worth a fresh open.
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (!NO_SPACE_CODES.has(code)) closeHeld();
      toStderrLine(line);
      return false;
    }
    lastWriteOk = true;
    // A record that missed the file went to stderr above; one that reached it is echoed only on request.
    if (config.stderrEcho) toStderrLine(line);
    // The anchor advances only once the line is in the file, so a failed write leaves no gap.
    if (chain !== undefined) anchor = { seq: anchor.seq + 1, prev: chain };
    return true;
  }

  /** The record's line and, with the chain on, its link after the current anchor. Throws on a hostile entry. */
  function render(entry: AuditEntry): { line: string; chain: string | undefined } {
    const record = buildRecord(entry, isoTimestamp(deps.clock.now()), config.instance);
    const chain = chainOn ? sealRecord(record, anchor).chain : undefined;
    return { line: formatRecord(record, format), chain };
  }

  function rehearse(entry: AuditEntry): void {
    try {
      const { line } = render(entry);
      // Node's side of a write(2) too, into /dev/null: the audit file is not touched.
      const bytes = Buffer.from(`${line}\n`, "utf8");
      const sink = openSync("/dev/null", "w");
      try {
        writeSync(sink, bytes, 0, bytes.length);
      } finally {
        closeSync(sink);
      }
    } catch {
      // Only a rehearsal: the real record reports its own failure.
    }
  }

  function reserve(): boolean {
    if (closed) return false;
    try {
      const { file, size } = acquire();
      ensureRoom(file, size, RESERVE_MIN);
      notReadyReason = "";
      return true;
    } catch (err) {
      notReadyReason = err instanceof ReserveError ? err.message : openFailure(err);
      return false;
    }
  }

  function status(): AuditStatus {
    const reasons = [...new Set([startReason, runtimeReason, notReadyReason])].filter((r) => r !== "");
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
    reserve,
    rehearse,
    status,
    tail: (query: TailQuery) => tailAudit(path, query),
    close(): void {
      closed = true;
      closeHeld();
    },
  };
}
