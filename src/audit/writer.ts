import { lstatSync } from "node:fs";
import { type Clock, describeError, isoTimestamp } from "../core/index.js";
import { type ChainAnchor, GENESIS, resumeAnchor, sealRecord } from "./chain.js";
import { formatRecord } from "./format.js";
import { buildRecord } from "./record.js";
import { type AuditFile, openAuditFileMakingDir, UnsafeAuditPathError } from "./sink.js";
import { type AuditFileIo, createAuditFileIo, NO_SPACE_CODES } from "./space.js";
import { tailAudit } from "./tail.js";
import type { AuditConfig, AuditEntry, AuditLog, AuditStatus, TailQuery } from "./types.js";
import {
  closeQuietly,
  ensureRoom,
  type Held,
  ReserveError,
  writeLine,
  writeToNowhere,
} from "./writer-file.js";

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
    held = heldFrom(file);
    if (!anchorSettled) {
      // The first file this writer gets hold of decides where the chain continues.
      anchor = resumeAnchor(path).anchor;
      anchorSettled = true;
    }
    return held;
  }

  try {
    adopt(openAuditFileMakingDir(path, euid));
  } catch (err) {
    startReason = `${openFailure(path, err)}; records go to stderr`;
  }
  const toStderrLine = (line: string): void => echoLine(emit, line);

  function closeHeld(): void {
    if (held === null) return;
    closeQuietly(held.fd);
    held = null;
  }

  /**
   * The file at the path now, with its size. lstat, not stat: a link put in
   * place of the file is a change of file, and the reopen refuses it.
   */
  function acquire(): { file: Held; size: number } {
    if (held !== null) {
      const size = stillHeldSize(path, held);
      if (size !== null) return { file: held, size };
      closeHeld();
    }
    const file = adopt(openAuditFileMakingDir(path, euid));
    return { file, size: file.size };
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
      writeLine(io, path, target.file, target.size, line);
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
      writeToNowhere(render(entry).line);
    } catch {
      // Only a rehearsal: the real record reports its own failure.
    }
  }

  function reserve(): boolean {
    if (closed) return false;
    try {
      const { file, size } = acquire();
      ensureRoom(io, path, file, size, RESERVE_MIN);
      notReadyReason = "";
      return true;
    } catch (err) {
      notReadyReason = err instanceof ReserveError ? err.message : openFailure(path, err);
      return false;
    }
  }

  const status = (): AuditStatus => ({
    path,
    format,
    chain: chainOn,
    ...degradation([startReason, runtimeReason, notReadyReason]),
    writeFailures,
    lastWriteOk,
  });

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

/** What the writer knows of a file it just opened: nothing reserved yet past its end. */
function heldFrom(file: AuditFile): Held {
  return {
    ...file,
    reservedEnd: file.size,
    lastSize: file.size,
    midLine: file.endsMidLine,
    cannotAllocate: false,
  };
}

/**
 * The size of the held file when the path still names it, else null. lstat, not stat: a link put
 * in place of the file is a change of file, and the reopen refuses it.
 */
function stillHeldSize(path: string, held: Held): number | null {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined || st.ino !== held.ino || st.dev !== held.dev) return null;
  // Truncated in place (copytruncate): the blocks reserved past the old end went with it.
  if (st.size < held.lastSize) held.reservedEnd = st.size;
  held.lastSize = st.size;
  return st.size;
}

function openFailure(path: string, err: unknown): string {
  return err instanceof UnsafeAuditPathError
    ? err.message
    : `cannot open audit file ${path}: ${errorText(err)}`;
}

/** A record line on stderr, marked as one. */
function echoLine(emit: (line: string) => void, line: string): void {
  try {
    emit(`${STDERR_PREFIX}${line}\n`);
  } catch {
    // stderr is the last resort; if even it fails there is nowhere left to report to
  }
}

/** Degraded while any reason stands; the reasons, each once, in the order given. */
function degradation(reasons: string[]): { degraded: boolean; degradedReason: string } {
  const standing = [...new Set(reasons)].filter((r) => r !== "");
  return { degraded: standing.length > 0, degradedReason: standing.join("; ") };
}
