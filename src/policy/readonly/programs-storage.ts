import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Disks and storage stacks in their reporting forms: SMART, NVMe, software
 * RAID, multipath, ZFS, Ceph. Every other form of these programs changes a
 * disk or a pool and is left out.
 */

const { entries, spec } = tablePart();

spec("smartctl", {
  deny: [
    "-s",
    "--smart",
    "-o",
    "--offlineauto",
    "-S",
    "--saveauto",
    "-t",
    "--test",
    "-X",
    "--abort",
    "--set",
    "-g",
  ],
  valued: [
    "-d",
    "--device",
    "-l",
    "--log",
    "-T",
    "--tolerance",
    "-b",
    "--badsum",
    "-r",
    "--report",
    "-n",
    "--nocheck",
    "-v",
    "--vendorattribute",
    "-F",
    "--firmwarebug",
    "-P",
    "--presets",
    "-B",
    "--drivedb",
    "-f",
    "--format",
  ],
});
spec("nvme", {
  subs: subsOf([
    "list",
    "list-subsys",
    "smart-log",
    "error-log",
    "id-ctrl",
    "id-ns",
    "fw-log",
    "show-regs",
    "list-ns",
    "list-ctrl",
    "effects-log",
    "get-feature",
    "version",
  ]),
});
spec("mdadm", {
  check: (args) =>
    args.some((w) => /^(?:-D|--detail|-E|--examine|-Q|--query|--detail-platform)$/.test(w.value)) &&
    !args.some((w) =>
      /^(?:--zero-superblock|--remove|--fail|--stop|--run|--add|--grow|--create|--assemble|--manage|--misc|-[SArfaCG]|--update)/.test(
        w.value,
      ),
    ),
});
spec("pvscan", { deny: ["--cache", "-a", "--activate"] });
spec("multipath", {
  check: (args) => args.length > 0 && args.every((w) => /^-(?:l|ll|t|v\d)$/.test(w.value)),
});
// Storage stacks in their reporting forms.
spec("zpool", {
  subs: {
    list: true,
    status: true,
    iostat: true,
    get: true,
    history: true,
    events: { deny: ["-c"] },
    version: true,
    // Naming no pool, import lists the pools it could import; -a imports them all.
    import: {
      valued: ["-d", "-c", "-o", "-R", "-T", "-s"],
      deny: ["-a", "-f", "-F", "-X", "-m", "-N", "--rewind-to-checkpoint"],
      check: (args) => operands(args, ["-d", "-c", "-o", "-R", "-T", "-s"]).length === 0,
    },
  },
});
spec("zfs", {
  subs: subsOf(["list", "get", "holds", "userspace", "groupspace", "projectspace", "version", "diff"]),
});
const CEPH_SUBS: Record<string, ReadSpec | true> = {
  status: true,
  health: true,
  df: true,
  versions: true,
  quorum_status: true,
  features: true,
  "time-sync-status": true,
  osd: {
    subs: {
      tree: true,
      df: true,
      dump: true,
      ls: true,
      stat: true,
      perf: true,
      find: true,
      metadata: true,
      utilization: true,
      "blocked-by": true,
      versions: true,
      pool: { subs: subsOf(["ls", "get", "stats", "autoscale-status"]) },
      crush: { subs: { rule: { subs: subsOf(["ls", "dump"]) }, dump: true, tree: true } },
    },
  },
  mon: { subs: subsOf(["stat", "dump"]) },
  pg: { subs: subsOf(["stat", "dump", "ls", "dump_stuck", "query", "ls-by-pool"]) },
  fs: { subs: subsOf(["ls", "status", "dump", "get"]) },
  mds: { subs: subsOf(["stat"]) },
  mgr: { subs: { dump: true, stat: true, services: true, module: { subs: subsOf(["ls"]) } } },
  log: { subs: subsOf(["last"]) },
  config: { subs: subsOf(["get", "show", "dump", "ls"]) },
  crash: { subs: subsOf(["ls", "info", "stat"]) },
  balancer: { subs: subsOf(["status"]) },
  orch: {
    subs: {
      ls: true,
      ps: true,
      status: true,
      host: { subs: subsOf(["ls"]) },
      device: { subs: subsOf(["ls"]) },
    },
  },
};
spec("ceph", {
  valued: ["-c", "--conf", "-k", "--keyring", "-n", "--name", "--id", "--cluster", "-f", "--format"],
  subs: CEPH_SUBS,
  check: (args) =>
    args.some((w) => w.value === "-s" || w.value === "--status" || w.value === "-w" || w.value === "--watch"),
});
spec("rbd", { subs: subsOf(["ls", "list", "info", "status", "du", "disk-usage", "showmapped"]) });
spec("rados", {
  check: (args) => {
    const o = operands(args, ["-p", "--pool", "-c", "--conf"]);
    return (
      o.length > 0 &&
      ["df", "lspools", "ls", "stat", "listxattr", "getxattr", "list-inconsistent-obj"].includes(o[0]!.value)
    );
  },
});

/**
 * A check run that opens the file system read-only: the letters in `flags` and the options in
 * `valued` (whose value is the rest of the word or the next word) are all it is given, `required`
 * is among them, and one device or image is named.
 */
