import { isBlockDevice, isUnsafeDevice } from "../paths.js";
import { DYNAMIC } from "../words.js";
import { type Args, always, type Hit, hit, type Rule, table } from "./args.js";

/**
 * Storage destruction: formatting, partitioning, wiping or overwriting disks
 * and volumes. All Tier 3: nothing on the device survives, and no undo exists.
 */

const DESTROY = hit(3, "storage_destruction");

/** Listing modes of partition tools only read the table. */
function partitionEditor(readOnly: string[]): Rule {
  return ({ args }) =>
    args.values.length > 0 && args.values.every((v) => readOnly.includes(v)) ? null : DESTROY;
}

function sgdisk({ args }: { args: Args }): Hit | null {
  const reads = ["-p", "--print", "-v", "--verify", "-i", "--info", "-O", "--print-mbr"];
  const opts = args.values.filter((v) => v.startsWith("-"));
  return opts.length > 0 && opts.every((v) => reads.includes(v) || /^--info=/.test(v)) ? null : DESTROY;
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

/** dd writes wherever `of=` points; a device node there is overwritten. */
function dd({ args }: { args: Args }): Hit | null {
  for (const v of args.values) {
    if (!v.startsWith("of=")) continue;
    const target = v.slice(3);
    if (isBlockDevice(target) || isUnsafeDevice(target)) return DESTROY;
    if (target.startsWith(DYNAMIC)) return hit(2, "storage_destruction");
  }
  return null;
}

/** `zfs destroy`, `zpool destroy|labelclear|create`, `zfs rollback` (drops later snapshots). */
function zfs({ name, args }: { name: string; args: Args }): Hit | null {
  const sub = args.subcommand()?.value.toLowerCase();
  if (sub === undefined) return null;
  if (sub === "destroy") return DESTROY;
  if (name === "zpool" && (sub === "labelclear" || sub === "create")) return DESTROY;
  if (name === "zfs" && sub === "rollback") return DESTROY;
  return null;
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

function mdadm({ args }: { args: Args }): Hit | null {
  return args.long("zero-superblock") || args.long("create") || args.short("C") ? DESTROY : null;
}

function badblocks({ args }: { args: Args }): Hit | null {
  return args.short("w") ? DESTROY : null;
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
    always(3, "storage_destruction"),
  ],
  [
    ["wipefs", "blkdiscard", "shred", "srm", "wipe", "sg_format", "blkzone", "flashrom", "pvremove"],
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
  ["parted", parted],
  ["dd", dd],
  [["zfs", "zpool"], zfs],
  ["btrfs", btrfs],
  ["cryptsetup", cryptsetup],
  ["hdparm", hdparm],
  ["nvme", nvme],
  ["mdadm", mdadm],
  ["badblocks", badblocks],
]);
