import type { SFTPWrapper } from "ssh2";

/**
 * What one transfer keeps in flight (ADR 0042). File content moves in SFTP
 * READ and WRITE requests of one size, each holding a buffer from a fixed set
 * of slots shared by every file of the transfer: however large a file or a
 * tree, the bytes in flight are at most REQUEST_SLOTS × the request size, and
 * the buffers are allocated once per transfer and then reused, so a long copy
 * does not feed the garbage collector a buffer per request.
 */

/**
 * Bytes one READ or WRITE asks for, at most: OpenSSH's sftp-server takes
 * 255 KiB (its limits@openssh.com reply says so, and the request is cut to
 * that). Measured on loopback, 64 KiB requests took 1.3 to 1.8 times as long
 * for a 256 MiB file and 32 KiB ones twice as long: the relay is CPU-bound,
 * and every request costs its own packet, callback and local read or write.
 */
export const REQUEST_BYTES = 256 * 1024;

/**
 * Requests in flight for the whole transfer, every file together. Eight of
 * 255 KiB fill the 2 MiB window of an SSH channel (ssh2's and OpenSSH's); the
 * other eight are being written out or read in meanwhile. 8 and 32 measured
 * no better than 16; this many cost 4 MiB of buffers per transfer.
 */
export const REQUEST_SLOTS = 16;

/** Fewest bytes a request may carry when the server says it takes less (a floor against a silly limit). */
const MIN_REQUEST_BYTES = 4096;

/**
 * The request size for this SFTP session: REQUEST_BYTES, or less when the
 * server takes less. ssh2 splits a larger request into several it sends one
 * after another, which would undo the pipelining; it keeps the server's limits
 * in fields of its own (from limits@openssh.com, or 32 KiB for a server it
 * does not know), read here with a fallback to that safe size.
 */
export function requestBytesFor(sftp: SFTPWrapper): number {
  const fields = sftp as unknown as { _maxReadLen?: unknown; _maxWriteLen?: unknown };
  const limits = [fields._maxReadLen, fields._maxWriteLen];
  if (!limits.every((n): n is number => typeof n === "number" && Number.isSafeInteger(n)))
    return 32 * 1024 - 2048;
  return Math.max(MIN_REQUEST_BYTES, Math.min(REQUEST_BYTES, ...limits));
}

/** The slots of one transfer. */
export interface RequestWindow {
  readonly requestBytes: number;
  /** A slot's buffer (requestBytes long), once one is free; it is the caller's until release. */
  acquire(): Promise<Buffer>;
  release(buffer: Buffer): void;
}

export function createRequestWindow(requestBytes: number, slots = REQUEST_SLOTS): RequestWindow {
  const free: Buffer[] = [];
  const waiting: Array<(buffer: Buffer) => void> = [];
  let allocated = 0;
  return {
    requestBytes,
    acquire() {
      const buffer = free.pop();
      if (buffer) return Promise.resolve(buffer);
      if (allocated < slots) {
        allocated++;
        return Promise.resolve(Buffer.allocUnsafe(requestBytes));
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    release(buffer) {
      const next = waiting.shift();
      if (next) next(buffer);
      else free.push(buffer);
    },
  };
}

/**
 * Move `size` bytes as requests of the window's size, as many at once as
 * there are free slots: `move` gets each request's offset and a buffer of its
 * length, and has the slot until it settles. The first failure stops new
 * requests; those under way end before it is thrown, so nothing of this file
 * is still moving when the caller closes it.
 */
export async function pump(
  size: number,
  window: RequestWindow,
  move: (buffer: Buffer, position: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | null = null;
  const lane = async () => {
    while (failure === null && next < size) {
      const slot = await window.acquire();
      try {
        // Another lane may have taken the last request, or failed, while this one waited.
        if (failure !== null || next >= size) return;
        const position = next;
        const length = Math.min(window.requestBytes, size - position);
        next += length;
        await move(slot.subarray(0, length), position);
      } catch (err) {
        failure ??= { err };
      } finally {
        window.release(slot);
      }
    }
  };
  const lanes = Math.min(REQUEST_SLOTS, Math.ceil(size / window.requestBytes));
  await Promise.all(Array.from({ length: lanes }, lane));
  if (failure !== null) throw (failure as { err: unknown }).err;
}
