import type { Word } from "../shell/words.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * Inspectors of binaries, file systems, block devices, virtual machines,
 * keys and the orchestration and observability tools around them, in the
 * forms that print. Partitioning and file-system tools change a disk in
 * every other form, so only their listing options are proven.
 */

const tools = new Map<string, ReadEntry>();
const spec = (name: string, s: ReadSpec | true) => tools.set(name, s);
const subsOf = (names: readonly string[]): Record<string, true> =>
  Object.fromEntries(names.map((n) => [n, true as const]));
/** Every option word is one of `allowed` (a listing mode), and at least one is present. */
const onlyOptions =
  (allowed: RegExp) =>
  (args: readonly Word[]): boolean => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return options.length > 0 && options.every((w) => allowed.test(w.value));
  };

// Binaries and their metadata. (ldd is left out: it may run the program it is given.)
for (const name of [
  "readelf",
  "nm",
  "size",
  "objdump",
  "getfacl",
  "lsattr",
  "getcap",
  "pg_controldata",
  "dumpe2fs",
  "xfs_info",
  "lslogins",
  "pwdx",
]) {
  tools.set(name, true);
}
// ldconfig rebuilds the cache unless it only prints it (-p) or its version; -v rebuilds verbosely.
spec("ldconfig", {
  check: (args) => args.length > 0 && args.every((w) => /^(?:-p|--print-cache|-V|--version)$/.test(w.value)),
});

