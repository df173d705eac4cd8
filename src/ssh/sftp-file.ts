import { close, constants, fchmod, futimes, open, read, write } from "node:fs";
import type { SFTPWrapper } from "ssh2";
import { RelayError } from "../core/index.js";
import { printablePath } from "./server-text.js";
import { call, local } from "./sftp-errors.js";
import { pump, type RequestWindow } from "./sftp-window.js";

/**
 * The content of one file, moved by pipelined SFTP requests through the
 * transfer's window (sftp-window.ts): several READs or WRITEs of the file in
 * flight at once, each answered into or sent from a slot's buffer.
 */

/** How one remote file is written. */
export interface RemoteWrite {
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
  /** Refuse a local source that is a symlink (an entry inside a tree; the named source may be one). */
  noFollow: boolean;
}

/** How one local file is written from a remote one: a new file, or an existing one truncated. */
export interface LocalWrite {
  mode: number;
  /** Bytes to read: the size the listing or stat reported and the caller checked, never what fstat says later. */
  size: number;
  atime: number;
  mtime: number;
}

/** Every local file a download writes: never through a link at that name, which makes the open fail. */
const LOCAL_WRITE = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;

/**
 * Local files by descriptor, through Node's callback calls: a tree of small
 * files makes thousands of these calls, and a FileHandle costs an object, an
 * event emitter and a finalizer each on top of the same system calls.
 */
const fd = {
  open: (path: string, flags: number, mode?: number) =>
    new Promise<number>((resolve, reject) =>
      open(path, flags, mode, (err, n) => (err ? reject(err) : resolve(n))),
    ),
  read: (n: number, buffer: Buffer, position: number) =>
    new Promise<number>((resolve, reject) =>
      read(n, buffer, 0, buffer.length, position, (err, got) => (err ? reject(err) : resolve(got))),
    ),
  write: (n: number, buffer: Buffer, offset: number, position: number) =>
    new Promise<number>((resolve, reject) =>
      write(n, buffer, offset, buffer.length - offset, position, (err, put) =>
        err ? reject(err) : resolve(put),
      ),
    ),
  chmod: (n: number, mode: number) =>
    new Promise<void>((resolve, reject) => fchmod(n, mode, (err) => (err ? reject(err) : resolve()))),
  utimes: (n: number, atime: number, mtime: number) =>
    new Promise<void>((resolve, reject) =>
      futimes(n, atime, mtime, (err) => (err ? reject(err) : resolve())),
    ),
  close: (n: number) =>
    new Promise<void>((resolve, reject) => close(n, (err) => (err ? reject(err) : resolve()))),
};

interface Session {
  sftp: SFTPWrapper;
  window: RequestWindow;
}

/** Write `size` bytes of a local file to a remote path; see RemoteWrite. */
export async function putFile(
  { sftp, window }: Session,
  paths: { local: string; remote: string; where: string },
  write: RemoteWrite,
  onBytes: (n: number) => void,
): Promise<void> {
  const { where } = paths;
  const flags = constants.O_RDONLY | (write.noFollow ? constants.O_NOFOLLOW : 0);
  const source = await local("read", paths.local, fd.open(paths.local, flags));
  try {
    const handle = await call<Buffer>("upload", where, (cb) =>
      sftp.open(paths.remote, write.exclusive ? "wx" : "w", { mode: write.mode }, cb),
    );
    let failure: { err: unknown } | null = null;
    try {
      // The mode goes on before the first byte. A new file was created with it (less the server's umask,
      // so never wider): its fchmod rides ahead of the first WRITE. A file that was there keeps its old
      // mode until the fchmod is answered, so that one is awaited first.
      const chmod = write.setAttrs
        ? call<void>("upload", where, (cb) => sftp.fchmod(handle, write.mode, cb))
        : Promise.resolve();
      const chmodDone = chmod.then(
        () => null,
        (err: unknown) => ({ err }),
      );
      if (!write.exclusive) failure = await chmodDone;
      if (failure === null) {
        await pump(write.size, window, async (buffer, position) => {
          const bytesRead = await local("read", paths.local, fd.read(source, buffer, position));
          if (bytesRead < buffer.length) {
            throw new RelayError("OSError", `${printablePath(paths.local)} shrank while it was being copied`);
          }
          await call<void>("upload", where, (cb) =>
            sftp.write(handle, buffer, 0, buffer.length, position, cb),
          );
          onBytes(buffer.length);
        });
      }
      failure ??= await chmodDone;
      if (failure === null && write.setAttrs) {
        // Through the handle: never through whatever the path names by now.
        await call<void>("upload", where, (cb) => sftp.futimes(handle, write.atime, write.mtime, cb));
      }
    } catch (err) {
      failure ??= { err };
    }
    const closed = await call<void>("close", where, (cb) => sftp.close(handle, cb)).then(
      () => null,
      (err: unknown) => ({ err }),
    );
    if (failure !== null) throw failure.err;
    if (closed !== null) throw closed.err;
  } finally {
    await fd.close(source).catch(() => undefined);
  }
}

