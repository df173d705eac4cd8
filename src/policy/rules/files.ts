import { type Args, type Hit, hit, type RuleInput, table } from "./args.js";
import {
  isAuthPath,
  isBlockDevice,
  isCriticalPath,
  isEtcPath,
  isSystemPath,
  isTopLevelTree,
  normalizePath,
} from "./paths.js";
import { emptiedTier, isDatabasePath, isLoginGate } from "./targets.js";

/**
 * File destruction (Tier 3) and the Tier-2 file-system families: config
 * edits, permission and ownership, links, moves of system paths.
 */

/**
 * Removing named entries is one family, whatever the spelling: `rm` without
 * recursion or force (`-i`, `-d` and `-v` included), `unlink`, `rmdir`, and
 * the same calls in Python. The tier follows what is removed, never which
 * program removes it: Tier 1 for an entry of no system importance (a temporary
 * file, an empty directory in a home), as the Python relay-shell's conformance
 * rows and operators' own judgement have it; Tier 2 for a service's files under
 * /etc; Tier 3 for /etc's own files (hosts, fstab), the system's programs and libraries, /var/lib, a
 * database's files, a top-level tree, a file that decides who logs in
 * (account_access) and a block device (storage_destruction). Deleting trees or
 * many entries at once is Tier 3 (`rm -r`, `rm -f`, `find -delete`, `xargs
 * rm`). A command that names nothing removes nothing.
 */
function removal(targets: readonly string[]): Hit | null {
  if (targets.length === 0) return null;
  // /etc's own files (hosts, fstab, resolv.conf) are the host's; a service's files below them are its own.
  const hostFile = (t: string) => isAuthPath(t) || /^\/etc\/[^/]+$/.test(normalizePath(t));
  const system = (t: string) => isCriticalPath(t) && (!isEtcPath(t) || hostFile(t));
  if (targets.some((t) => isTopLevelTree(t) || system(t))) return hit(3, "file_destruction");
  if (targets.some((t) => isAuthPath(t))) return hit(3, "account_access");
  if (targets.some((t) => isBlockDevice(t))) return hit(3, "storage_destruction");
  if (targets.some((t) => !isEtcPath(t) && emptiedTier(t) === 3)) return hit(3, "file_destruction");
  if (targets.some((t) => isEtcPath(t))) return hit(2, "file_destruction");
  return hit(1, "file_destruction");
}

/**
 * rm: a recursive or forced removal is Tier 3 whatever the spelling: any short
 * cluster holding r, R or f (`-vr`, `-Rf`, `-fv`; upper-case F too, since the
 * name itself matches case-insensitively), or a GNU long option or its
 * abbreviation (`--rec`, `--force`, `--no-preserve-root`). GNU rm takes options
 * anywhere before `--`. Any other form removes the entries it names. An
 * argument only known at run time may carry `-rf`, so it gives Tier 2.
 */
function rm({ args }: RuleInput): Hit | null {
  if (args.clusters().some((c) => /[rRfF]/.test(c))) return hit(3, "file_destruction");
  if (args.long("recursive", 1) || args.long("force", 1) || args.long("no-preserve-root", 2)) {
    return hit(3, "file_destruction");
  }
  const removed = removal(args.operands());
  if (args.dynamicOption() && (removed === null || removed.tier < 2)) return hit(2, "file_destruction");
  return removed;
}

/** unlink and rmdir remove what they name, one entry at a time: the same family as `rm`. */
function removeNamed({ args }: RuleInput): Hit | null {
  return removal(args.operands());
}

/**
 * truncate: shrinking a file discards its tail. Tier 3 on system files,
 * Tier 2 elsewhere (the file is still there, its content is not); growing
 * (`-s +N`) is harmless. `TRUNCATE TABLE x` typed as shell text is SQL.
 */
function truncate({ args }: RuleInput): Hit | null {
  if (args.lower(0) === "table") return hit(3, "data_store_destruction");
  const size = args.optionValue("-s", "--size");
  if (size === undefined && !args.short("r") && !args.long("reference")) return null;
  if (size?.startsWith("+")) return null;
  return args.operands().some((t) => isSystemPath(t) || isAuthPath(t) || isDatabasePath(t))
    ? hit(3, "file_destruction")
    : hit(2, "file_destruction");
}

/** rsync --delete (and --del, --delete-after, ...) removes destination files that are not in the source. */
function rsync({ args }: RuleInput): Hit | null {
  const longs = args.longs();
  if (longs.some((l) => l === "del" || l.startsWith("delete"))) return hit(3, "file_destruction");
  if (longs.includes("remove-source-files")) return hit(2, "file_destruction");
  return writesSystem(args);
}