// Disks and file systems: listing options only.
spec("fdisk", { check: onlyOptions(/^(?:-l|--list|-x|--list-details|-s|--getsz|-V|--version)$/) });
spec("sfdisk", {
  check: onlyOptions(
    /^(?:-l|--list|-d|--dump|-J|--json|-V|--verify|-s|--show-size|-g|--show-geometry|--list-types|-T|-r|--raw)$/,
  ),
});
spec("sgdisk", {
  check: onlyOptions(/^(?:-p|--print|-i|--info(?:=\d+)?|-v|--verify|-O|--print-mbr|-L|--list-types)$/),
});
spec("gdisk", { check: onlyOptions(/^-l$/) });
spec("parted", {
  check: (args) => {
    // `parted -l` lists every disk's partitions and exits.
    if (args.length > 0 && args.every((w) => /^(?:-l|--list|-s|--script|-m|--machine)$/.test(w.value)))
      return args.some((w) => w.value === "-l" || w.value === "--list");
    const ops = operands(args).map((w) => w.value);
    return (
      ops.length >= 1 &&
      ops.length <= 4 &&
      ops.includes("print") &&
      ops.every((v) => /^(?:print|unit|[kKMGT]i?B|s|B|%|cyl|chs|compact|free|all|list)$|^\//.test(v))
    );
  },
});
// badblocks reads by default; -w (write test), -n (read-write test) and -o (an output file) write.
spec("badblocks", { valuedLetters: "bcdeiopt", deny: ["-w", "-n", "-o", "-X"] });
spec("tune2fs", { check: onlyOptions(/^-l$/) });
spec("wipefs", {
  check: (args) =>
    args.every(
      (w) =>
        !w.value.startsWith("-") ||
        /^(?:-n|--no-act|-J|--json|-O|--output|-p|--parsable|-i|--noheadings|-h|--help|-V|--version)$/.test(
          w.value,
        ),
    ),
});
spec("cryptsetup", { subs: subsOf(["luksDump", "status", "isLuks", "luksUUID", "tcryptDump", "bitlkDump"]) });
spec("dmsetup", { subs: subsOf(["ls", "info", "table", "status", "deps", "targets", "version"]) });
// Discovery writes node records; the listing modes only read.
spec("iscsiadm", {
  check: (args) =>
    !args.some(
      (w, i) =>
        /^(?:-o|--op|-l|--login|-u|--logout|-I|--interface|-n|--name|-v|--value)$|^--(?:op|login|logout|logoutall|loginall)/.test(
          w.value,
        ) ||
        /^(?:--mode=)?discovery/.test(w.value) ||
        ((w.value === "-m" || w.value === "--mode") && /^discovery/.test(args[i + 1]?.value ?? "")),
    ),
});
spec("btrfs", {
  subs: {
    filesystem: { subs: subsOf(["show", "df", "usage", "du"]) },
    fi: { subs: subsOf(["show", "df", "usage", "du"]) },
    subvolume: { subs: subsOf(["list", "show", "get-default"]) },
    device: { subs: { stats: { deny: ["-z", "--reset"] }, usage: true } },
    qgroup: { subs: subsOf(["show"]) },
    scrub: { subs: subsOf(["status"]) },
    balance: { subs: subsOf(["status"]) },
    property: { subs: subsOf(["get", "list"]) },
    version: true,
  },
});
spec("virsh", {
  valued: ["-c", "--connect"],
  // Without a command virsh is a shell that runs the commands on its stdin (`destroy`, `undefine`).
  bare: false,
  subs: subsOf([
    "list",
    "dominfo",
    "domblklist",
    "domiflist",
    "dumpxml",
    "domstate",
    "nodeinfo",
    "net-list",
    "net-info",
    "net-dumpxml",
    "pool-list",
    "pool-info",
    "vol-list",
    "vol-info",
    "capabilities",
    "version",
    "hostname",
    "domstats",
    "domblkstat",
    "domifstat",
    "dommemstat",
    "vcpuinfo",
    "snapshot-list",
    "iface-list",
    "nodedev-list",
    "uri",
    "sysinfo",
  ]),
});
spec("ipmitool", {
  valued: ["-I", "-H", "-U", "-P", "-f", "-p", "-L"],
  subs: {
    sdr: true,
    sensor: { subs: { list: true, get: true } },
    sel: { subs: subsOf(["list", "elist", "info", "get", "time"]) },
    chassis: { subs: { status: true, power: { subs: subsOf(["status"]) }, selftest: true, poh: true } },
    fru: { subs: subsOf(["print", "list"]) },
    mc: { subs: subsOf(["info", "guid", "selftest"]) },
    lan: { subs: subsOf(["print"]) },
    power: { subs: subsOf(["status"]) },
  },
});

// A virus scan reads files; it acts on them with --remove/--move/--copy, writes with --log and
// --leave-temps, and runs other signatures with --database or --bytecode-unsigned.
spec("clamscan", {
  valuedLetters: "ldf",
  deny: [
    "--remove",
    "--move",
    "--copy",
    "-l",
    "--log",
    "--leave-temps",
    "--tempdir",
    "-d",
    "--database",
    "--bytecode-unsigned",
    "--gen-json",
  ],
});

// Keys, certificates, documents.
spec("gpg", {
  check: onlyOptions(
    /^(?:--list-keys|-k|--list-secret-keys|-K|--list-public-keys|--fingerprint|--list-sigs|--check-sigs|--list-packets|--verify|--version|--with-colons|--keyid-format(?:=.*)?|long|short|--with-fingerprint|--with-subkey-fingerprints?|--batch|--no-tty|-q|--quiet|--homedir)$/,
  ),
});
spec("xmllint", { deny: ["-o", "--output", "--load-trace"] });
spec("yamllint", true);
spec("shellcheck", true);
spec("promtool", {
  subs: { check: true, query: true, test: { check: () => false }, debug: { check: () => false } },
});
spec("amtool", {
  subs: {
    alert: { subs: { query: true } },
    silence: { subs: subsOf(["query"]) },
    config: { subs: subsOf(["show", "routes"]) },
    check: true,
    "check-config": true,
  },
});

// Orchestration and configuration management, their reporting commands.
spec("ansible-inventory", {
  deny: ["--output"],
  check: (args) => args.some((w) => /^--(?:list|graph|host)$/.test(w.value)),
});
spec("ansible-config", { subs: subsOf(["dump", "list", "view"]) });
spec("ansible-doc", true);
spec("skopeo", { deny: ["--authfile", "--registries-conf"], subs: subsOf(["inspect", "list-tags"]) });

// Network clients and services that report.
spec("wg", { subs: subsOf(["show", "showconf"]) });
spec("nmcli", {
  subs: {
    device: { subs: subsOf(["status", "show"]) },
    dev: { subs: subsOf(["status", "show"]) },
    d: { subs: subsOf(["status", "show"]) },
    connection: { subs: subsOf(["show"]) },
    con: { subs: subsOf(["show"]) },
    c: { subs: subsOf(["show"]) },
    general: { subs: subsOf(["status", "permissions"]) },
    g: { subs: subsOf(["status", "permissions"]) },
    radio: { check: (args) => args.length <= 1 },
    networking: { subs: subsOf(["connectivity"]) },
    monitor: true,
  },
});
spec("grpcurl", {
  check: (args) => {
    const o = operands(args, [
      "-d",
      "-H",
      "-rpc-header",
      "-import-path",
      "-proto",
      "-protoset",
      "-authority",
      "-max-time",
      "-connect-timeout",
      "-cert",
      "-key",
      "-cacert",
      "-servername",
    ]);
    const verb = o[o.length - 1]?.value ?? "";
    const before = o[o.length - 2]?.value ?? "";
    return ["list", "describe"].includes(verb) || ["list", "describe"].includes(before);
  },
});
spec("mysqlbinlog", {
  deny: ["-r", "--result-file", "--raw", "-R", "--read-from-remote-server", "--flashback"],
});
spec("kcat", {
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*L$|^-[A-Za-z]*Q$/.test(w.value)) &&
    !args.some((w) => /^-[A-Za-z]*[PG]/.test(w.value)),
});
tools.set("kafkacat", tools.get("kcat")!);
// Pagers: a `+COMMAND` runs a pager command at start, and one of them (`!`) is a shell escape; only
// a line number, G (end) and F (follow) are proven. A log file option writes.
const PAGER_START = (args: readonly Word[]) =>
  args.every((w) => !w.value.startsWith("+") || /^\+(?:\d+|G|F)$/.test(w.value));
spec("less", { deny: ["-o", "--log-file", "-O", "--LOG-FILE", "-k", "--lesskey-file"], check: PAGER_START });
spec("more", { check: PAGER_START });

export const TOOL_PROGRAMS: ReadonlyMap<string, ReadEntry> = tools;
