import {
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  type Stats,
} from "node:fs";
import { dirname } from "node:path";

// O_NOFOLLOW: a link planted at the path (after a rotation, say) must not
// redirect records into the file it names; open fails with ELOOP instead.
// O_NONBLOCK: a FIFO that appears between the check and the open must not
// hang the call (the open then fails with ENXIO, or the fstat refuses it).
const OPEN_FLAGS =
  constants.O_APPEND | constants.O_CREAT | constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/** The audit file as opened: its descriptor and identity. */
export interface AuditFile {
  fd: number;
  dev: number;
  ino: number;
  /** Size when opened. */
  size: number;
  /** The file does not end with a newline (a torn last line from a crash). */
  endsMidLine: boolean;
}

/** The path names something the writer refuses to write to; the message says what. */
export class UnsafeAuditPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafeAuditPathError";
  }
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return "symbolic link";
  if (st.isDirectory()) return "directory";
  if (st.isCharacterDevice()) return "character device";
  if (st.isBlockDevice()) return "block device";
  if (st.isFIFO()) return "FIFO";
  if (st.isSocket()) return "socket";
  return "special file";
}

function refuseKind(path: string, st: Stats): UnsafeAuditPathError {
  const what = st.isSymbolicLink() ? "it is not followed" : "records are not written to it";
  return new UnsafeAuditPathError(`audit path ${path} is a ${kindOf(st)}, not a regular file; ${what}`);
}

function endsMidLine(path: string, st: Stats): boolean {
  if (st.size === 0) return false;
  let fd: number;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch {
    return false; // unreadable (a write-only mode): assume the writer's usual line boundary
  }
  try {
    const again = fstatSync(fd);
    if (again.ino !== st.ino || again.dev !== st.dev) return false;
    const last = Buffer.alloc(1);
    return readSync(fd, last, 0, 1, st.size - 1) === 1 && last[0] !== 0x0a;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens (creating 0600) the audit file for appending, and refuses anything
 * but a regular file owned by `euid` at the path itself: a symbolic link, a
 * directory, a device (`/dev/null`), a FIFO, a socket, or a file someone
 * else owns. Tightens the mode of an existing file to 0600 (best effort).
 * Throws an UnsafeAuditPathError for a refused path, the system error otherwise.
 */
function openAuditFile(path: string, euid: number | undefined): AuditFile {
  // Looked at before opening so that a device or FIFO is never opened at all
  // (opening one can have effects of its own); the fstat below closes the race.
  const before = lstatSync(path, { throwIfNoEntry: false });
  if (before !== undefined && !before.isFile()) throw refuseKind(path, before);
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS, FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ELOOP") throw err;
    throw new UnsafeAuditPathError(
      `audit path ${path} is a symbolic link, not a regular file; it is not followed`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw refuseKind(path, st);
    if (euid !== undefined && st.uid !== euid) {
      throw new UnsafeAuditPathError(
        `audit file ${path} is owned by uid ${st.uid}, not by the relay's user (uid ${euid}); records are not written to it`,
      );
    }
    if ((st.mode & 0o777) !== FILE_MODE) {
      try {
        fchmodSync(fd, FILE_MODE);
      } catch {
        // Best effort: a file made append-only (chattr +a) still takes records.
      }
    }
    return { fd, dev: st.dev, ino: st.ino, size: st.size, endsMidLine: endsMidLine(path, st) };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** openAuditFile, creating the parent directory (0700) when it is missing. */
export function openAuditFileMakingDir(path: string, euid: number | undefined): AuditFile {
  try {
    return openAuditFile(path, euid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    mkdirSync(dirname(path), { recursive: true, mode: DIR_MODE });
    return openAuditFile(path, euid);
  }
}
