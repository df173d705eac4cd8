import type { Stats as LocalStats } from "node:fs";
import { basename, join } from "node:path";
import { RelayError } from "../core/index.js";
import { printablePath } from "./server-text.js";
import { localFs, MODE_BITS, type RemoteFs, remoteJoin } from "./sftp-fs.js";
import { createCopyQueue } from "./sftp-queue.js";
import type { TransferMeter } from "./transfer-limits.js";

/** What a transfer did, also when it was cut short (then it says how far it got). */
export interface CopyStats {
  files: number;
  bytes: number;
  directories: number;
  symlinks: number;
  /**
   * Not copied: sockets, FIFOs and devices inside a tree, and entries whose
   * names the server sent unusable (at most MAX_SKIPPED listed, control
   * characters shown as `\xNN`).
   */
  skipped: string[];
  /** The path that was (or was being) written: the destination, or the source's name inside it. */
  destination: string;
}

export interface CopyOptions {
  recursive: boolean;
  /** The host as the caller named it, for messages. */
  host: string;
  /** Checked between operations; aborting ends the copy with a CancelledError. */
  signal: AbortSignal;
  stats: CopyStats;
  /** The transfer's bounds and what it has used of them. */
  meter: TransferMeter;
}

const MAX_SKIPPED = 20;

/**
 * Files of a tree copied at once (ADR 0042). A small file costs several round
 * trips and almost no bytes, so one at a time leaves the connection and the
 * server idle between them; with this many the server always has the next
 * request. 16 and 64 measured alike, and their content shares the transfer's
 * window whatever the number.
 */
export const FILES_IN_FLIGHT = 32;

/**
 * Local entries of an upload looked at (lstat) at once: their answers come
 * from the thread pool together instead of one round after another, and a
 * batch keeps what is held at once small in a directory of many entries.
 */
const LSTAT_BATCH = 64;

export function emptyStats(destination: string): CopyStats {
  return { files: 0, bytes: 0, directories: 0, symlinks: 0, skipped: [], destination };
}

export function checkAbort(signal: AbortSignal): void {
  if (signal.aborted) throw new RelayError("CancelledError", "the transfer was stopped");
}

export function skip(stats: CopyStats, path: string): void {
  if (stats.skipped.length < MAX_SKIPPED) stats.skipped.push(printablePath(path));
}

/** Seconds, as SFTP version 3 carries times (sub-second parts are lost on the wire). */
function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

export function sourceKindError(where: string, isDir: boolean): RelayError {
  return isDir
    ? new RelayError("IsADirectoryError", `${where} is a directory; pass recursive=true to copy the tree`)
    : new RelayError("ValueError", `${where} is not a regular file or a directory`);
}

/**
 * Copy a local file or tree to the remote host. Symlinks inside a tree are
 * recreated as symlinks and never followed, so a link loop cannot make the
 * walk endless and a link cannot pull in a file outside the tree; the
 * source path itself may be a link. Directory modes and times are applied
 * last, deepest first, so copying into them is never blocked by their own
 * final mode.
 *
 * The remote side is never written through a symlink: the `remotePath` the
 * caller named may be a link to a directory (that is followed, as `cp` does),
 * but every path the copy creates or writes below it is looked at with lstat
 * first, or created exclusively in a directory this copy has just made, and a
 * link there is refused (ADR 0015).
 */
export async function uploadTree(
  remote: RemoteFs,
  localPath: string,
  remotePath: string,
  options: CopyOptions,
) {
  const { stats, signal, meter } = options;
  const source = await localFs.stat(localPath);
  if (!source) throw new RelayError("FileNotFoundError", `no such local file: ${localPath}`);
  const isDir = source.isDirectory();
  if ((isDir && !options.recursive) || (!isDir && !source.isFile())) throw sourceKindError(localPath, isDir);

  let dest = remotePath;
  const existing = await remote.stat(remotePath);
  if (existing?.isDirectory()) {
    const name = basename(localPath);
    if (name === "" || name === "." || name === "..") {
      throw new RelayError(
        "ValueError",
        `cannot name the copy of ${localPath} inside ${options.host}:${remotePath}`,
      );
    }
    dest = remoteJoin(remotePath, name);
  } else if (existing && isDir) {
    throw new RelayError("NotADirectoryError", `${options.host}:${remotePath} exists and is not a directory`);
  }
  stats.destination = dest;
  meter.entry(localPath);
  checkAbort(signal);
  if (!isDir) {
    meter.reserve(source.size, localPath);
    await putFile(remote, localPath, dest, source, options, { fresh: false, noFollow: false });
    return;
  }

  const dirs: Array<{ path: string; st: LocalStats }> = [];
  const queue = createCopyQueue(FILES_IN_FLIGHT);
  await walkUp(remote, { local: localPath, remote: dest, st: source }, options, dirs, queue.start).then(
    () => queue.finish(),
    (err: unknown) => queue.finish(err),
  );
  for (const dir of dirs.reverse()) {
    checkAbort(signal);
    // setstat follows links: look first, so a directory swapped for a link is not re-moded through it.
    await refuseRemoteLink(remote, dir.path, options.host, "directory");
    await remote.setstat(dir.path, {
      mode: dir.st.mode & MODE_BITS,
      atime: seconds(dir.st.atimeMs),
      mtime: seconds(dir.st.mtimeMs),
    });
  }
}

