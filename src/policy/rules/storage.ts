import { DYNAMIC } from "../shell/words.js";
import { type Args, always, type Hit, hit, type Rule, table } from "./args.js";
import { shortFlag } from "./dry-run.js";
import { writesPaths } from "./files.js";
import { isBlockDevice, isCriticalPath, isEtcPath, isUnsafeDevice } from "./paths.js";

/**
 * Storage destruction: formatting, partitioning, wiping or overwriting disks
 * and volumes. All Tier 3: nothing on the device survives, and no undo exists.
 */

const DESTROY = hit(3, "storage_destruction");

/** Listing modes of partition tools only read the table. */
/** A partition editor is a read only with listing options; the devices it names are operands. */
function partitionEditor(readOnly: string[]): Rule {
  return ({ args }) => {
    const options = args.values.filter((v) => v.startsWith("-"));
    return options.length > 0 && options.every((v) => readOnly.includes(v)) ? null : DESTROY;
  };
}

function sgdisk({ args }: { args: Args }): Hit | null {
  // -b/--backup saves the table to a file: it reads the disk.
  const reads = ["-p", "--print", "-v", "--verify", "-i", "--info", "-O", "--print-mbr", "-b", "--backup"];
  const opts = args.values.filter((v) => v.startsWith("-"));
  return opts.length > 0 && opts.every((v) => reads.includes(v) || /^--(?:info|backup)=/.test(v))
    ? null
    : DESTROY;
}

/** wipefs without -a/--all or -o/--offset only lists the signatures it finds. */
function wipefs({ args }: { args: Args }): Hit | null {
  const erases = args.short("ao") || args.long("all") || args.long("offset") || args.long("types");
  return erases ? DESTROY : null;
}

function parted({ args }: { args: Args }): Hit | null {
  const words = args.values.map((v) => v.toLowerCase());
  const writes = [
    "mklabel",
    "mktable",
    "mkpart",
    "mkpartfs",
    "rm",
    "resizepart",
    "resize",
    "rescue",
    "set",
    "name",
    "move",
  ];
  if (words.some((w) => writes.includes(w))) return DESTROY;
  const listing = words.some((w) => w === "-l" || w === "--list" || w === "print" || w === "p");
  return listing ? null : DESTROY; // interactive session on a device: like fdisk
}

/**
 * dd writes wherever `of=` points: a device node there is overwritten; a file is written as a
 * redirection writes it (emptied first unless `conv=notrunc`), so a program or boot file is
 * clobbered (Tier 3) and /etc, the login and account files and system trees are Tier 2 or 3 as for
 * `>` (files.ts). Without `of=` dd writes to stdout.
 */
function dd({ args }: { args: Args }): Hit | null {
  for (const v of args.values) {
    if (!v.startsWith("of=")) continue;
    const target = v.slice(3);
    if (isBlockDevice(target) || isUnsafeDevice(target)) return DESTROY;
    if (target.startsWith(DYNAMIC)) return hit(2, "storage_destruction");
    if (isCriticalPath(target) && !isEtcPath(target)) return hit(3, "file_destruction");
    return writesPaths([target]);
  }
  return null;
}

/** Verbs that change a dataset, its properties or who may use it, or a pool's devices and state. */
const ZFS_CHANGES = new Set(
  "set inherit create clone rename promote receive recv redact upgrade load-key unload-key change-key share unshare jail unjail".split(
    " ",
  ),
);
const ZPOOL_CHANGES = new Set(
  "set add remove attach detach replace offline online clear export import split upgrade reguid initialize checkpoint resilver reopen".split(
    " ",
  ),
);

const ZPOOL_IMPORT_VALUED = new Set(["-d", "-c", "-o", "-R", "-T", "-s"]);