/**
 * Read exactly `write.size` bytes of a remote file into a local one. The
 * remote file is opened first, so a source that cannot be read leaves the
 * local path untouched. A server that ends the file before the size it
 * reported fails the copy at once (it would otherwise be asked again for the
 * missing bytes without end).
 */
export async function getFile(
  { sftp, window }: Session,
  paths: { remote: string; local: string; where: string },
  write: LocalWrite,
  onBytes: (n: number) => void,
): Promise<void> {
  const { where } = paths;
  // An empty file needs no read at all (and so no answer a server could make any size).
  const handle =
    write.size === 0 ? null : await call<Buffer>("download", where, (cb) => sftp.open(paths.remote, "r", cb));
  try {
    const out = await local("write", paths.local, fd.open(paths.local, LOCAL_WRITE, write.mode));
    await closedAfter(out, paths.local, async () => {
      // Before the first byte, through the handle: an existing file narrower than before is so at once.
      await local("write", paths.local, fd.chmod(out, write.mode));
      if (handle) await readInto(sftp, window, handle, out, paths, write.size, onBytes);
      await local("write", paths.local, fd.utimes(out, write.atime, write.mtime));
    });
  } finally {
    // Every byte asked for has been answered (or the copy failed): a close the server refuses changes nothing.
    if (handle) await call<void>("close", where, (cb) => sftp.close(handle, cb)).catch(() => undefined);
  }
}

/** The READs of one download, each answered into a slot and written out at its offset. */
async function readInto(
  sftp: SFTPWrapper,
  window: RequestWindow,
  handle: Buffer,
  out: number,
  paths: { local: string; where: string },
  size: number,
  onBytes: (n: number) => void,
): Promise<void> {
  let received = 0;
  await pump(size, window, async (buffer, position) => {
    for (let got = 0; got < buffer.length; ) {
      const n = await call<number>("download", paths.where, (cb) =>
        sftp.read(handle, buffer, got, buffer.length - got, position + got, cb),
      );
      // A short answer is asked again for the rest; no byte at all is the end of the file.
      if (!(n > 0)) {
        throw new RelayError(
          "SFTPError",
          `download ${printablePath(paths.where)} failed: the server ended the file after ${received} of the ` +
            `${size} bytes it reported`,
        );
      }
      got += n;
      received += n;
    }
    await writeAll(out, buffer, position, paths.local);
    onBytes(buffer.length);
  });
}

async function writeAll(out: number, buffer: Buffer, position: number, path: string): Promise<void> {
  for (let done = 0; done < buffer.length; ) {
    const bytesWritten = await local("write", path, fd.write(out, buffer, done, position + done));
    done += bytesWritten;
  }
}

/** Run `work` on an open local file, then close it; a failed close is the answer only when the work succeeded. */
async function closedAfter(out: number, path: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    await fd.close(out).catch(() => undefined);
    throw err;
  }
  // A close can be the first to report that written bytes did not reach the disk.
  await local("write", path, fd.close(out));
}
