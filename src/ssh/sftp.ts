import type { Stats as LocalStats } from "node:fs";
import { chmod, utimes } from "node:fs/promises";
import { basename, join } from "node:path";
import type { Stats as RemoteStats } from "ssh2";
import { RelayError } from "../core/index.js";
import { localError, localFs, MODE_BITS, type RemoteFs, remoteBasename, remoteJoin } from "./sftp-fs.js";

/** What a transfer did, also when it was cut short (then it says how far it got). */
export interface CopyStats {
  files: number;
  bytes: number;
  directories: number;
  symlinks: number;
  /** Sockets, FIFOs and devices inside a tree: not copied (at most MAX_SKIPPED listed). */
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
}

export const MAX_SKIPPED = 20;

export function emptyStats(destination: string): CopyStats {
  return { files: 0, bytes: 0, directories: 0, symlinks: 0, skipped: [], destination };
}

function checkAbort(signal: AbortSignal): void {
  if (signal.aborted) throw new RelayError("CancelledError", "the transfer was stopped");
}

function skip(stats: CopyStats, path: string): void {
  if (stats.skipped.length < MAX_SKIPPED) stats.skipped.push(path);
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
 */
export async function uploadTree(
  remote: RemoteFs,
  localPath: string,
  remotePath: string,
  options: CopyOptions,
) {
  const { stats, signal } = options;
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
  checkAbort(signal);
  if (!isDir) {
    await putFile(remote, localPath, dest, source, stats);
    return;
  }

  const dirs: Array<{ path: string; st: LocalStats }> = [];
  const stack = [{ local: localPath, remote: dest, st: source }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    await ensureRemoteDir(remote, next.remote, next.st.mode, options.host);
    stats.directories++;
    dirs.push({ path: next.remote, st: next.st });
    const names = (await localFs.readdir(next.local)).sort();
    for (const name of names) {
      checkAbort(signal);
      const l = join(next.local, name);
      const r = remoteJoin(next.remote, name);
      const st = await localFs.lstat(l);
      if (!st) continue; // removed while we walked
      if (st.isSymbolicLink()) await putLink(remote, l, r, stats);
      else if (st.isDirectory()) stack.push({ local: l, remote: r, st });
      else if (st.isFile()) await putFile(remote, l, r, st, stats);
      else skip(stats, l);
    }
  }
  for (const dir of dirs.reverse()) {
    checkAbort(signal);
    await remote.setstat(dir.path, {
      mode: dir.st.mode & MODE_BITS,
      atime: seconds(dir.st.atimeMs),
      mtime: seconds(dir.st.mtimeMs),
    });
  }
}

async function putFile(remote: RemoteFs, local: string, dest: string, st: LocalStats, stats: CopyStats) {
  // The mode goes on before the first byte, so a private file is never readable in transit.
  await remote.put(local, dest, st.mode & MODE_BITS, (n) => {
    stats.bytes += n;
  });
  await remote.setstat(dest, {
    mode: st.mode & MODE_BITS,
    atime: seconds(st.atimeMs),
    mtime: seconds(st.mtimeMs),
  });
  stats.files++;
}

async function putLink(remote: RemoteFs, local: string, dest: string, stats: CopyStats) {
  const target = await localFs.readlink(local);
  try {
    await remote.symlink(target, dest);
  } catch (err) {
    // Re-copying a tree: an old link in the way is replaced, anything else is an error.
    const there = await remote.lstat(dest);
    if (!there?.isSymbolicLink()) throw err;
    await remote.unlink(dest);
    await remote.symlink(target, dest);
  }
  stats.symlinks++;
}

async function ensureRemoteDir(remote: RemoteFs, path: string, mode: number, host: string) {
  try {
    // Owner rwx while copying; the real mode is applied at the end.
    await remote.mkdir(path, (mode & MODE_BITS) | 0o700);
  } catch (err) {
    const there = await remote.stat(path);
    if (there?.isDirectory()) return; // merging into an existing tree
    if (there) throw new RelayError("NotADirectoryError", `${host}:${path} exists and is not a directory`);
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
  const { stats, signal } = options;
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
  checkAbort(signal);
  if (!isDir) {
    await getFile(remote, remotePath, dest, source, stats);
    return;
  }

  const dirs: Array<{ path: string; st: RemoteStats }> = [];
  const stack = [{ remote: remotePath, local: dest, st: source }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    await ensureLocalDir(next.local, next.st.mode);
    stats.directories++;
    dirs.push({ path: next.local, st: next.st });
    // readdir reports each entry as lstat would: a link is seen as a link, not as what it points to.
    const entries = (await remote.readdir(next.remote)).sort((a, b) => (a.filename < b.filename ? -1 : 1));
    const seen = new Set<string>();
    for (const entry of entries) {
      checkAbort(signal);
      const name = entry.filename;
      // The server names the entries: nothing it sends may lead outside the destination tree.
      if (name === "" || name === "." || name === ".." || name.includes("/") || seen.has(name)) {
        skip(stats, `${options.host}:${remoteJoin(next.remote, name)}`);
        continue;
      }
      seen.add(name);
      const r = remoteJoin(next.remote, name);
      const l = join(next.local, name);
      const st = entry.attrs;
      if (st.isSymbolicLink()) await getLink(remote, r, l, stats);
      else if (st.isDirectory()) stack.push({ remote: r, local: l, st });
      else if (st.isFile()) await getFile(remote, r, l, st, stats);
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

async function getFile(remote: RemoteFs, source: string, dest: string, st: RemoteStats, stats: CopyStats) {
  // Write a new file, never through a link already at that name (it could point anywhere).
  if ((await localFs.lstat(dest))?.isSymbolicLink()) await localFs.unlink(dest);
  await remote.get(source, dest, st.mode & MODE_BITS, (n) => {
    stats.bytes += n;
  });
  await applyLocalAttrs(dest, st);
  stats.files++;
}

async function getLink(remote: RemoteFs, source: string, dest: string, stats: CopyStats) {
  const target = await remote.readlink(source);
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
      throw new RelayError("NotADirectoryError", `${path} is a symlink; not copying a tree into it`);
    }
    if (there) throw new RelayError("NotADirectoryError", `${path} exists and is not a directory`);
    throw localError(err, "mkdir", path);
  }
}
