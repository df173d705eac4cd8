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

export const STORAGE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
