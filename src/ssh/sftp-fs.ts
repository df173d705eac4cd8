import type { Stats as LocalStats } from "node:fs";
import { lstat, mkdir, readdir, readlink, stat, symlink, unlink } from "node:fs/promises";
import { posix } from "node:path";
import type { FileEntryWithStats, InputAttributes, SFTPWrapper, Stats } from "ssh2";
import { RelayError } from "../core/index.js";

/** SFTP status codes (draft-ietf-secsh-filexfer-02 §7) that change what we tell the caller. */
const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;

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
  readdir(path: string): Promise<FileEntryWithStats[]>;
  mkdir(path: string, mode: number): Promise<void>;
  setstat(path: string, attrs: InputAttributes): Promise<void>;
  readlink(path: string): Promise<string>;
  symlink(target: string, path: string): Promise<void>;
  unlink(path: string): Promise<void>;
  put(local: string, remote: string, mode: number, onBytes: (n: number) => void): Promise<void>;
  get(remote: string, local: string, mode: number, onBytes: (n: number) => void): Promise<void>;
}

export function remoteError(err: unknown, op: string, where: string): RelayError {
  if (err instanceof RelayError) return err;
  const e = err as { code?: unknown; message?: unknown } | undefined;
  const message = typeof e?.message === "string" ? e.message : String(err);
  if (e?.code === NO_SUCH_FILE) {
    // Creating a file fails this way only when a directory on its path is missing.
    const what = op === "upload" ? `no such directory for ${where}` : `no such file: ${where}`;
    return new RelayError("FileNotFoundError", what, { cause: err });
  }
  if (e?.code === PERMISSION_DENIED) {
    return new RelayError("PermissionError", `permission denied: ${where} (${op})`, { cause: err });
  }
  if (/no response from server|not connected|channel/i.test(message)) {
    return new RelayError("ConnectionError", `the SFTP channel closed during ${op} of ${where}`, {
      cause: err,
    });
  }
  return new RelayError("SFTPError", `${op} ${where} failed: ${message}`, { cause: err });
}

export function localError(err: unknown, op: string, path: string): RelayError {
  if (err instanceof RelayError) return err;
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case "ENOENT":
      return new RelayError(
        "FileNotFoundError",
        op === "write" ? `no such local directory for ${path}` : `no such local file: ${path}`,
        { cause: err },
      );
    case "EACCES":
    case "EPERM":
      return new RelayError("PermissionError", `permission denied: ${path} (${op})`, { cause: err });
    case "ENOTDIR":
      return new RelayError("NotADirectoryError", `not a directory on the way to ${path}`, { cause: err });
    case "EISDIR":
      return new RelayError("IsADirectoryError", `is a directory: ${path}`, { cause: err });
    default:
      return new RelayError("OSError", `${op} ${path} failed: ${e?.message ?? String(err)}`, { cause: err });
  }
}

function call<T>(
  op: string,
  where: string,
  run: (cb: (err: Error | undefined | null, value?: T) => void) => void,
) {
  return new Promise<T>((resolve, reject) => {
    try {
      run((err, value) => (err ? reject(remoteError(err, op, where)) : resolve(value as T)));
    } catch (err) {
      // ssh2 throws synchronously when the channel is already gone.
      reject(remoteError(err, op, where));
    }
  });
}

/**
 * One fastPut/fastGet. They report local and remote failures through the same
 * callback: a Node errno (a string code) is the local side, anything else the
 * server's.
 */
function copy(
  op: string,
  local: string,
  where: string,
  localOp: string,
  onBytes: (n: number) => void,
  run: (opts: { step: (total: number) => void }, cb: (err: Error | undefined | null) => void) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const step = (total: number) => {
      onBytes(total - seen);
      seen = total;
    };
    try {
      run({ step }, (err) => {
        if (!err) resolve();
        else if (typeof (err as NodeJS.ErrnoException).code === "string")
          reject(localError(err, localOp, local));
        else reject(remoteError(err, op, where));
      });
    } catch (err) {
      reject(remoteError(err, op, where));
    }
  });
}

export function createRemoteFs(sftp: SFTPWrapper, host: string): RemoteFs {
  const at = (path: string) => `${host}:${path}`;
  const orNull = (err: unknown): null => {
    if (err instanceof RelayError && err.type === "FileNotFoundError") return null;
    throw err;
  };
  return {
    stat: (path) => call<Stats>("stat", at(path), (cb) => sftp.stat(path, cb)).catch(orNull),
    lstat: (path) => call<Stats>("lstat", at(path), (cb) => sftp.lstat(path, cb)).catch(orNull),
    readdir: (path) => call<FileEntryWithStats[]>("readdir", at(path), (cb) => sftp.readdir(path, cb)),
    mkdir: (path, mode) => call<void>("mkdir", at(path), (cb) => sftp.mkdir(path, { mode }, cb)),
    setstat: (path, attrs) => call<void>("setstat", at(path), (cb) => sftp.setstat(path, attrs, cb)),
    readlink: (path) => call<string>("readlink", at(path), (cb) => sftp.readlink(path, cb)),
    symlink: (target, path) => call<void>("symlink", at(path), (cb) => sftp.symlink(target, path, cb)),
    unlink: (path) => call<void>("unlink", at(path), (cb) => sftp.unlink(path, cb)),
    put: (local, remote, mode, onBytes) =>
      copy("upload", local, at(remote), "read", onBytes, (opts, cb) =>
        sftp.fastPut(local, remote, { ...opts, mode }, cb),
      ),
    get: (remote, local, mode, onBytes) =>
      copy("download", local, at(remote), "write", onBytes, (opts, cb) =>
        sftp.fastGet(remote, local, { ...opts, mode }, cb),
      ),
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
