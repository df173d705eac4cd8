import type { Stats as LocalStats } from "node:fs";
import { lstat, mkdir, readdir, readlink, stat, symlink, unlink } from "node:fs/promises";
import { posix } from "node:path";
import type { FileEntryWithStats, InputAttributes, SFTPWrapper, Stats } from "ssh2";
import { RelayError } from "../core/index.js";
import { call, EOF_STATUS, localError, remoteError } from "./sftp-errors.js";
import { getFile, type LocalWrite, putFile, type RemoteWrite } from "./sftp-file.js";
import { createRequestWindow, requestBytesFor } from "./sftp-window.js";

/** Only the permission bits travel: set-id and sticky bits are dropped in both directions. */
export const MODE_BITS = 0o777;

/**
 * The remote side of a transfer: ssh2's SFTP calls as promises, every error
 * turned into a RelayError that names the host and path. `where` reads
 * `<host>:<path>` in messages.
 */
export interface RemoteFs {
  /** Follows symlinks; null when nothing is there. */
  stat(path: string): Promise<Stats | null>;
  lstat(path: string): Promise<Stats | null>;
  /**
   * A directory listing read one server reply at a time: `accept` sees every
   * entry as it arrives and keeps it or drops it; when it throws (a bound was
   * crossed) the listing stops there, so an endless listing costs no memory.
   */
  listDir(path: string, accept: (entry: FileEntryWithStats) => boolean): Promise<FileEntryWithStats[]>;
  mkdir(path: string, mode: number): Promise<void>;
  setstat(path: string, attrs: InputAttributes): Promise<void>;
  readlink(path: string): Promise<string>;
  symlink(target: string, path: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Write `size` bytes of a local file to a remote path; see RemoteWrite. */
  put(local: string, remote: string, write: RemoteWrite, onBytes: (n: number) => void): Promise<void>;
  /** Read exactly `size` bytes (what the caller checked against its bounds, never what fstat claims later). */
  get(remote: string, local: string, write: LocalWrite, onBytes: (n: number) => void): Promise<void>;
}

export function createRemoteFs(sftp: SFTPWrapper, host: string): RemoteFs {
  const at = (path: string) => `${host}:${path}`;
  // One window per transfer: every file of it shares the same slots.
  const session = { sftp, window: createRequestWindow(requestBytesFor(sftp)) };
  const orNull = (err: unknown): null => {
    if (err instanceof RelayError && err.type === "FileNotFoundError") return null;
    throw err;
  };
  const close = (handle: Buffer, where: string) => call<void>("close", where, (cb) => sftp.close(handle, cb));

  async function listDir(path: string, accept: (entry: FileEntryWithStats) => boolean) {
    const where = at(path);
    const handle = await call<Buffer>("readdir", where, (cb) => sftp.opendir(path, cb));
    const kept: FileEntryWithStats[] = [];
    try {
      for (;;) {
        // ssh2 answers end of directory with an EOF status error, or with `false`.
        const batch = await new Promise<FileEntryWithStats[] | false>((resolve, reject) => {
          try {
            sftp.readdir(handle, (err, list) => {
              if (err && (err as { code?: unknown }).code === EOF_STATUS) resolve(false);
              else if (err) reject(remoteError(err, "readdir", where));
              else resolve((list as FileEntryWithStats[] | false | undefined) ?? false);
            });
          } catch (err) {
            reject(remoteError(err, "readdir", where));
          }
        });
        if (batch === false) break;
        for (const entry of batch) if (accept(entry)) kept.push(entry);
      }
    } finally {
      // A failed close changes nothing the caller can act on; the listing's own outcome is the answer.
      await close(handle, where).catch(() => undefined);
    }
    return kept;
  }

  return {
    stat: (path) => call<Stats>("stat", at(path), (cb) => sftp.stat(path, cb)).catch(orNull),
    lstat: (path) => call<Stats>("lstat", at(path), (cb) => sftp.lstat(path, cb)).catch(orNull),
    listDir,
    mkdir: (path, mode) => call<void>("mkdir", at(path), (cb) => sftp.mkdir(path, { mode }, cb)),
    setstat: (path, attrs) => call<void>("setstat", at(path), (cb) => sftp.setstat(path, attrs, cb)),
    readlink: (path) => call<string>("readlink", at(path), (cb) => sftp.readlink(path, cb)),
    symlink: (target, path) => call<void>("symlink", at(path), (cb) => sftp.symlink(target, path, cb)),
    unlink: (path) => call<void>("unlink", at(path), (cb) => sftp.unlink(path, cb)),
    put: (local, remote, write, onBytes) =>
      putFile(session, { local, remote, where: at(remote) }, write, onBytes),
    get: (remote, local, write, onBytes) =>
      getFile(session, { remote, local, where: at(remote) }, write, onBytes),
  };
}

/** The local side, with the same error shapes. */
export const localFs = {
  stat: (path: string) => stat(path).catch((err: unknown) => orNullLocal(err, "stat", path)),
  lstat: (path: string) => lstat(path).catch((err: unknown) => orNullLocal(err, "lstat", path)),
  readdir: (path: string) =>
    readdir(path).catch((err: unknown) => {
      throw localError(err, "readdir", path);
    }),
  mkdir: (path: string, mode: number) =>
    mkdir(path, { mode }).then(
      () => undefined,
      (err: unknown) => {
        throw (err as NodeJS.ErrnoException).code === "EEXIST" ? err : localError(err, "mkdir", path);
      },
    ),
  readlink: (path: string) =>
    readlink(path).catch((err: unknown) => {
      throw localError(err, "readlink", path);
    }),
  symlink: (target: string, path: string) => symlink(target, path),
  unlink: (path: string) =>
    unlink(path).catch((err: unknown) => {
      throw localError(err, "unlink", path);
    }),
};

function orNullLocal(err: unknown, op: string, path: string): LocalStats | null {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
  throw localError(err, op, path);
}

/** `dir/name` for SFTP paths, which are POSIX-style whatever the server's OS. */
export function remoteJoin(dir: string, name: string): string {
  return dir.endsWith("/") ? `${dir}${name}` : `${dir}/${name}`;
}

/** The last component of an SFTP path, trailing slashes ignored ("" for `/`). */
export function remoteBasename(path: string): string {
  return posix.basename(path.replace(/\/+$/, ""));
}
