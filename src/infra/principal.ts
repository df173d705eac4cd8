import type { Socket } from "node:net";
import { peerCredentials, readSupplementaryGroups } from "../proc/index.js";
import type { Principal } from "./types.js";

/** The descriptor under a connected Unix socket (libuv's pipe handle keeps it in `fd`). */
function socketFd(socket: Socket): number | null {
  const handle = (socket as unknown as { _handle?: { fd?: unknown } | null })._handle;
  const fd = handle?.fd;
  return typeof fd === "number" && Number.isInteger(fd) && fd >= 0 ? fd : null;
}

/**
 * Who connected, as the kernel recorded it at connect time (SO_PEERCRED),
 * plus the supplementary groups the peer process has now; read before any
 * byte of the connection is. Null when the kernel would not say. A peer
 * whose groups cannot be read (gone, hidden by hidepid, or no longer the
 * uid it connected as) gets none, so it can only lose access by it.
 */
export function identifyPeer(socket: Socket): Principal | null {
  const fd = socketFd(socket);
  if (fd === null) return null;
  const cred = peerCredentials(fd);
  if (cred === null) return null;
  const groups = readSupplementaryGroups(cred.pid, cred.uid) ?? [];
  return { uid: cred.uid, gid: cred.gid, pid: cred.pid, groups };
}
