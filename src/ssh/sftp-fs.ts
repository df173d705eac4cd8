import type { Stats as LocalStats } from "node:fs";
import { lstat, mkdir, open, readdir, readlink, stat, symlink, unlink } from "node:fs/promises";
import { posix } from "node:path";
import type { FileEntryWithStats, InputAttributes, SFTPWrapper, Stats } from "ssh2";
import { RelayError } from "../core/index.js";
import { cleanServerMessage, printablePath } from "./server-text.js";

/** SFTP status codes (draft-ietf-secsh-filexfer-02 §7) that change what we tell the caller. */
const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;
const EOF_STATUS = 1;

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
  get(remote: string, local: string, mode: number, size: number, onBytes: (n: number) => void): Promise<void>;
}

/** How one remote file is written. */
interface RemoteWrite {
  /**
   * true: the path must not exist (O_CREAT|O_EXCL), so the open fails rather
   * than follow a link that appeared there; false: an existing file the
   * caller found with lstat is truncated and rewritten in place.
   */
  exclusive: boolean;
  mode: number;
  /** Bytes to copy: the size the caller checked against its bounds. */
  size: number;
  /** Seconds; applied through the open handle, so never through a link. */
  atime: number;
  mtime: number;
  /**
   * false for a destination that is not a regular file (`/dev/null`, a FIFO):
   * its bytes are written, its mode and times are not the copy's to change.
   */
  setAttrs: boolean;
}

/** Local bytes in flight per upload: WRITE_WINDOW requests of WRITE_CHUNK bytes. */
const WRITE_CHUNK = 65536;
const WRITE_WINDOW = 32;

function remoteError(err: unknown, op: string, rawWhere: string): RelayError {
  if (err instanceof RelayError) return err;
  const e = err as { code?: unknown; message?: unknown } | undefined;
  // The server writes the message and may have named the path: neither reaches the caller raw.
  const message = cleanServerMessage(typeof e?.message === "string" ? e.message : String(err));
  const where = printablePath(rawWhere);
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

export function localError(err: unknown, op: string, rawPath: string): RelayError {
  if (err instanceof RelayError) return err;
  const e = err as NodeJS.ErrnoException;
  // On a download the path holds names the server chose.
  const path = printablePath(rawPath);
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
      return new RelayError("OSError", `${op} ${path} failed: ${printablePath(e?.message ?? String(err))}`, {
        cause: err,
      });
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

/** Reads answered with no byte before a download gives up on a file shorter than its size. */
const MAX_EMPTY_READS = 64;

/**
 * One fastGet. It reports local and remote failures through the same
 * callback: a Node errno (a string code) is the local side, anything else the
 * server's. A server that reported `size` bytes and then ends the file early
 * would keep fastGet asking for the missing bytes without end; `stop` (which
 * closes the channel) ends that instead, and the copy fails at once.
 */
function download(
  local: string,
  where: string,
  size: number,
  onBytes: (n: number) => void,
  stop: () => void,
  run: (
    opts: { step: (total: number, nb: number) => void },
    cb: (err: Error | undefined | null) => void,
  ) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    let empty = 0;
    let failure: RelayError | null = null;
    const step = (total: number, nb: number) => {
      onBytes(total - seen);
      seen = total;
      if (nb > 0 || failure !== null || ++empty < MAX_EMPTY_READS) return;
      failure = new RelayError(
        "SFTPError",
        `download ${printablePath(where)} failed: the server ended the file after ${total} of the ${size} bytes it reported`,
      );
      // Answer now: fastGet's own callback waits for the channel to close, which this server may never do.
      reject(failure);
      stop();
    };
    try {
      run({ step }, (err) => {
        if (failure) return;
        if (!err) resolve();
        else if (typeof (err as NodeJS.ErrnoException).code === "string")
          reject(localError(err, "write", local));
        else reject(remoteError(err, "download", where));
      });
    } catch (err) {
      reject(remoteError(err, "download", where));
    }
  });
}

export function createRemoteFs(sftp: SFTPWrapper, host: string): RemoteFs {
  const at = (path: string) => `${host}:${path}`;
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

  async function put(local: string, remote: string, write: RemoteWrite, onBytes: (n: number) => void) {
    const where = at(remote);
    let source: Awaited<ReturnType<typeof open>>;
    try {
      source = await open(local, "r");
    } catch (err) {
      throw localError(err, "read", local);
    }
    try {
      const handle = await call<Buffer>("upload", where, (cb) =>
        sftp.open(remote, write.exclusive ? "wx" : "w", { mode: write.mode }, cb),
      );
      let failure: unknown = null;
      try {
        // The mode goes on before the first byte (an existing file keeps its old mode until here).
        if (write.setAttrs) await call<void>("upload", where, (cb) => sftp.fchmod(handle, write.mode, cb));
        let next = 0;
        const worker = async () => {
          while (failure === null && next < write.size) {
            const position = next;
            const length = Math.min(WRITE_CHUNK, write.size - position);
            next += length;
            const buffer = Buffer.allocUnsafe(length);
            const { bytesRead } = await source.read(buffer, 0, length, position).catch((err: unknown) => {
              throw localError(err, "read", local);
            });
            if (bytesRead < length) {
              throw new RelayError("OSError", `${printablePath(local)} shrank while it was being copied`);
            }
            await call<void>("upload", where, (cb) => sftp.write(handle, buffer, 0, length, position, cb));
            onBytes(length);
          }
        };
        const workers = Math.min(WRITE_WINDOW, Math.ceil(write.size / WRITE_CHUNK));
        // Every worker ends before the handle is closed; the first failure is the answer.
        await Promise.all(
          Array.from({ length: workers }, () =>
            worker().catch((err: unknown) => {
              failure ??= err;
            }),
          ),
        );
        if (failure === null && write.setAttrs) {
          // Through the handle: never through whatever the path names by now.
          await call<void>("upload", where, (cb) => sftp.futimes(handle, write.atime, write.mtime, cb));
        }
      } catch (err) {
        failure ??= err;
      }
      const closed = await close(handle, where).then(
        () => null,
        (err: unknown) => err,
      );
      if (failure !== null) throw failure;
      if (closed !== null) throw closed;
    } finally {
      await source.close().catch(() => undefined);
    }
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
    put,
    get: (remote, local, mode, size, onBytes) =>
      download(
        local,
        at(remote),
        size,
        onBytes,
        () => sftp.end(),
        (opts, cb) =>
          // fileSize: fastGet would otherwise ask fstat, whose answer a server can inflate after stat.
          sftp.fastGet(remote, local, { ...opts, mode, fileSize: size }, cb),
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
