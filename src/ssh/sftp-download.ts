import { chmod, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import type { Stats as RemoteStats } from "ssh2";
import { RelayError } from "../core/index.js";
import { printablePath } from "./server-text.js";
import { type CopyOptions, checkAbort, FILES_IN_FLIGHT, skip, sourceKindError } from "./sftp.js";
import { localError } from "./sftp-errors.js";
import type { LocalWrite } from "./sftp-file.js";
import { localFs, MODE_BITS, type RemoteFs, remoteBasename, remoteJoin } from "./sftp-fs.js";
import { readCopyableEntries } from "./sftp-listing.js";
import { createCopyQueue } from "./sftp-queue.js";

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
    // The size the server claims is checked before anything is written; exactly that is read.
    meter.reserve(source.size, where);
    await getFile(remote, remotePath, dest, source, options, false);
    return;
  }

  const dirs: Array<{ path: string; st: RemoteStats }> = [];
  const queue = createCopyQueue(FILES_IN_FLIGHT);
  await walkDown(remote, { remote: remotePath, local: dest, st: source }, options, dirs, queue.start).then(
    () => queue.finish(),
    (err: unknown) => queue.finish(err),
  );
  for (const dir of dirs.reverse()) {
    checkAbort(signal);
    await applyLocalAttrs(dir.path, dir.st);
  }
}

/**
 * The walk of a download: a directory is listed (one reply at a time, every
 * entry counted as it arrives) and created here before any entry of it is
 * handed to `start`; files are reserved in name order with the sizes the
 * listing gave, so no file is asked for its attributes again.
 */
async function walkDown(
  remote: RemoteFs,
  root: { remote: string; local: string; st: RemoteStats },
  options: CopyOptions,
  dirs: Array<{ path: string; st: RemoteStats }>,
  start: (copy: () => Promise<void>) => Promise<void>,
) {
  const { stats, signal, meter } = options;
  const stack = [{ ...root, depth: 0 }];
  for (let next = stack.pop(); next; next = stack.pop()) {
    checkAbort(signal);
    const fresh = await ensureLocalDir(next.local, next.st.mode);
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
      if (st.isSymbolicLink()) await start(() => getLink(remote, r, l, options));
      else if (st.isDirectory()) {
        meter.depth(next.depth + 1, `${options.host}:${r}`);
        stack.push({ remote: r, local: l, st, depth: next.depth + 1 });
      } else if (st.isFile()) {
        meter.reserve(st.size, `${options.host}:${r}`);
        await start(() => getFile(remote, r, l, st, options, fresh));
      } else skip(stats, `${options.host}:${r}`);
    }
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

/**
 * One file, its size already reserved. The local file is opened without
 * following a link; a link already at that name is removed first, unless the
 * directory is one this copy has just created (`fresh`), where nothing was.
 */
async function getFile(
  remote: RemoteFs,
  source: string,
  dest: string,
  st: RemoteStats,
  options: CopyOptions,
  fresh: boolean,
) {
  const { stats } = options;
  const before = fresh ? null : await localFs.lstat(dest);
  if (before?.isSymbolicLink()) await localFs.unlink(dest);
  const write: LocalWrite = { mode: st.mode & MODE_BITS, size: st.size, atime: st.atime, mtime: st.mtime };
  let moved = 0;
  try {
    await remote.get(source, dest, write, (n) => {
      moved += n;
      stats.bytes += n;
    });
  } catch (err) {
    // A half-written file is worse than none. A file that was there and got no byte yet may be
    // untouched (the remote open failed first), so it stays; a timeout leaves the partial file, as
    // the timeout text says.
    const ours = moved > 0 || !before || before.isSymbolicLink();
    if (ours && !options.signal.aborted) await unlink(dest).catch(() => undefined);
    throw err;
  }
  stats.files++;
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

/** Create a directory of the tree here; true when this copy created it, false when it merges into one. */
async function ensureLocalDir(path: string, mode: number): Promise<boolean> {
  try {
    await localFs.mkdir(path, (mode & MODE_BITS) | 0o700);
    return true;
  } catch (err) {
    // lstat: a link where a directory should be is refused, never followed.
    const there = await localFs.lstat(path);
    if (there?.isDirectory()) return false;
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