/**
 * `zfs destroy`, `zpool destroy|labelclear|create`, `zfs rollback` (drops later snapshots), and an
 * import that rewinds a pool (`-F`, `-X`, `--rewind-to-checkpoint` discard its last transactions)
 * are Tier 3. Setting or inheriting a property, creating, renaming, keys, and a pool's devices,
 * export and import are Tier 2 (filesystem_change); delegation is permission_change. A snapshot or
 * a bookmark only adds a point to go back to, and goes with a `zfs destroy`: Tier 1.
 */
function zfs({ name, args }: { name: string; args: Args }): Hit | null {
  const sub = args.subcommand()?.value.toLowerCase();
  if (sub === undefined) return null;
  if (sub === "destroy") return DESTROY;
  if (name === "zpool") {
    if (sub === "labelclear" || sub === "create") return DESTROY;
    const rewinds = args.short("FX") || args.long("rewind-to-checkpoint");
    if (sub === "import" && rewinds) return args.short("n") ? null : DESTROY;
    // `zpool import` naming no pool (and not -a) lists the pools it could import.
    const pool = args.from(args.subcommand()!.index + 1).subcommand(ZPOOL_IMPORT_VALUED);
    if (sub === "import" && !args.short("a") && pool === null) return null;
    return ZPOOL_CHANGES.has(sub) ? LAYOUT : null;
  }
  if (sub === "rollback") return DESTROY;
  // `zfs receive -F` rolls the target back and destroys snapshots the stream does not have.
  if ((sub === "receive" || sub === "recv") && args.short("F")) return DESTROY;
  if (sub === "allow" || sub === "unallow") return hit(2, "permission_change");
  if (sub === "mount" || sub === "unmount" || sub === "umount") return args.short("f") ? LAYOUT : null;
  return ZFS_CHANGES.has(sub) ? LAYOUT : null;
}

/** btrfs accepts any unambiguous prefix of its command words (`btrfs sub del`). */
function btrfs({ args }: { args: Args }): Hit | null {
  const ops = args.values.filter((v) => !v.startsWith("-")).map((v) => v.toLowerCase());
  const [group, verb] = ops;
  if (group === undefined || verb === undefined) return null;
  const isPrefix = (word: string, full: string, min: number) => word.length >= min && full.startsWith(word);
  if (isPrefix(group, "subvolume", 2) && isPrefix(verb, "delete", 1)) return DESTROY;
  if (isPrefix(group, "device", 3) && (isPrefix(verb, "delete", 1) || isPrefix(verb, "remove", 1)))
    return DESTROY;
  // `btrfs check --repair` is documented as possibly making things worse; `rescue` rewrites metadata.
  if (isPrefix(group, "check", 2) && args.long("repair")) return DESTROY;
  if (isPrefix(group, "rescue", 3) && verb !== "help") return DESTROY;
  return null;
}

function cryptsetup({ args }: { args: Args }): Hit | null {
  const verbs = ["luksformat", "erase", "lukserase", "lukskillslot", "luksremovekey", "reencrypt"];
  return args.values.some((v) => verbs.includes(v.toLowerCase())) ? DESTROY : null;
}

function hdparm({ args }: { args: Args }): Hit | null {
  return args
    .longs()
    .some((l) => /^(?:security-erase|trim-sector-ranges|write-sector|make-bad-sector)/.test(l))
    ? DESTROY
    : null;
}

function nvme({ args }: { args: Args }): Hit | null {
  const sub = args.lower(0);
  return sub === "format" || sub === "sanitize" || sub === "delete-ns" ? DESTROY : null;
}

/**
 * mdadm: creating over disks or zeroing superblocks destroys arrays; failing
 * or removing a member (manage mode: `mdadm /dev/md0 --fail /dev/sdb1`, `-f`,
 * `-r`) leaves the array without redundancy or takes a disk out of it;
 * stopping an array takes its file systems away until it is assembled again.
 */
