import { createRequire } from "node:module";
import { fail, ok, type Result } from "../core/index.js";

/**
 * The libc calls Node does not offer: prctl(PR_SET_CHILD_SUBREAPER), a
 * waitpid on one given pid, getsockopt(SO_PEERCRED), lgetxattr and the
 * inode-flags ioctl (FS_IOC_GETFLAGS). Loaded
 * through koffi on first use only, so processes that never need them never map it.
 */
interface Libc {
  prctl(option: number, arg2: number, arg3: number, arg4: number, arg5: number): number;
  waitpid(pid: number, status: number[], options: number): number;
  getsockopt(fd: number, level: number, name: number, value: Ucred, length: number[]): number;
  lgetxattr(path: string, name: string, value: Buffer, size: number): number;
  ioctl(fd: number, request: number, flags: number[]): number;
}

interface Ucred {
  pid?: number;
  uid?: number;
  gid?: number;
}

/** The peer of a connected Unix-domain socket, as the kernel recorded it at connect time. */
export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;
const ECHILD = 10;
const EINTR = 4;
const SOL_SOCKET = 1;
const SO_PEERCRED = 17;
/** _IOR('f', 1, long) on the 64-bit Linux ABIs; the kernel reads and writes an int through it. */
const FS_IOC_GETFLAGS = 0x80086601;
/** The append-only inode flag (`chattr +a`): writes only at the end, no truncation, rename or unlink. */
const FS_APPEND_FL = 0x20;
/** sizeof(struct ucred): three 32-bit fields. */
const UCRED_SIZE = 12;

let bound: Libc | null | undefined;
let readErrno: () => number = () => 0;

function libc(): Libc | null {
  if (bound !== undefined) return bound;
  bound = null;
  if (process.platform !== "linux") return bound;
  try {
    const koffi = createRequire(import.meta.url)("koffi") as typeof import("koffi");
    const lib = koffi.load("libc.so.6");
    // prctl is variadic in C; on the Linux ABIs the extra arguments travel in registers, so
    // declaring all five as plain integers is what every caller of the raw call does.
    const prctl = lib.func(
      "int prctl(int option, unsigned long arg2, unsigned long arg3, unsigned long arg4, unsigned long arg5)",
    );
    const waitpid = lib.func("int waitpid(int pid, _Out_ int *status, int options)");
    const ucred = koffi.struct("relay_ucred", { pid: "int32", uid: "uint32", gid: "uint32" });
    const getsockopt = lib.func("getsockopt", "int", [
      "int",
      "int",
      "int",
      koffi.out(koffi.pointer(ucred)),
      koffi.inout(koffi.pointer("uint32_t")),
    ]);
    const lgetxattr = lib.func(
      "long lgetxattr(const char *path, const char *name, _Out_ uint8_t *value, size_t size)",
    );
    const ioctl = lib.func("int ioctl(int fd, unsigned long request, _Out_ int *flags)");
    readErrno = () => koffi.errno();
    bound = { prctl, waitpid, getsockopt, lgetxattr, ioctl };
  } catch {
    // No koffi build for this platform, or no glibc: orphans then go to init as before.
  }
  return bound;
}

/**
 * Make this process the reaper of every orphan among its descendants: a process
 * whose parent dies is reparented here instead of to init, however it detached
 * (setsid, double fork, nohup). False when the call is not available.
 */
export function becomeChildSubreaper(): boolean {
  const lib = libc();
  return lib !== null && lib.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) === 0;
}

/**
 * Collect the exit status of one child that is known to be ours and not one
 * libuv or another library waits for. Never blocks and never waits for "any
 * child", which would steal an exit status libuv is waiting to report.
 * "gone": it is not (or no longer) our child.
 */
export function reapChild(pid: number): "reaped" | "running" | "gone" {
  const lib = libc();
  if (lib === null || !Number.isInteger(pid) || pid <= 1) return "gone";
  for (;;) {
    const result = lib.waitpid(pid, [0], WNOHANG);
    if (result > 0) return "reaped";
    if (result === 0) return "running";
    const errno = readErrno();
    if (errno === EINTR) continue;
    return errno === ECHILD ? "gone" : "running";
  }
}

/** What waitChild found: still running, not (or no longer) ours, or ended with a code or a signal. */
type ChildWait =
  | { kind: "running" }
  | { kind: "gone" }
  | { kind: "exited"; code: number | null; signal: number | null };

/**
 * Collect the exit status of one child started outside libuv (exec/native-spawn.ts),
 * by its own pid and without blocking. Like reapChild, it never waits for "any child".
 */
export function waitChild(pid: number): ChildWait {
  const lib = libc();
  if (lib === null || !Number.isInteger(pid) || pid <= 1) return { kind: "gone" };
  for (;;) {
    const status = [0];
    const result = lib.waitpid(pid, status, WNOHANG);
    if (result > 0) {
      const raw = status[0] ?? 0;
      const low = raw & 0x7f;
      // WIFEXITED: the low seven bits are zero and the code is in the next byte; otherwise WTERMSIG.
      return low === 0
        ? { kind: "exited", code: (raw >> 8) & 0xff, signal: null }
        : { kind: "exited", code: null, signal: low };
    }
    if (result === 0) return { kind: "running" };
    const errno = readErrno();
    if (errno === EINTR) continue;
    return errno === ECHILD ? { kind: "gone" } : { kind: "running" };
  }
}

/**
 * Who is on the other end of a connected Unix-domain socket: the pid, uid and
 * gid the kernel recorded when the peer called connect(), which the peer
 * cannot choose or change afterwards. Null when the call is not available or
 * fails (a descriptor that is not a Unix socket, one already closed).
 */
export function peerCredentials(fd: number): PeerCredentials | null {
  const lib = libc();
  if (lib === null || !Number.isInteger(fd) || fd < 0) return null;
  const value: Ucred = {};
  const length = [UCRED_SIZE];
  if (lib.getsockopt(fd, SOL_SOCKET, SO_PEERCRED, value, length) !== 0) return null;
  const { pid, uid, gid } = value;
  if (length[0] !== UCRED_SIZE || !isId(pid) || !isId(uid) || !isId(gid)) return null;
  return { pid, uid, gid };
}

function isId(value: number | undefined): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value < 2 ** 32;
}

/**
 * Read the extended attribute `name` of `path` (lgetxattr(2)), not following a link, into at
 * most `maxBytes`: its bytes, or the errno when there is none; null when the call is not
 * available here.
 */
export function readXattr(path: string, name: string, maxBytes: number): Result<Buffer, number> | null {
  const lib = libc();
  if (lib === null) return null;
  const value = Buffer.alloc(maxBytes);
  const size = lib.lgetxattr(path, name, value, value.length);
  return size < 0 ? fail(readErrno()) : ok(value.subarray(0, size));
}

/**
 * Whether the file open on `fd` carries the append-only inode flag (`chattr +a`), which only a
 * process with CAP_LINUX_IMMUTABLE can set or clear. An errno when the file system cannot say
 * (ENOTTY: it keeps no such flags); null when the call is not available here.
 */
export function isAppendOnly(fd: number): Result<boolean, number> | null {
  const lib = libc();
  if (lib === null || !Number.isInteger(fd) || fd < 0) return null;
  const flags = [0];
  if (lib.ioctl(fd, FS_IOC_GETFLAGS, flags) !== 0) return fail(readErrno());
  return ok(((flags[0] ?? 0) & FS_APPEND_FL) !== 0);
}