function readOnlyCheck(flags: string, valued: string, required: string) {
  return (args: readonly Word[]): boolean => {
    let seen = false;
    let devices = 0;
    for (let i = 0; i < args.length; i++) {
      const w = args[i]!;
      if (w.dynamic || w.glob) return false;
      if (!/^-[A-Za-z]/.test(w.value)) {
        devices++;
        continue;
      }
      for (let k = 1; k < w.value.length; k++) {
        const letter = w.value[k]!;
        seen ||= required.includes(letter);
        if (valued.includes(letter)) {
          if (k === w.value.length - 1) i++;
          break;
        }
        if (!flags.includes(letter)) return false;
      }
    }
    return seen && devices === 1;
  };
}

// e2fsck -n opens the file system read-only and answers no to every question; -p, -a and -y
// repair, -c and -l/-L change the bad-block list, -D and -E rewrite, -z writes an undo file.
const E2FSCK_READ = readOnlyCheck("nfvt", "bBCj", "n");
for (const name of ["e2fsck", "fsck.ext2", "fsck.ext3", "fsck.ext4"]) spec(name, { check: E2FSCK_READ });
// fsck.fat -n checks without writing; the repair modes (-a, -p, -r, -y), -t, -w, -d and -u write.
const FAT_READ = readOnlyCheck("nvVl", "c", "n");
for (const name of ["fsck.fat", "fsck.vfat", "fsck.msdos", "dosfsck"]) spec(name, { check: FAT_READ });
// xfs_repair -n is its no-modify mode; -L zeroes the log, -c and -o change the file system, -d
// repairs a mounted one.
spec("xfs_repair", { check: readOnlyCheck("nfvPeV", "lrmt", "n") });
// xfs_growfs -n prints the geometry; xfs_admin -l and -u print the label and the UUID.
spec("xfs_growfs", { check: readOnlyCheck("n", "t", "n") });
spec("xfs_admin", { check: readOnlyCheck("luf", "", "lu") });
// resize2fs -P estimates the smallest size the file system could shrink to.
spec("resize2fs", { check: readOnlyCheck("P", "d", "P") });

/**
 * xfs_db -r opens the device read-only; each -c command must be one that prints (`sb`, `print`,
 * `freesp` …). `write`, `blocktrash`, `fuzz`, `crc -r` and `logformat` change the file system,
 * `metadump` writes a file, and `uuid`, `label` and `version` set what they show when given a value.
 */
const XFS_DB_READS =
  /^(?:(?:sb|agf|agi|agfl|inode|print|p|freesp|frag|blockget|blockuse|ncheck|convert|daddr|fsblock|fsmap|info|addr|ablock|dblock|bmap|stack|type|hash|ls|path|stat|help|echo)(?:\s+[\w.:/-]+)*|uuid|label|version)\s*$/;
spec("xfs_db", {
  check: (args) => {
    const commands = args.filter((_, i) => i > 0 && args[i - 1]!.value === "-c");
    return (
      readOnlyCheck("rfiFV", "cpl", "r")(args) &&
      commands.length > 0 &&
      commands.every((w) => XFS_DB_READS.test(w.value.trim()))
    );
  },
});

/**
 * debugfs opens the file system read-only unless given -w; -R runs one request and exits.
 * `dump` and `rdump` write local files; -f runs a file of requests and -z writes an undo file.
 */
const DEBUGFS_READS =
  /^(?:stats|show_super_stats|ls|list_directory|stat|show_inode_info|cat|blocks|bmap|imap|icheck|ncheck|testb|testi|ffb|find_free_block|ffi|find_free_inode|htree|htree_dump|dx_hash|hash|dirsearch|lsdel|list_deleted_inodes|filefrag|freefrag|dump_extents|extents|ex|lq|list_quota|get_quota|gq|supported_features|inode_dump|idump|logdump|pwd|params|show_debugfs_params|block_dump|bd)(?:\s+[\w.:/<>=-]+)*\s*$/;
spec("debugfs", {
  check: (args) => {
    const request = args.find((_, i) => i > 0 && args[i - 1]!.value === "-R");
    return (
      request !== undefined &&
      readOnlyCheck("ciDn", "bsdR", "R")(args) &&
      DEBUGFS_READS.test(request.value.trim())
    );
  },
});

/** Sources dd may read without an effect beyond the read: files, disks and partitions, the null and random devices. */
const DD_SOURCE =
  /^\/dev\/(?:zero|u?random|null|stdin|(?:sd|hd|vd|xvd)[a-z]+\d*|nvme\d+n\d+(?:p\d+)?|mmcblk\d+(?:p\d+)?|dm-\d+|md\d+|loop\d+|mapper\/[\w.-]+|disk\/by-[\w-]+\/[\w.:@-]+)$/;
const DD_OPERANDS = /^(?:bs|ibs|obs|cbs|count|skip|iseek|seek|oseek|conv|iflag|oflag|status)=/;

/**
 * dd writes to stdout without `of=` (or to /dev/null with it): it reads. The source must not be a
 * device whose reading acts (a watchdog, a tape that rewinds, the kernel's message queue).
 */
spec("dd", {
  check: (args) =>
    args.every((w) => {
      const v = w.value;
      if (w.dynamic || w.glob) return false;
      if (v.startsWith("if=")) {
        const source = v.slice(3);
        return source.startsWith("/dev/") ? DD_SOURCE.test(source) : !source.startsWith("/proc/");
      }
      return v === "of=/dev/null" || DD_OPERANDS.test(v);
    }),
});

export const STORAGE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