function mdadm({ args }: { args: Args }): Hit | null {
  if (args.long("zero-superblock") || args.long("create") || args.short("C")) return DESTROY;
  if (args.long("fail") || args.long("set-faulty") || args.long("remove")) return DESTROY;
  const otherMode = args.short("ABFGI") || args.long("assemble") || args.long("build") || args.long("grow");
  if (!otherMode && (args.has("-f") || args.has("-r"))) return DESTROY;
  return args.has("-S") || args.long("stop") ? hit(2, "storage_destruction") : null;
}

/**
 * Shrinking a logical volume cuts off the file system on it (Tier 3); growing one, or creating,
 * renaming or activating volumes and groups, changes the storage layout someone will notice
 * (Tier 2, filesystem_change).
 */
function lvresize({ args }: { args: Args }): Hit | null {
  const size = args.optionValue("-L", "--size", "-l", "--extents");
  return size?.startsWith("-") ? DESTROY : LAYOUT;
}

const LAYOUT = hit(2, "filesystem_change");

const LVM_DESTROYERS = new Set(["lvremove", "vgremove", "pvremove", "lvreduce", "vgreduce", "pvcreate"]);

function badblocks({ args }: { args: Args }): Hit | null {
  return args.short("w") ? DESTROY : null;
}

/**
 * File-system repair rewrites metadata to make the file system consistent:
 * what it cannot reconcile it drops (orphaned inodes go to lost+found or
 * away). Answering every question yes (`-y`), the automatic modes (`-p`,
 * `-a`), a plain run (which asks on a terminal, where every answer repairs)
 * and `ntfsfix` are Tier 2; `-n` (and fsck's `-N`) open the file system
 * read-only and only report. `xfs_repair -L` zeroes the log and loses the
 * metadata changes in it (Tier 3).
 */
const REPAIR = hit(2, "filesystem_change");

/** e2fsck's and fsck's options that take a value, so a letter after them is not an option. */
const FSCK_VALUED = "bBCEjlLzt";

function fsck({ args }: { args: Args }): Hit | null {
  if (shortFlag(args, "N", FSCK_VALUED) || args.long("no-action") || args.long("dry-run")) return null;
  // fsck.fat takes the last of -n and -a/-p/-y/-r, so a repair letter beside -n may still repair.
  const repairs = [..."apyr"].some((letter) => shortFlag(args, letter, FSCK_VALUED));
  if (shortFlag(args, "n", FSCK_VALUED) && !repairs) return null;
  return args.operands().length > 0 || args.short("A") ? REPAIR : null;
}

function xfsRepair({ args }: { args: Args }): Hit | null {
  if (shortFlag(args, "n", "lrmtco")) return null;
  if (shortFlag(args, "L", "lrmtco")) return DESTROY;
  return args.operands().length > 0 ? REPAIR : null;
}

/**
 * Changing a file system's parameters: `tune2fs` beyond `-l`, a label or UUID written by
 * `e2label` or `xfs_admin`, growing with `xfs_growfs` (`-n` only prints the geometry), `resize2fs`
 * (`-P` only estimates), debugfs opened for writing (`-w`), xfs_db in expert mode or told to write.
 */
function tuning({ name, args }: { name: string; args: Args }): Hit | null {
  const options = args.values.filter((v) => v.startsWith("-"));
  switch (name) {
    case "tune2fs":
      return options.every((v) => v === "-l") ? null : LAYOUT;
    case "e2label":
      return args.operands().length >= 2 ? LAYOUT : null;
    case "xfs_admin":
      return options.every((v) => /^-[luf]+$/.test(v)) ? null : LAYOUT;
    case "xfs_growfs":
      return args.short("n") || args.length === 0 ? null : LAYOUT;
    case "resize2fs":
      return args.short("P") || args.operands().length === 0 ? null : LAYOUT;
    case "debugfs":
      return args.short("w") ? LAYOUT : null;
    default:
      return args.short("r") || !(args.short("x") || args.values.some((v) => XFS_DB_WRITES.test(v)))
        ? null
        : LAYOUT;
  }
}

