import { createRequire } from "node:module";

/**
 * The two libc calls Node does not offer: prctl(PR_SET_CHILD_SUBREAPER) and a
 * waitpid on one given pid. Loaded through koffi on first use only, so
 * processes that never adopt orphans never map it.
 */
interface Libc {
  prctl(option: number, arg2: number, arg3: number, arg4: number, arg5: number): number;
  waitpid(pid: number, status: number[], options: number): number;
}

const PR_SET_CHILD_SUBREAPER = 36;
const WNOHANG = 1;
const ECHILD = 10;
const EINTR = 4;

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
    readErrno = () => koffi.errno();
    bound = { prctl, waitpid };
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
