/**
 * Path predicates shared by the rules and the redirect checks. A path may
 * hold DYNAMIC markers for unknown stretches; only its literal prefix counts.
 */

/** Collapse `//`, `/./` and `dir/../` so `/usr/../etc//passwd` is seen as `/etc/passwd`. */
export function normalizePath(path: string): string {
  if (!path.startsWith("/")) return path;
  const out: string[] = [];
  for (const seg of path.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  const joined = `/${out.join("/")}`;
  return path.endsWith("/") && joined !== "/" ? `${joined}/` : joined;
}

const DEVICE_NAME =
  /^\/dev\/(?:[sh]d[a-z]|x?vd[a-z]|nvme\d|mmcblk\d|dm-\d|md\d|md\/|loop\d|sr\d|zd\d|rbd\d|nbd\d|ram\d|disk\/|mapper\/|mem$|kmem$|port$)/;

/** Device nodes whose writes are harmless or not storage. */
const SAFE_DEVICE =
  /^\/dev\/(?:null|zero|full|u?random|stdout|stderr|stdin|tty\w*|console|log|kmsg|pts\/|fd\/|shm\/|tcp\/|udp\/|mqueue\/|hugepages\/)/;

/** A block device (or raw memory) node: writing to it destroys what it holds. */
export function isBlockDevice(path: string): boolean {
  const p = normalizePath(path);
  if (!p.startsWith("/dev/")) return false;
  if (DEVICE_NAME.test(p)) return true;
  // `/dev/<volume-group>/<volume>` is how LVM names logical volumes.
  return /^\/dev\/[^/\0]+\/[^/]/.test(p) && !SAFE_DEVICE.test(p);
}

/** A device node that is neither a known safe sink nor clearly a character device. */
export function isUnsafeDevice(path: string): boolean {
  const p = normalizePath(path);
  return p.startsWith("/dev/") && !SAFE_DEVICE.test(p);
}

const CRITICAL = /^\/(?:etc|boot|usr|bin|sbin|lib|lib32|lib64|libx32)(?:\/|$)/;

/** `/`, or anything under the directories the system needs to boot and run. */
export function isCriticalPath(path: string): boolean {
  const p = normalizePath(path);
  return p === "/" || p === "/*" || CRITICAL.test(p);
}

/** Under a system directory that holds configuration or programs (a wider set, for Tier-2 edits). */
export function isSystemPath(path: string): boolean {
  const p = normalizePath(path);
  return isCriticalPath(p) || /^\/(?:opt|srv|var\/lib|sys|proc)(?:\/|$)/.test(p);
}

export function isEtcPath(path: string): boolean {
  return /^\/etc(?:\/|$)/.test(normalizePath(path));
}

const AUTH =
  /^\/etc\/(?:sudoers(?:\.d)?|shadow|gshadow|passwd|group|pam\.d|pam\.conf|security\/|ssh\/sshd_config|doas\.conf|login\.defs)/;

/** Files that decide who may log in or become root. */
export function isAuthPath(path: string): boolean {
  const p = normalizePath(path);
  return AUTH.test(p) || /(?:^|\/)authorized_keys2?$/.test(p) || /^\/root\/\.ssh(?:\/|$)/.test(p);
}

/** `/` or a top-level system tree (with an optional trailing `/` or `/*`): a recursive change there breaks the host. */
export function isTopLevelTree(path: string): boolean {
  const p = normalizePath(path).replace(/\/\*?$/, "");
  return p === "" || /^\/(?:etc|usr|bin|sbin|lib|lib32|lib64|libx32|boot|var|home|root|opt|srv)$/.test(p);
}
