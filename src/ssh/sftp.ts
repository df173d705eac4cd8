import type { Stats as LocalStats } from "node:fs";
import { constants } from "node:fs";
import { chmod, open, unlink, utimes } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Stats as RemoteStats } from "ssh2";
import { RelayError } from "../core/index.js";
import { printablePath } from "./server-text.js";
import { localError, localFs, MODE_BITS, type RemoteFs, remoteBasename, remoteJoin } from "./sftp-fs.js";
import { readCopyableEntries } from "./sftp-listing.js";
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

export function emptyStats(destination: string): CopyStats {
  return { files: 0, bytes: 0, directories: 0, symlinks: 0, skipped: [], destination };
}

function checkAbort(signal: AbortSignal): void {
  if (signal.aborted) throw new RelayError("CancelledError", "the transfer was stopped");
}

function skip(stats: CopyStats, path: string): void {
  if (stats.skipped.length < MAX_SKIPPED) stats.skipped.push(printablePath(path));
}

/** Seconds, as SFTP version 3 carries times (sub-second parts are lost on the wire). */
function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function sourceKindError(where: string, isDir: boolean): RelayError {
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
 * first, and a link there is refused (ADR 0015).
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
    await putFile(remote, localPath, dest, source, options);
    return;
  }

  const dirs: Array<{ path: string; st: LocalStats }> = [];
  const stack = [{ local: localPath, remote: dest, st: source, depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    await ensureRemoteDir(remote, next.remote, next.st.mode, options.host);
    stats.directories++;
    dirs.push({ path: next.remote, st: next.st });
    const names = (await localFs.readdir(next.local)).sort();
    for (const name of names) {
      checkAbort(signal);
      const l = join(next.local, name);
      meter.entry(l);
      const r = remoteJoin(next.remote, name);
      const st = await localFs.lstat(l);
      if (!st) continue; // removed while we walked
      if (st.isSymbolicLink()) await putLink(remote, l, r, stats);
      else if (st.isDirectory()) {
        meter.depth(next.depth + 1, l);
        stack.push({ local: l, remote: r, st, depth: next.depth + 1 });
      } else if (st.isFile()) await putFile(remote, l, r, st, options);
      else skip(stats, l);
    }
  }
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

async function putFile(remote: RemoteFs, local: string, dest: string, st: LocalStats, options: CopyOptions) {
  const { stats, meter, host } = options;
  meter.reserve(st.size, local);
  // lstat, never stat: what is at `dest` itself decides, not what a link there points to.
  const there = await remote.lstat(dest);
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

async function ensureRemoteDir(remote: RemoteFs, path: string, mode: number, host: string) {
  try {
    // Owner rwx while copying; the real mode is applied at the end. mkdir never follows a link.
    await remote.mkdir(path, (mode & MODE_BITS) | 0o700);
  } catch (err) {
    // lstat: a link where a directory should be is refused, never merged into.
    const there = await remote.lstat(path);
    if (there?.isDirectory()) return; // merging into an existing tree
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

/** Copy a remote file or tree here; the mirror image of uploadTree, with the same rules. */
export async function downloadTree(
  remote: RemoteFs,
  remotePath: string,
  localPath: string,
  options: CopyOptions,
) {
  const { stats, signal, meter } = options;
  const where = `${options.host}:${remotePath}`;
  const source = await remote.stat(remotePath);
  if (!source) throw new RelayError("FileNotFoundError", `no such file: ${where}`);
  const isDir = source.isDirectory();
  if ((isDir && !options.recursive) || (!isDir && !source.isFile())) throw sourceKindError(where, isDir);

  let dest = localPath;
  const existing = await localFs.stat(localPath);
  if (existing?.isDirectory()) {
    const name = remoteBasename(remotePath);
    if (name === "" || name === "." || name === "..") {
      throw new RelayError("ValueError", `cannot name the copy of ${where} inside ${localPath}`);
    }
    dest = join(localPath, name);
  } else if (existing && isDir) {
    throw new RelayError("NotADirectoryError", `${localPath} exists and is not a directory`);
  }
  stats.destination = dest;
  meter.entry(where);
  checkAbort(signal);
  if (!isDir) {
    await getFile(remote, remotePath, dest, source, options);
    return;
  }

  const dirs: Array<{ path: string; st: RemoteStats }> = [];
  const stack = [{ remote: remotePath, local: dest, st: source, depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    await ensureLocalDir(next.local, next.st.mode);
    stats.directories++;
    dirs.push({ path: next.local, st: next.st });
    const dir = next.remote;
    const entries = await readCopyableEntries(remote, dir, {
      entry: () => {
        checkAbort(signal);
        meter.entry(`${options.host}:${dir}`);
      },
      unusable: (path) => skip(stats, `${options.host}:${path}`),
    });
    for (const entry of entries) {
      checkAbort(signal);
      const name = entry.filename;
      const r = remoteJoin(dir, name);
      const l = join(next.local, name);
      const st = entry.attrs;
      if (st.isSymbolicLink()) await getLink(remote, r, l, options);
      else if (st.isDirectory()) {
        meter.depth(next.depth + 1, `${options.host}:${r}`);
        stack.push({ remote: r, local: l, st, depth: next.depth + 1 });
      } else if (st.isFile()) await getFile(remote, r, l, st, options);
      else skip(stats, `${options.host}:${r}`);
    }
  }
  for (const dir of dirs.reverse()) {
    checkAbort(signal);
    await applyLocalAttrs(dir.path, dir.st);
  }
}

async function applyLocalAttrs(path: string, st: RemoteStats) {
  try {
    await chmod(path, st.mode & MODE_BITS);
    await utimes(path, st.atime, st.mtime);
  } catch (err) {
    throw localError(err, "setting the mode and times of", path);
  }
}

async function getFile(
  remote: RemoteFs,
  source: string,
  dest: string,
  st: RemoteStats,
  options: CopyOptions,
) {
  const { stats, meter } = options;
  // The size the server claims is checked before anything is written; fastGet then reads exactly that.
  meter.reserve(st.size, `${options.host}:${source}`);
  // Write a new file, never through a link already at that name (it could point anywhere).
  const before = await localFs.lstat(dest);
  if (before?.isSymbolicLink()) await localFs.unlink(dest);
  let moved = 0;
  try {
    if (st.size === 0) await createEmpty(dest, st.mode & MODE_BITS);
    else {
      await remote.get(source, dest, st.mode & MODE_BITS, st.size, (n) => {
        moved += n;
        stats.bytes += n;
      });
    }
  } catch (err) {
    // A half-written file is worse than none. A file that was there and got no byte yet may be
    // untouched (the remote open failed first), so it stays; a timeout leaves the partial file, as
    // the timeout text says.
    const ours = moved > 0 || !before || before.isSymbolicLink();
    if (ours && !options.signal.aborted) await unlink(dest).catch(() => undefined);
    throw err;
  }
  await applyLocalAttrs(dest, st);
  stats.files++;
}

/** An empty file needs no read at all (and so no fstat a server could answer with any size). */
async function createEmpty(path: string, mode: number) {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;
  try {
    const handle = await open(path, flags, mode);
    await handle.close();
  } catch (err) {
    throw localError(err, "write", path);
  }
}

async function getLink(remote: RemoteFs, source: string, dest: string, options: CopyOptions) {
  const { stats } = options;
  const target = await remote.readlink(source);
  if (target.includes("\0") || target === "") {
    // A target no local link can hold: skipped like an unusable name, not a reason to stop.
    skip(stats, `${options.host}:${source}`);
    return;
  }
  try {
    await localFs.symlink(target, dest);
  } catch (err) {
    const there = await localFs.lstat(dest);
    if (!there?.isSymbolicLink()) throw localError(err, "symlink", dest);
    await localFs.unlink(dest);
    await localFs.symlink(target, dest).catch((again: unknown) => {
      throw localError(again, "symlink", dest);
    });
  }
  stats.symlinks++;
}

async function ensureLocalDir(path: string, mode: number) {
  try {
    await localFs.mkdir(path, (mode & MODE_BITS) | 0o700);
  } catch (err) {
    // lstat: a link where a directory should be is refused, never followed.
    const there = await localFs.lstat(path);
    if (there?.isDirectory()) return;
    if (there?.isSymbolicLink()) {
      throw new RelayError(
        "NotADirectoryError",
        `${printablePath(path)} is a symlink; not copying a tree into it`,
      );
    }
    if (there)
      throw new RelayError("NotADirectoryError", `${printablePath(path)} exists and is not a directory`);
    throw localError(err, "mkdir", path);
  }
}
