import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { RelayError } from "../core/index.js";

/** The stable code of the error a file over its bound is refused with. */
export const FILE_TOO_LARGE = "file_too_large";

/** Open a file for reading; null when it does not exist, any other failure thrown as Node reports it. */
export function openIfExists(path: string): number | null {
  try {
    return openSync(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

export interface FileBound {
  /** The largest file accepted, in bytes. */
  maxBytes: number;
  /** What the file is, to name it in the error ("key file", "ssh_config file"); "" for the bare path. */
  what: string;
}

/**
 * Read a whole local file that must stay within a bound: settings, keys,
 * host lists. The one policy for all of them: the size is checked on the
 * open descriptor before anything is read, and a file over its bound is an
 * error naming the file and the bound (never silently cut, never read whole
 * first). Returns null when the file does not exist; any other failure to
 * open or read it is thrown as Node reports it. Short reads are retried; a
 * file that shrinks while it is read ends early, and one that grows is read
 * only up to the size that was checked.
 */
export function readBoundedFile(path: string, bound: FileBound): Buffer | null {
  const fd = openIfExists(path);
  if (fd === null) return null;
  try {
    const size = fstatSync(fd).size;
    if (size > bound.maxBytes) {
      const name = bound.what === "" ? path : `${bound.what} ${path}`;
      throw new RelayError(
        "ValueError",
        `${name} is ${size} bytes, more than the ${bound.maxBytes} accepted`,
        {
          code: FILE_TOO_LARGE,
        },
      );
    }
    const buffer = Buffer.alloc(size);
    let offset = 0;
    while (offset < size) {
      const n = readSync(fd, buffer, offset, size - offset, offset);
      if (n === 0) break;
      offset += n;
    }
    return buffer.subarray(0, offset);
  } finally {
    closeSync(fd);
  }
}
