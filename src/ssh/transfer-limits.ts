import { RelayError } from "../core/index.js";
import { printablePath } from "./server-text.js";

/** The bounds of one transfer, whatever its timeout (ADR 0015). */
export interface TransferLimits {
  /** File content bytes: for every file, and for all of them together. */
  maxBytes: number;
  /** Directory entries read or written: in one directory, and in the whole tree. */
  maxEntries: number;
}

/** Directory levels below the source of a tree; deeper is refused rather than walked. */
export const MAX_TRANSFER_DEPTH = 128;

/** NAME_MAX of Linux: a longer entry name cannot be created here, so it is skipped and reported. */
export const MAX_NAME_BYTES = 255;

function limitError(message: string): RelayError {
  return new RelayError("TransferLimitError", message, { code: "transfer_limit" });
}

/**
 * Counts what one transfer has taken of its bounds. A check happens before
 * the work it guards (a file is measured before a byte of it is written, an
 * entry is counted as it arrives), so crossing a bound never costs the
 * memory or disk the bound is there to protect.
 */
export interface TransferMeter {
  readonly limits: TransferLimits;
  entries: number;
  /** Bytes promised to files already started (their sizes), not only bytes moved. */
  committedBytes: number;
  /** Count one more entry; throws TransferLimitError past the bound. */
  entry(where: string): void;
  /** Reserve a file's size; throws TransferLimitError when it would not fit. */
  reserve(size: number, where: string): void;
  depth(depth: number, where: string): void;
}

export function createTransferMeter(limits: TransferLimits): TransferMeter {
  return {
    limits,
    entries: 0,
    committedBytes: 0,
    entry(where) {
      this.entries++;
      if (this.entries > limits.maxEntries) {
        throw limitError(
          `more than ${limits.maxEntries} directory entries (RELAY_SHELL_TRANSFER_MAX_ENTRIES) at ${printablePath(where)}; ` +
            "the transfer was stopped",
        );
      }
    },
    reserve(size, where) {
      if (!Number.isSafeInteger(size) || size < 0 || this.committedBytes + size > limits.maxBytes) {
        const sofar = this.committedBytes > 0 ? ` after ${this.committedBytes} bytes of earlier files` : "";
        throw limitError(
          `${printablePath(where)} is ${size} bytes${sofar}, over the ${limits.maxBytes} bytes one transfer may move ` +
            "(RELAY_SHELL_TRANSFER_MAX_BYTES); it was not copied and the transfer was stopped",
        );
      }
      this.committedBytes += size;
    },
    depth(depth, where) {
      if (depth > MAX_TRANSFER_DEPTH) {
        throw limitError(
          `${printablePath(where)} is more than ${MAX_TRANSFER_DEPTH} directories deep; the transfer was stopped`,
        );
      }
    },
  };
}