const XFS_DB_WRITES =
  /^\s*(?:write|blocktrash|fuzz|crc\s+-r|attr_set|attr_remove|(?:uuid|label|version)\s+\S)/;

/**
 * iscsiadm: logging in or out attaches or detaches the target's disks (the file systems on them
 * come or go); creating, updating or deleting node records changes what the next login does.
 */
function iscsiadm({ args }: { args: Args }): Hit | null {
  if (args.short("luLU") || args.long("login") || args.long("logout") || args.long("loginall")) return LAYOUT;
  if (args.long("logoutall")) return LAYOUT;
  const op = args.optionValue("-o", "--op");
  return op !== undefined && /^(?:new|delete|update|nonpersistent)$/.test(op)
    ? hit(2, "config_change")
    : null;
}

function ntfsfix({ args }: { args: Args }): Hit | null {
  if (args.short("n") || args.long("no-action")) return null;
  return args.operands().length > 0 ? REPAIR : null;
}

/** journalctl --vacuum-size/-time/-files deletes archived journal files; every other form reads. */
function journalctl({ args }: { args: Args }): Hit | null {
  return args.longs().some((l) => l.startsWith("vacuum")) ? hit(2, "file_destruction") : null;
}

export const STORAGE_RULES = table([
  [
    [
      "mkfs",
      "mke2fs",
      "mkswap",
      "mkntfs",
      "mkdosfs",
      "mkexfatfs",
      "mkvfat",
      "newfs",
      "mkreiserfs",
      "mkudffs",
    ],
    // `mkfs.ext4 -V` prints the version and exits before it opens a device.
    ({ args }) =>
      args.length === 1 && /^(?:-V|--version)$/.test(args.at(0) ?? "") ? null : hit(3, "storage_destruction"),
  ],
  [
    ["blkdiscard", "shred", "srm", "wipe", "sg_format", "blkzone", "flashrom", "pvremove"],
    always(3, "storage_destruction"),
  ],
  [["lvremove", "vgremove", "lvreduce", "pvcreate", "vgreduce"], always(3, "storage_destruction")],
  [
    ["fdisk", "gdisk", "cfdisk", "cgdisk"],
    partitionEditor(["-l", "--list", "-x", "--list-details", "-V", "--version"]),
  ],
  [
    "sfdisk",
    partitionEditor([
      "-l",
      "--list",
      "-d",
      "--dump",
      "-s",
      "--show-size",
      "-V",
      "--verify",
      "-J",
      "--json",
      "-g",
    ]),
  ],
  ["sgdisk", sgdisk],
  ["wipefs", wipefs],
  [["lvresize", "lvextend"], lvresize],
  [
    [
      "lvcreate",
      "vgcreate",
      "vgextend",
      "lvrename",
      "vgrename",
      "lvchange",
      "vgchange",
      "pvresize",
      "pvmove",
    ],
    always(2, "filesystem_change"),
  ],
  ["lvconvert", ({ args }) => (args.long("merge") ? DESTROY : null)],
  ["lvm", ({ args }) => (LVM_DESTROYERS.has(args.lower(0) ?? "") ? DESTROY : null)],
  ["parted", parted],
  ["dd", dd],
  [["zfs", "zpool"], zfs],
  ["btrfs", btrfs],
  ["cryptsetup", cryptsetup],
  ["hdparm", hdparm],
  ["nvme", nvme],
  ["mdadm", mdadm],
  ["badblocks", badblocks],
  [["fsck", "e2fsck", "dosfsck", "fsck.vfat", "fsck.fat", "fsck.msdos", "fsck.exfat"], fsck],
  ["xfs_repair", xfsRepair],
  [["tune2fs", "e2label", "xfs_admin", "xfs_growfs", "resize2fs", "debugfs", "xfs_db"], tuning],
  ["iscsiadm", iscsiadm],
  ["ntfsfix", ntfsfix],
  ["journalctl", journalctl],
]);
