import { RelayError } from "../core/index.js";
import { cleanServerMessage, printablePath } from "./server-text.js";

/** SFTP status codes (draft-ietf-secsh-filexfer-02 §7) that change what we tell the caller. */
const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;
export const EOF_STATUS = 1;

/** A failed SFTP request as a RelayError that names the host and path (`where` reads `<host>:<path>`). */
export function remoteError(err: unknown, op: string, rawWhere: string): RelayError {
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

/** A failed local file operation as a RelayError that names the path. */
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

/** One ssh2 SFTP call as a promise; its failure (also a synchronous throw) as remoteError. */
export function call<T>(
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

/** A local file operation as a promise whose failure is localError. */
export function local<T>(op: string, path: string, work: Promise<T>): Promise<T> {
  return work.catch((err: unknown) => {
    throw localError(err, op, path);
  });
}