/**
 * The walk of an upload: each directory is created (or merged into) before
 * any entry of it is handed to `start`, entries are counted and files
 * reserved in name order, and the copies run beside the walk.
 */
async function walkUp(
  remote: RemoteFs,
  root: { local: string; remote: string; st: LocalStats },
  options: CopyOptions,
  dirs: Array<{ path: string; st: LocalStats }>,
  start: (copy: () => Promise<void>) => Promise<void>,
) {
  const { stats, signal, meter } = options;
  const stack = [{ ...root, depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    const fresh = await ensureRemoteDir(remote, next.remote, next.st.mode, options.host);
    stats.directories++;
    dirs.push({ path: next.remote, st: next.st });
    const names = (await localFs.readdir(next.local)).sort();
    for (let i = 0; i < names.length; i += LSTAT_BATCH) {
      const batch = names.slice(i, i + LSTAT_BATCH).map((name) => join(next.local, name));
      const found = await Promise.all(batch.map((l) => localFs.lstat(l)));
      for (const [j, l] of batch.entries()) {
        checkAbort(signal);
        meter.entry(l);
        const st = found[j];
        if (!st) continue; // removed while we walked
        const r = remoteJoin(next.remote, basename(l));
        if (st.isSymbolicLink()) await start(() => putLink(remote, l, r, stats));
        else if (st.isDirectory()) {
          meter.depth(next.depth + 1, l);
          stack.push({ local: l, remote: r, st, depth: next.depth + 1 });
        } else if (st.isFile()) {
          meter.reserve(st.size, l);
          await start(() => putFile(remote, l, r, st, options, { fresh, noFollow: true }));
        } else skip(stats, l);
      }
    }
  }
}

function remoteLinkError(host: string, path: string, what: "file" | "directory"): RelayError {
  return what === "directory"
    ? new RelayError(
        "NotADirectoryError",
        `${host}:${printablePath(path)} is a symlink; not copying a tree into it`,
      )
    : new RelayError(
        "FileExistsError",
        `${host}:${printablePath(path)} is a symlink; not writing a file through it`,
      );
}

async function refuseRemoteLink(remote: RemoteFs, path: string, host: string, what: "file" | "directory") {
  if ((await remote.lstat(path))?.isSymbolicLink()) throw remoteLinkError(host, path, what);
}

/**
 * One file, its size already reserved. In a directory this copy has just
 * created (`fresh`) nothing can be there but what a remote process put there
 * since, and the exclusive create refuses that: no lstat is asked first.
 */
async function putFile(
  remote: RemoteFs,
  local: string,
  dest: string,
  st: LocalStats,
  options: CopyOptions,
  how: { fresh: boolean; noFollow: boolean },
) {
  const { stats, host } = options;
  // lstat, never stat: what is at `dest` itself decides, not what a link there points to.
  const there = how.fresh ? null : await remote.lstat(dest);
  if (there?.isSymbolicLink()) throw remoteLinkError(host, dest, "file");
  if (there?.isDirectory()) {
    throw new RelayError("IsADirectoryError", `${host}:${printablePath(dest)} is a directory`);
  }
  const write = {
    // Nothing there: create it exclusively, so a link that appears meanwhile makes the open fail.
    exclusive: there === null,
    // The mode goes on before the first byte, so a private file is never readable in transit.
    mode: st.mode & MODE_BITS,
    size: st.size,
    atime: seconds(st.atimeMs),
    mtime: seconds(st.mtimeMs),
    setAttrs: there === null || there.isFile(),
    noFollow: how.noFollow,
  };
  let moved = 0;
  try {
    await remote.put(local, dest, write, (n) => {
      moved += n;
      stats.bytes += n;
    });
  } catch (err) {
    if (write.exclusive && !options.signal.aborted) {
      // An exclusive create fails when something appeared at the path since the lstat.
      const now = await remote.lstat(dest).catch(() => null);
      if (now?.isSymbolicLink()) throw remoteLinkError(host, dest, "file");
      // A file this copy created and left half-written goes, as on download (when the channel still works).
      if (moved > 0 && now?.isFile()) await remote.unlink(dest).catch(() => undefined);
    }
    throw err;
  }
  stats.files++;
}

async function putLink(remote: RemoteFs, local: string, dest: string, stats: CopyStats) {
  const target = await localFs.readlink(local);
  try {
    await remote.symlink(target, dest);
  } catch (err) {
    // Re-copying a tree: an old link in the way is replaced (the link itself, never its target).
    const there = await remote.lstat(dest);
    if (!there?.isSymbolicLink()) throw err;
    await remote.unlink(dest);
    await remote.symlink(target, dest);
  }
  stats.symlinks++;
}

/** Create a directory of the tree; true when this copy created it, false when it merges into one. */
async function ensureRemoteDir(remote: RemoteFs, path: string, mode: number, host: string): Promise<boolean> {
  try {
    // Owner rwx while copying; the real mode is applied at the end. mkdir never follows a link.
    await remote.mkdir(path, (mode & MODE_BITS) | 0o700);
    return true;
  } catch (err) {
    // lstat: a link where a directory should be is refused, never merged into.
    const there = await remote.lstat(path);
    if (there?.isDirectory()) return false; // merging into an existing tree
    if (there?.isSymbolicLink()) throw remoteLinkError(host, path, "directory");
    if (there) {
      throw new RelayError(
        "NotADirectoryError",
        `${host}:${printablePath(path)} exists and is not a directory`,
      );
    }
    throw err;
  }
}
