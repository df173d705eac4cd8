import { lstatSync, type Stats, unlinkSync } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";

/** The modes a directory the broker depends on may have, exactly. */
const SOCKET_DIR_MODES: readonly number[] = [0o700, 0o750];
const STATE_DIR_MODES: readonly number[] = [0o700];

const octal = (mode: number): string => `0${(mode & 0o7777).toString(8).padStart(3, "0")}`;

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return "a symbolic link";
  if (st.isDirectory()) return "a directory";
  if (st.isFile()) return "a regular file";
  if (st.isSocket()) return "a socket";
  if (st.isFIFO()) return "a FIFO";
  return "a device or special file";
}

/**
 * Why `path` is not a directory the daemon may trust, or null when it is: it
 * must exist, be a directory itself (a symbolic link is not followed, since
 * whoever can replace it could point the broker elsewhere), belong to the
 * daemon's uid and have exactly one of `modes`, so that no other account can
 * create, replace or remove what is in it.
 */
export function directoryProblem(
  role: string,
  path: string,
  uid: number,
  modes: readonly number[],
): string | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    return code === "ENOENT"
      ? `${role} ${path} does not exist; create it owned by uid ${uid} with mode ${modes.map(octal).join(" or ")}`
      : `${role} ${path} cannot be examined (${code})`;
  }
  const facts = `owner uid ${st.uid}, mode ${octal(st.mode)}`;
  if (!st.isDirectory()) return `${role} ${path} is ${kindOf(st)}, not a directory (${facts})`;
  if (st.uid !== uid)
    return `${role} ${path} is owned by uid ${st.uid}, not by the broker's uid ${uid} (${facts})`;
  if (!modes.includes(st.mode & 0o7777)) {
    return `${role} ${path} has mode ${octal(st.mode)}; it must be ${modes.map(octal).join(" or ")} (${facts})`;
  }
  return null;
}

/** Why the socket's directory cannot be used, or null. */
export function socketDirectoryProblem(socketPath: string, uid: number): string | null {
  return directoryProblem("socket directory", dirname(socketPath), uid, SOCKET_DIR_MODES);
}

/** Why the state directory cannot be used, or null. */
export function stateDirectoryProblem(stateDir: string, uid: number): string | null {
  return directoryProblem("state directory", stateDir, uid, STATE_DIR_MODES);
}

/** Whether anything accepts a connection on the socket at `path`. */
function answers(path: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    const done = (value: boolean): void => {
      clearTimeout(timer);
      probe.destroy();
      resolve(value);
    };
    // A listener that accepts but is too busy to do so promptly is still a listener.
    const timer = setTimeout(() => done(true), timeoutMs);
    probe.once("connect", () => done(true));
    probe.once("error", (err: NodeJS.ErrnoException) =>
      done(err.code !== "ECONNREFUSED" && err.code !== "ENOENT"),
    );
  });
}

/**
 * Clear the way for a new socket at `path`, or say why not. Only a socket
 * nobody answers on (left behind by a broker that was killed) is removed;
 * a socket something listens on means another broker is running, and any
 * other kind of file is the operator's and is not touched.
 */
export async function clearStaleSocket(path: string, timeoutMs = 1000): Promise<string | null> {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (st === undefined) return null;
  if (!st.isSocket()) return `${path} is ${kindOf(st)}, not a socket; it is not removed`;
  if (await answers(path, timeoutMs)) return `${path} is in use: another process answers on it`;
  const again = lstatSync(path, { throwIfNoEntry: false });
  if (again === undefined) return null;
  // Replaced between the look and the removal: not the stale socket that was checked.
  if (again.ino !== st.ino || again.dev !== st.dev) return `${path} changed while it was being checked`;
  try {
    unlinkSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "error";
    if (code !== "ENOENT") return `${path} is a stale socket that cannot be removed (${code})`;
  }
  return null;
}