function writesSystem(args: Args): Hit | null {
  return writesPaths(args.operands());
}

/** What writing (or removing) these paths does: devices, login gates, account files, /etc, system trees. */
export function writesPaths(targets: readonly string[]): Hit | null {
  if (targets.some((t) => isBlockDevice(t))) return hit(3, "storage_destruction");
  if (targets.some((t) => isLoginGate(t))) return hit(3, "account_access");
  if (targets.some((t) => isAuthPath(t))) return hit(2, "account_access");
  if (targets.some((t) => isEtcPath(t))) return hit(2, "config_change");
  if (targets.some((t) => isSystemPath(t))) return hit(2, "filesystem_change");
  return null;
}

/** The destination of cp, mv or install: `-t DIR` / `--target-directory=DIR`, else the last operand. */
function destination(args: Args): { dest: string | undefined; sources: string[] } {
  const ops: string[] = [];
  let dest: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (i < args.optionEnd && (v === "-t" || v === "--target-directory")) dest = args.values[++i];
    else if (i < args.optionEnd && v.startsWith("--target-directory=")) dest = v.slice(19);
    else if (i < args.optionEnd && /^-t./.test(v)) dest = v.slice(2);
    else if (i !== args.optionEnd && !(i < args.optionEnd && v.startsWith("-") && v.length > 1)) ops.push(v);
  }
  if (dest !== undefined) return { dest, sources: ops };
  return { dest: ops.length >= 2 ? ops[ops.length - 1] : undefined, sources: ops.slice(0, -1) };
}

/** Directories every local user can write: a copy of system configuration there can be read or swapped. */
const SHARED_TMP = /^\/(?:tmp|var\/tmp|dev\/shm)(?:\/|$)/;

/**
 * cp and install write only their destination: a config copied out of /etc
 * into a home directory changes nothing (`cp /etc/nginx/nginx.conf ~/`).
 * Copied into a directory every local user can write, the copy is theirs to
 * read or replace, so the sources count there as before (docs/wire-contract.md
 * §5.7 keeps `cp -a /etc/x /tmp` at config_change). `cp /dev/null f` empties f.
 */
function cp({ args }: RuleInput): Hit | null {
  const { dest, sources } = destination(args);
  if (dest === undefined) return null;
  const d = normalizePath(dest);
  if (sources.length > 0 && sources.every((s) => s === "/dev/null") && !d.startsWith("/dev/"))
    return hit(emptiedTier(d), "file_destruction");
  const written = writesPaths([d]);
  if (written !== null || !SHARED_TMP.test(d)) return written;
  const copied = writesPaths(sources.filter((s) => !isBlockDevice(s)));
  // The copy changes no login gate: at most the Tier-2 account family, as for any account file.
  return copied?.basis === "account_access" ? hit(2, "account_access") : copied;
}

/** mv onto /dev/null destroys the source (and, as root, replaces the device node); the sources leave their place. */
function mv({ args }: RuleInput): Hit | null {
  const targets = args.operands();
  if (targets.length >= 2 && targets[targets.length - 1] === "/dev/null") return hit(3, "file_destruction");
  return writesSystem(args);
}

/** ln -s is Tier 2 (docs/wire-contract.md §5.7 row 68): a symlink silently redirects what reads the path. */
function ln({ args }: RuleInput): Hit | null {
  if (args.short("s") || args.long("symbolic", 2)) return hit(2, "filesystem_change");
  return writesSystem(args);
}

/** Recursive permission changes over a whole system tree cannot be undone (the old modes are gone). */
function permission(recursiveLetter: string) {
  return ({ name, args }: RuleInput): Hit | null => {
    const recursive = args.short(recursiveLetter) || args.long("recursive", 3);
    const targets = args.operands();
    if (recursive && targets.some((t) => isTopLevelTree(t))) return hit(3, "permission_change");
    if (name !== "chmod") return hit(2, "permission_change");
    if (recursive) return hit(2, "permission_change");
    return targets.some((t) => t.startsWith("/")) ? hit(2, "permission_change") : null;
  };
}

/**
 * GNU sed: `-i[SUFFIX]` or `--in-place` edits files. In a cluster the letters
 * e, f and l take the rest as their value, so `-ne` is not in-place but `-ni` is.
 */
