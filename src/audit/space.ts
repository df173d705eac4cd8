import { ftruncateSync, statfsSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { constants as osConstants } from "node:os";
import { fail, ok, type Result } from "../core/index.js";

/** What an allocation attempt came to: done, or the errno name (`ENOSPC`, …) and its text. */
export type AllocateOutcome = Result<void, { code: string; message: string }>;

/**
 * The system calls the audit writer makes on its file, as a seam: production
 * uses the real ones; the writer's tests wrap them to inject a short write or
 * ENOSPC at a chosen point, which a real disk cannot be made to do on cue.
 */
export interface AuditFileIo {
  write(fd: number, bytes: Buffer, offset: number, length: number): number;
  truncate(fd: number, length: number): void;
  /**
   * Allocate blocks for `[offset, offset + length)` without changing the
   * file's size (fallocate with FALLOC_FL_KEEP_SIZE), so later writes into
   * that range cannot fail for space.
   */
  allocate(fd: number, offset: number, length: number): AllocateOutcome;
  /** Bytes an unprivileged writer may still use on the file system holding `dir`. */
  freeBytes(dir: string): number;
}

/** Codes that mean "this system or file system cannot reserve", not "no room". */
export const UNSUPPORTED_CODES: ReadonlySet<string> = new Set([
  "EOPNOTSUPP",
  "ENOTSUP",
  "ENOSYS",
  "ENODEV",
  "UNSUPPORTED",
]);

/** Codes that mean the file system has no room (or the user's quota is used up). */
export const NO_SPACE_CODES: ReadonlySet<string> = new Set(["ENOSPC", "EDQUOT"]);

const FALLOC_FL_KEEP_SIZE = 1;
const EINTR = osConstants.errno.EINTR;
const ERRNO_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(osConstants.errno).map(([name, value]) => [value, name]),
);

interface LibcFallocate {
  fallocate(fd: number, mode: number, offset: number, length: number): number;
  errno(): number;
}

interface KoffiModule {
  load(path: string): { func(definition: string): (...args: number[]) => number };
  errno(): number;
}

/**
 * libc's fallocate through koffi, loaded on first use: the FFI costs some
 * 20 ms to load, which start-up should not pay for a call that comes later.
 * null when it cannot be loaded (no glibc, no prebuilt koffi for this
 * platform); the writer then falls back to checking free space.
 */
function loadFallocate(): LibcFallocate | null {
  try {
    const koffi = createRequire(import.meta.url)("koffi") as KoffiModule;
    const libc = koffi.load("libc.so.6");
    // fallocate64 takes a 64-bit off_t on every ABI; on 64-bit ones it is the same symbol.
    const call = libc.func("int fallocate64(int fd, int mode, int64_t offset, int64_t len)");
    return { fallocate: (fd, mode, offset, length) => call(fd, mode, offset, length), errno: koffi.errno };
  } catch {
    return null;
  }
}

/** The real system calls. The FFI binding is held by the returned object, not by the module. */
export function createAuditFileIo(): AuditFileIo {
  let libc: LibcFallocate | null | undefined;
  return {
    write: (fd, bytes, offset, length) => writeSync(fd, bytes, offset, length),
    truncate: (fd, length) => ftruncateSync(fd, length),
    allocate(fd, offset, length) {
      if (libc === undefined) libc = loadFallocate();
      if (libc === null) {
        return fail({ code: "UNSUPPORTED", message: "fallocate is not available on this system" });
      }
      for (;;) {
        if (libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, offset, length) === 0) return ok(undefined);
        const errno = libc.errno();
        if (errno === EINTR) continue;
        const code = ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
        return fail({ code, message: `fallocate: ${code} (${describeErrno(code)})` });
      }
    },
    freeBytes(dir) {
      const st = statfsSync(dir);
      return st.bavail * st.bsize;
    },
  };
}

function describeErrno(code: string): string {
  switch (code) {
    case "ENOSPC":
      return "no space left on device";
    case "EDQUOT":
      return "disk quota exceeded";
    case "EFBIG":
      return "file too large";
    case "EIO":
      return "input/output error";
    case "EOPNOTSUPP":
    case "ENOTSUP":
      return "not supported by the file system";
    default:
      return "system error";
  }
}
