import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  type Stats,
} from "node:fs";
import { dirname, resolve } from "node:path";
import { fail, ok, type Result } from "../core/index.js";

/**
 * The database file, checked and ready to open (its absolute path and the inode seen), or what a
 * check of it or its directory found wrong, for the operator.
 */
type FileCheck = Result<{ path: string; identity: FileIdentity }, string>;

/** The inode a check saw, compared again once SQLite has the file open. */
export interface FileIdentity {
  dev: number;
  ino: number;
}

const PRIVATE_FILE = 0o600;
const PRIVATE_DIR = 0o700;

function mode(stats: Stats): string {
  return (stats.mode & 0o7777).toString(8).padStart(4, "0");
}

function errorCode(err: unknown): string | undefined {
  return err instanceof Error && "code" in err ? String(err.code) : undefined;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Make sure the directory exists and nobody else can swap files in it. Every
 * directory this creates is chmod'ed to 0700 afterwards, because mkdir's mode
 * passes through the umask.
 */
function prepareDirectory(dir: string): string | null {
  let first: string | undefined;
  try {
    first = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR });
  } catch (err) {
    return `cannot create the directory ${dir}: ${message(err)}`;
  }
  if (first !== undefined) {
    // Tighten each directory this call made, from the first one down to `dir`.
    for (let d = dir; d.length >= first.length; d = dirname(d)) {
      try {
        chmodSync(d, PRIVATE_DIR);
      } catch (err) {
        return `cannot set mode 0700 on ${d}: ${message(err)}`;
      }
      if (d === first) break;
    }
  }
  let stats: Stats;
  try {
    stats = lstatSync(dir);
  } catch (err) {
    return `cannot read the directory ${dir}: ${message(err)}`;
  }
  if (!stats.isDirectory()) return `${dir} is not a directory`;
  // Writable by others without the sticky bit: another user could replace the database between checks.
  if ((stats.mode & 0o022) !== 0 && (stats.mode & 0o1000) === 0) {
    return `the directory ${dir} is writable by group or others (mode ${mode(stats)}); make it 0700`;
  }
  return null;
}

/** Refuse anything but a regular file of ours that nobody else can read or write. */
function checkFile(path: string, stats: Stats, euid: number): string | null {
  if (stats.isSymbolicLink()) return `${path} is a symbolic link; give the real path of the database`;
  if (!stats.isFile()) return `${path} is not a regular file`;
  if (stats.uid !== euid) return `${path} belongs to uid ${stats.uid}, not to this user (uid ${euid})`;
  if ((stats.mode & 0o077) !== 0) {
    return `${path} is readable or writable by group or others (mode ${mode(stats)}); chmod 600 it`;
  }
  return null;
}

/**
 * The database file, created 0600 if missing (O_EXCL, then fchmod, so the umask
 * cannot widen it) in a directory created 0700 if missing; an existing file
 * must be a regular file of this user with mode 0600 or narrower.
 */
export function prepareDatabaseFile(path: string, euid: number): FileCheck {
  const absolute = resolve(path);
  const dirProblem = prepareDirectory(dirname(absolute));
  if (dirProblem !== null) return fail(dirProblem);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let stats: Stats;
    try {
      stats = lstatSync(absolute);
    } catch (err) {
      if (errorCode(err) !== "ENOENT") return fail(`cannot read ${absolute}: ${message(err)}`);
      try {
        const fd = openSync(
          absolute,
          constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW,
          PRIVATE_FILE,
        );
        try {
          fchmodSync(fd, PRIVATE_FILE);
        } finally {
          closeSync(fd);
        }
      } catch (createErr) {
        // Another process created it first: check what it made, once.
        if (errorCode(createErr) === "EEXIST") continue;
        return fail(`cannot create ${absolute}: ${message(createErr)}`);
      }
      continue;
    }
    const problem = checkFile(absolute, stats, euid);
    if (problem !== null) return fail(problem);
    return ok({ path: absolute, identity: { dev: stats.dev, ino: stats.ino } });
  }
  return fail(`${absolute} changed while it was being created`);
}

/** Whether the path still names the file that was checked (a swap between check and open is refused). */
export function sameFile(path: string, identity: FileIdentity): boolean {
  try {
    const stats = lstatSync(path);
    return stats.isFile() && stats.dev === identity.dev && stats.ino === identity.ino;
  } catch {
    return false;
  }
}