function sed({ args }: RuleInput): Hit | null {
  let inPlace = args.long("in-place", 3);
  for (const c of args.clusters()) {
    for (const letter of c) {
      if (letter === "i") inPlace = true;
      if (letter === "i" || letter === "e" || letter === "f" || letter === "l") break;
    }
  }
  if (!inPlace) return null;
  const targets = args.operands();
  if (targets.some((t) => isLoginGate(t))) return hit(3, "account_access");
  if (targets.some((t) => isAuthPath(t))) return hit(2, "account_access");
  return hit(2, "config_change");
}

/** tee writes every file it is given: devices, /etc and login files. */
function tee({ args }: RuleInput): Hit | null {
  const targets = args.operands();
  if (targets.some((t) => isBlockDevice(t))) return hit(3, "storage_destruction");
  if (targets.some((t) => t === "/proc/sysrq-trigger")) return hit(3, "power_kernel");
  if (targets.some((t) => isLoginGate(t))) return hit(3, "account_access");
  if (targets.some((t) => isAuthPath(t))) return hit(2, "account_access");
  if (targets.some((t) => isEtcPath(t))) return hit(2, "config_change");
  if (targets.some((t) => t.startsWith("/proc/sys/") || t.startsWith("/sys/"))) return hit(2, "host_change");
  return null;
}

/** Files whose mere existence changes what the host does: logins refused, a check or relabel at boot. */
const NOLOGIN = /^\/(?:etc|run|var\/run)\/nologin$/;
const BOOT_FLAGS = /^\/(?:forcefsck|fastboot|\.autorelabel)$/;

/**
 * touch creates the files it names that do not exist. Created, `/etc/nologin` (and pam_nologin's
 * `/run/nologin`) refuses every login but root's, as a redirection into it does (Tier 3,
 * account_access); a new file under /etc can switch a service's behaviour (`cloud-init.disabled`,
 * a drop-in), and the flags at the root of the file system ask the next boot for a check or a
 * relabel (Tier 2). The values of -d, -t and -r are times and a reference file, not targets.
 */
function touch({ args }: RuleInput): Hit | null {
  const targets: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (i < args.optionEnd && /^(?:-[dtr]|--date|--reference)$/.test(v)) i++;
    else if (i !== args.optionEnd && !(i < args.optionEnd && v.startsWith("-") && v.length > 1))
      targets.push(normalizePath(v));
  }
  if (targets.some((t) => NOLOGIN.test(t))) return hit(3, "account_access");
  if (targets.some((t) => BOOT_FLAGS.test(t))) return hit(2, "host_change");
  return targets.some((t) => isEtcPath(t)) ? hit(2, "config_change") : null;
}

/**
 * mount/umount stay Tier 1 as in the conformance sample (docs/wire-contract.md §5.7 row 19: `mount
 * /dev/sdb1 /mnt`), except a remount or a forced/lazy unmount, which changes
 * what running programs see under their feet.
 */
function mount({ name, args }: RuleInput): Hit | null {
  if (name === "mount") {
    const opts = args.optionValue("-o", "--options") ?? "";
    return /remount/.test(opts) || args.has("--move", "--rbind") ? hit(2, "filesystem_change") : null;
  }
  return args.short("fl") || args.long("force") || args.long("lazy") ? hit(2, "filesystem_change") : null;
}

/**
 * The policy text of the transfer tools reads `upload <local> <host>:<remote>`
 * and `download <host>:<remote> <local>` (docs/wire-contract.md §5.4). Writing a file over a
 * block device is Tier 3 there too (docs/wire-contract.md §5.7 row 108); other paths are left to the
 * tool's floor.
 */
function transfer({ args }: RuleInput): Hit | null {
  const paths = args.operands().map((p) => {
    const colon = p.indexOf(":");
    return colon > 0 && !p.startsWith("/") ? p.slice(colon + 1) : p;
  });
  if (paths.some((p) => isBlockDevice(p))) return hit(3, "storage_destruction");
  return paths.some((p) => isAuthPath(p)) ? hit(2, "account_access") : null;
}

export const FILE_RULES = table([
  ["rm", rm],
  [["unlink", "rmdir"], removeNamed],
  ["truncate", truncate],
  ["rsync", rsync],
  ["mv", mv],
  [["cp", "install"], cp],
  ["ln", ln],
  ["chmod", permission("R")],
  [["chown", "chgrp"], permission("R")],
  [["setfacl", "chattr", "chcon"], permission("R")],
  ["sed", sed],
  ["tee", tee],
  ["touch", touch],
  [["mount", "umount"], mount],
  [["upload", "download"], transfer],
]);
