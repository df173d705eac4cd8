import type { Word } from "../words.js";
import { operands } from "./programs-files.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/**
 * The host: processes, memory, disks, kernel, services, logs, accounts,
 * packages and the network as seen from the host. Subcommand tables list the
 * forms that only report; the rest of a program (start, set, add, delete …)
 * is left out and so never proven.
 */

const system = new Map<string, ReadEntry>();
const spec = (name: string, s: ReadSpec | true) => system.set(name, s);
const all = (names: readonly string[]) => {
  for (const n of names) system.set(n, true);
};
/** Subcommands that only read, each in every form. */
const subsOf = (names: readonly string[]): Record<string, true> =>
  Object.fromEntries(names.map((n) => [n, true as const]));

all([
  "ps",
  "pgrep",
  "pidof",
  "pstree",
  "free",
  "vmstat",
  "iostat",
  "mpstat",
  "pidstat",
  "w",
  "who",
  "last",
  "lastb",
  "lastlog",
  "users",
  "lsblk",
  "blkid",
  "findmnt",
  "lscpu",
  "lsmem",
  "lspci",
  "lsusb",
  "lsmod",
  "modinfo",
  "lsof",
  "lsipc",
  "lslocks",
  "lsns",
  "lsscsi",
  "lsinitramfs",
  "lvs",
  "vgs",
  "pvs",
  "lvdisplay",
  "vgdisplay",
  "pvdisplay",
  "ss",
  "netstat",
  "nstat",
  "dig",
  "host",
  "nslookup",
  "drill",
  "traceroute",
  "traceroute6",
  "tracepath",
  "whois",
  "getenforce",
  "sestatus",
  "aa-status",
  "apparmor_status",
  "ausearch",
  "aureport",
  "dpkg-query",
  "systemd-cgls",
  "systemd-cgtop",
  "systemd-detect-virt",
  "virt-what",
  "showmount",
  "nfsstat",
  "ntpstat",
  "ulimit",
  "slabtop",
  "tload",
  "sensors",
  "lshw",
  "hwinfo",
  "inxi",
  "fping",
]);

spec("top", { check: (args) => args.some((w) => /^-[A-Za-z]*b/.test(w.value)) });
spec("htop", { check: () => false });
spec("iotop", { check: (args) => args.some((w) => /^-[A-Za-z]*b|^--batch$/.test(w.value)) });
spec("sar", { deny: ["-o"], valued: ["-f", "-s", "-e", "-P", "-n", "-I"] });
spec("dmidecode", { deny: ["--dump-bin"], valued: ["-t", "--type", "-s", "--string", "--from-dump"] });
spec("mtr", {
  check: (args) => args.some((w) => /^-[A-Za-z]*[rwjC]|^--(?:report|json|csv|xml)/.test(w.value)),
});
spec("ping", { deny: ["-f"], valued: ["-c", "-i", "-W", "-w", "-s", "-I", "-t", "-Q"] });
spec("ping6", { deny: ["-f"] });
// dmesg: -c/-C clear the ring buffer, -D/-E switch console printing, -n sets its level.
spec("dmesg", {
  deny: [
    "-c",
    "--read-clear",
    "-C",
    "--clear",
    "-D",
    "--console-off",
    "-E",
    "--console-on",
    "-n",
    "--console-level",
  ],
});
spec("journalctl", {
  deny: [
    "--vacuum-size",
    "--vacuum-time",
    "--vacuum-files",
    "--rotate",
    "--flush",
    "--sync",
    "--relinquish-var",
    "--smart-relinquish-var",
    "--setup-keys",
    "--update-catalog",
  ],
  valued: [
    "-u",
    "--unit",
    "-n",
    "--lines",
    "-p",
    "--priority",
    "-t",
    "-S",
    "--since",
    "-U",
    "--until",
    "-b",
    "-o",
    "--output",
    "-D",
    "--directory",
    "-M",
    "-g",
    "--grep",
    "--user-unit",
    "-I",
    "-F",
    "--field",
  ],
});
const SYSTEMCTL_READS = [
  "status",
  "show",
  "cat",
  "is-active",
  "is-enabled",
  "is-failed",
  "is-system-running",
  "list-units",
  "list-unit-files",
  "list-sockets",
  "list-timers",
  "list-jobs",
  "list-dependencies",
  "list-machines",
  "list-automounts",
  "list-paths",
  "get-default",
  "show-environment",
];
spec("systemctl", {
  valued: [
    "-H",
    "--host",
    "-M",
    "--machine",
    "-t",
    "--type",
    "--state",
    "-p",
    "--property",
    "-n",
    "--lines",
    "-o",
    "--output",
  ],
  subs: subsOf(SYSTEMCTL_READS),
});
spec("loginctl", {
  subs: subsOf([
    "list-sessions",
    "session-status",
    "show-session",
    "list-users",
    "user-status",
    "show-user",
    "list-seats",
    "seat-status",
    "show-seat",
  ]),
});
spec("timedatectl", {
  subs: subsOf(["status", "show", "timesync-status", "show-timesync", "list-timezones"]),
});
spec("hostnamectl", { subs: subsOf(["status", "show"]) });
spec("localectl", {
  subs: subsOf([
    "status",
    "list-locales",
    "list-keymaps",
    "list-x11-keymap-models",
    "list-x11-keymap-layouts",
  ]),
});
spec("networkctl", { subs: subsOf(["list", "status", "lldp", "label"]) });
spec("resolvectl", {
  subs: subsOf([
    "status",
    "query",
    "statistics",
    "show-cache",
    "show-server-state",
    "service",
    "openpgp",
    "tlsa",
  ]),
});
spec("busctl", { subs: subsOf(["list", "status", "tree", "introspect", "monitor", "capture-read"]) });
spec("udevadm", { subs: { info: true } });
spec("coredumpctl", { deny: ["-o", "--output"], subs: subsOf(["list", "info"]) });
spec("systemd-analyze", {
  subs: subsOf([
    "time",
    "blame",
    "critical-chain",
    "dump",
    "verify",
    "calendar",
    "timespan",
    "timestamp",
    "security",
    "cat-config",
    "unit-paths",
    "syscall-filter",
    "condition",
    "plot",
    "dot",
    "log-level",
  ]),
});
spec("chronyc", {
  valued: ["-h", "-p", "-f"],
  subs: subsOf([
    "tracking",
    "sources",
    "sourcestats",
    "activity",
    "ntpdata",
    "clients",
    "serverstats",
    "rtcdata",
    "smoothing",
    "manual",
  ]),
});
spec("ntpq", { deny: ["-c", "--command", "-i", "--interactive"] });
// sysctl: -w and NAME=VALUE write, -p/--system load files into the kernel.
spec("sysctl", {
  deny: ["-w", "--write", "-p", "--load", "--system"],
  check: (args) => operands(args).every((w) => !w.value.includes("=")),
});
spec("mount", {
  check: (args) =>
    operands(args, ["-t", "--types", "-O"]).length === 0 &&
    !args.some((w) => /^-[A-Za-z]*a|^--all$/.test(w.value)),
});
spec("swapon", {
  check: (args) =>
    args.every((w) => /^(?:-s|--summary|--show(?:=.*)?|--bytes|--noheadings|--raw)$/.test(w.value)),
});
spec("fuser", { deny: ["-k", "--kill", "-i", "--interactive", "-s"] });
// ip: every object in its listing forms; `ip -s link`, `ip route get 1.1.1.1`.
const IP_READ: ReadSpec = { subs: subsOf(["show", "list", "ls", "lst", "get", "help"]) };
spec("ip", {
  valued: ["-n", "-netns", "-f", "-family", "-o", "-b", "-batch", "-c", "-color"],
  // ip reads abbreviated one-dash words: -b… is -batch (but -br is -brief), -fo… is -force.
  words: true,
  deny: ["-b", "-ba", "-bat", "-batc", "-batch", "-fo", "-for", "-forc", "-force"],
  subs: Object.fromEntries(
    [
      "addr",
      "address",
      "a",
      "link",
      "l",
      "route",
      "r",
      "ro",
      "neigh",
      "neighbor",
      "neighbour",
      "n",
      "rule",
      "ru",
      "maddr",
      "maddress",
      "mroute",
      "tunnel",
      "tuntap",
      "netns",
      "ntable",
      "xfrm",
      "token",
      "netconf",
      "vrf",
      "nexthop",
      "mptcp",
      "tcp_metrics",
      "stats",
    ]
      .map((o): [string, ReadSpec | true] => [o, IP_READ])
      .concat([["monitor", true]]),
  ),
});
spec("ifconfig", { check: (args) => operands(args).length <= 1 });
spec("route", { check: (args) => operands(args).length === 0 });
spec("arp", { deny: ["-d", "--delete", "-s", "--set", "-f", "--file"] });
const ETHTOOL_READ =
  /^(?:-[iSkgaclmTPdenu]|--(?:driver|statistics|show-[\w-]+|module-info|dump-eeprom|register-dump|identify-none)|\w[\w.@:-]*)$/;
spec("ethtool", {
  check: (args) => args.every((w) => !w.dynamic && !w.value.startsWith("-s") && ETHTOOL_READ.test(w.value)),
});
spec("nc", {
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*z/.test(w.value)) && !args.some((w) => /^-[A-Za-z]*[elcL]/.test(w.value)),
});
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
spec("exportfs", { check: (args) => args.every((w) => /^-[vs]+$/.test(w.value)) });
spec("crontab", {
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*l/.test(w.value)) && !args.some((w) => /^-[A-Za-z]*[reiR]/.test(w.value)),
});
spec("atq", true);
spec("auditctl", { check: (args) => args.length > 0 && args.every((w) => /^-[ls]$/.test(w.value)) });
spec("faillock", { deny: ["--reset"] });
spec("chage", {
  check: (args) =>
    args.some((w) => w.value === "-l" || w.value === "--list") &&
    args.every((w) => !w.value.startsWith("-") || w.value === "-l" || w.value === "--list"),
});
spec("update-alternatives", {
  check: (args) =>
    args.some((w) => /^--(?:display|query|list|get-selections)$/.test(w.value)) &&
    !args.some((w) => /^--(?:install|remove|remove-all|set|auto|config|all|set-selections)$/.test(w.value)),
});
spec("service", {
  check: (args) => {
    const o = operands(args);
    return (o.length === 2 && o[1]!.value === "status") || args.some((w) => w.value === "--status-all");
  },
});
spec("chkconfig", {
  check: (args) =>
    args.length === 0 ||
    (args.every((w) => w.value === "--list" || !w.value.startsWith("-")) &&
      args.some((w) => w.value === "--list")),
});
spec("ssh-keygen", {
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*[lFLyB]/.test(w.value)) &&
    !args.some((w) => /^-[A-Za-z]*[RHApcNtDksIOunVwYzZ]/.test(w.value) && !/^-[lFLyBfvE]+$/.test(w.value)),
});
spec("ssh-add", {
  check: (args) => args.length > 0 && args.every((w) => /^-[lLE]$|^(?:sha256|md5)$/.test(w.value)),
});

// Packages, as the managers report them.
spec("dpkg", {
  check: (args) =>
    args.length > 0 &&
    /^(?:-[lLsSpcI]|--(?:list|listfiles|status|search|print-avail|contents|info|get-selections|print-architecture|print-foreign-architectures|audit|verify|compare-versions))$/.test(
      args[0]!.value,
    ),
});
spec("rpm", {
  check: (args) =>
    args.length > 0 &&
    /^-(?:q[a-zA-Z]*|V[a-zA-Z]*)$|^--(?:query|verify|querytags|showrc|eval)$/.test(args[0]!.value) &&
    !args.some((w) =>
      /^--(?:setperms|setugids|restore|rebuilddb|initdb|import|erase|install|upgrade|freshen|delete)/.test(
        w.value,
      ),
    ),
});
spec("apt", {
  subs: subsOf(["list", "show", "search", "policy", "depends", "rdepends", "showsrc", "madison"]),
});
spec("apt-cache", {
  subs: subsOf([
    "policy",
    "show",
    "showpkg",
    "showsrc",
    "search",
    "depends",
    "rdepends",
    "stats",
    "madison",
    "pkgnames",
    "dump",
    "unmet",
    "dotty",
    "xvcg",
  ]),
});
spec("apt-mark", {
  subs: subsOf(["showauto", "showmanual", "showhold", "showinstall", "showremove", "showpurge"]),
});
const DNF_READ: ReadSpec = {
  valued: ["--repo", "--enablerepo", "--disablerepo", "-c", "--config", "--releasever"],
  deny: ["-c", "--config", "--setopt", "--installroot"],
  subs: {
    history: { bare: true, subs: subsOf(["list", "info", "summary", "userinstalled"]) },
    ...subsOf([
      "list",
      "info",
      "search",
      "repolist",
      "repoinfo",
      "provides",
      "whatprovides",
      "check-update",
      "repoquery",
      "deplist",
      "updateinfo",
      "changelog",
      "check",
      "alias-list",
    ]),
  },
};
spec("dnf", DNF_READ);
spec("yum", DNF_READ);
spec("zypper", {
  subs: subsOf([
    "search",
    "se",
    "info",
    "if",
    "list-updates",
    "lu",
    "packages",
    "pa",
    "patches",
    "repos",
    "lr",
    "services",
    "ls",
    "products",
    "pd",
    "patterns",
    "pt",
    "what-provides",
    "wp",
    "locks",
    "ll",
  ]),
});
spec("apk", { subs: subsOf(["info", "search", "list", "policy", "dot", "stats", "version"]) });
spec("pacman", { check: (args) => args.length > 0 && /^-Q[a-zA-Z]*$|^--query$/.test(args[0]!.value) });
spec("snap", {
  subs: subsOf([
    "list",
    "info",
    "find",
    "services",
    "connections",
    "changes",
    "change",
    "version",
    "interfaces",
    "aliases",
    "get",
    "warnings",
    "model",
  ]),
});
spec("flatpak", {
  subs: subsOf(["list", "info", "remote-ls", "remotes", "search", "history", "ps", "documents"]),
});
spec("pip", {
  deny: ["--exists-action"],
  subs: {
    list: true,
    show: true,
    freeze: true,
    check: true,
    inspect: true,
    config: { subs: subsOf(["list", "get", "debug"]) },
    index: { subs: subsOf(["versions"]) },
  },
});
system.set("pip3", system.get("pip")!);
spec("pipx", { subs: subsOf(["list", "environment"]) });
spec("npm", {
  subs: {
    ls: true,
    list: true,
    view: true,
    info: true,
    show: true,
    outdated: true,
    explain: true,
    why: true,
    search: true,
    root: true,
    prefix: true,
    bin: true,
    "find-dupes": true,
    doctor: true,
    ping: true,
    whoami: true,
    audit: { check: (args) => !args.some((w) => w.value === "fix" || w.value === "signatures") },
    config: { subs: subsOf(["get", "list", "ls"]) },
  },
});
spec("gem", {
  subs: subsOf([
    "list",
    "info",
    "search",
    "environment",
    "specification",
    "contents",
    "dependency",
    "which",
    "outdated",
  ]),
});
spec("go", {
  subs: {
    version: true,
    env: { deny: ["-w", "-u"] },
    list: { deny: ["-toolexec", "-exec", "-overlay"] },
    doc: true,
  },
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
spec("rbd", { subs: subsOf(["ls", "list", "info", "status", "du", "disk-usage", "showmapped", "device"]) });
spec("rados", {
  check: (args) => {
    const o = operands(args, ["-p", "--pool", "-c", "--conf"]);
    return (
      o.length > 0 &&
      ["df", "lspools", "ls", "stat", "listxattr", "getxattr", "list-inconsistent-obj"].includes(o[0]!.value)
    );
  },
});
// Packet filters and traffic control, listing forms only.
const LISTS_RULES = (args: readonly Word[]) =>
  args.some((w) => /^-[A-Za-z]*[LS]|^--list/.test(w.value)) &&
  !args.some(
    (w) =>
      /^-[A-Za-z]*[ADIRFZNXPEC]|^--(?:append|delete|insert|replace|flush|zero|new|delete-chain|policy|rename-chain|check)/.test(
        w.value,
      ) && !/^-[LSnvxt]+$/.test(w.value),
  );
for (const name of ["iptables", "ip6tables", "iptables-legacy", "iptables-nft", "ebtables", "arptables"])
  spec(name, { check: LISTS_RULES });
for (const name of ["iptables-save", "ip6tables-save"]) spec(name, { deny: ["-f", "--file"] });
spec("nft", {
  deny: ["-f", "--file", "-i", "--interactive"],
  subs: { list: true, "--list": true, describe: true, monitor: true },
});
const TC_READ: ReadSpec = { subs: subsOf(["show", "list", "ls"]) };
spec("tc", {
  subs: { qdisc: TC_READ, class: TC_READ, filter: TC_READ, action: TC_READ, chain: TC_READ, monitor: true },
});
spec("bridge", { subs: { link: TC_READ, fdb: TC_READ, mdb: TC_READ, vlan: TC_READ, monitor: true } });
spec("conntrack", {
  check: (args) =>
    args.every((w) => !/^-[A-Za-z]*[DFUI]$|^--(?:delete|flush|update|create)/.test(w.value)) &&
    args.some((w) => /^-[LSCE]|^--(?:dump|stats|count|event)/.test(w.value)),
});
spec("firewall-cmd", {
  check: (args) =>
    args.length > 0 && args.every((w) => /^--(?:list|get|query|state|info|zone=|permanent$)/.test(w.value)),
});
spec("ufw", { subs: { status: true, show: true, app: { subs: subsOf(["list", "info"]) }, version: true } });
spec("tcpdump", { deny: ["-w", "-z", "-W", "-C", "-G"], valuedLetters: "cisrwCGWzZFEByTjM" });
spec("nvidia-smi", {
  deny: [
    "-pm",
    "--persistence-mode",
    "-e",
    "--ecc-config",
    "-p",
    "--reset-ecc-errors",
    "-c",
    "--compute-mode",
    "-r",
    "--gpu-reset",
    "-pl",
    "--power-limit",
    "-ac",
    "--applications-clocks",
    "-rac",
    "-lgc",
    "-rgc",
    "-lmc",
    "-rmc",
    "-f",
    "--filename",
    "-am",
    "--accounting-mode",
    "-caa",
    "--auto-boost-default",
    "--auto-boost-permission",
    "-mig",
    "--multi-instance-gpu",
    "-cc",
  ],
  words: true,
  check: (args) =>
    operands(args, ["-i", "--id", "-d", "--display", "-l", "--loop"]).every((w) =>
      ["topo", "nvlink", "dmon", "pmon"].includes(w.value),
    ),
});
spec("numastat", true);
// Servers asked to check their configuration and print it, not to start or signal.
spec("nginx", { deny: ["-s", "-g"], check: (args) => args.some((w) => /^-[A-Za-z]*[tTvV]/.test(w.value)) });
spec("apachectl", {
  deny: ["-k"],
  check: (args) =>
    operands(args, ["-f", "-D", "-C", "-c"]).every((w) =>
      ["configtest", "status", "fullstatus", "-S"].includes(w.value),
    ) && args.some((w) => /^-[StMVvlL]|^(?:configtest|status|fullstatus)$/.test(w.value)),
});
system.set("apache2ctl", system.get("apachectl")!);
spec("haproxy", {
  deny: ["-D", "-sf", "-st", "-Ws", "-W", "-x", "-S"],
  words: true,
  check: (args) => args.some((w) => w.value === "-c" || w.value === "-vv" || w.value === "-v"),
});
spec("sshd", {
  words: true,
  check: (args) =>
    args.some((w) => w.value === "-T" || w.value === "-t" || w.value === "-V") &&
    args.every((w) => !/^-[dDeiq]/.test(w.value) || w.value === "-q"),
});
spec("named-checkconf", true);
spec("named-checkzone", { deny: ["-o"] });
spec("visudo", { check: (args) => args.some((w) => /^-[A-Za-z]*c/.test(w.value)) });
spec("pg_isready", true);
spec("mysqladmin", {
  check: (args) => {
    const o = operands(args, ["-h", "--host", "-u", "--user", "-P", "--port", "-S", "--socket"]);
    return (
      o.length > 0 &&
      o.every((w) =>
        ["status", "extended-status", "processlist", "variables", "version", "ping"].includes(w.value),
      )
    );
  },
});
spec("rabbitmqctl", {
  check: (args) => {
    const o = operands(args, ["-n", "--node", "-p", "--vhost", "-t", "--timeout"]);
    return (
      o.length > 0 &&
      (/^list_/.test(o[0]!.value) ||
        ["status", "cluster_status", "environment", "report", "node_health_check", "version"].includes(
          o[0]!.value,
        ))
    );
  },
});
spec("rabbitmq-diagnostics", {
  check: (args) => {
    const o = operands(args, ["-n", "--node", "-t", "--timeout"]);
    return o.length > 0 && !/^(?:set_|enable|disable|force|log_level)/.test(o[0]!.value);
  },
});
spec("nodetool", {
  check: (args) => {
    const o = operands(args, ["-h", "--host", "-p", "--port", "-u", "--username", "-pw", "--password"]);
    return (
      o.length > 0 &&
      /^(?:status|info|ring|describecluster|describering|compactionstats|compactionhistory|netstats|tablestats|cfstats|tpstats|gcstats|proxyhistograms|tablehistograms|cfhistograms|version|gossipinfo|statusbinary|statusgossip|statusthrift|statusbackup|statushandoff|getcompactionthroughput|getstreamthroughput|listsnapshots|getendpoints|toppartitions|viewbuildstatus)$/.test(
        o[0]!.value,
      )
    );
  },
});
spec("consul", {
  subs: {
    members: true,
    info: true,
    version: true,
    catalog: { subs: subsOf(["services", "nodes", "datacenters"]) },
    operator: { subs: { raft: { subs: subsOf(["list-peers"]) } } },
  },
});
spec("vault", {
  subs: {
    kv: { subs: { get: true, list: true, metadata: { subs: subsOf(["get"]) } } },
    status: true,
    version: true,
    read: true,
    list: true,
    token: { subs: subsOf(["lookup"]) },
    secrets: { subs: subsOf(["list"]) },
    auth: { subs: subsOf(["list"]) },
    policy: { subs: subsOf(["list", "read"]) },
    operator: { subs: { raft: { subs: subsOf(["list-peers"]) }, members: true } },
  },
});
spec("patronictl", {
  valued: ["-c", "--config-file"],
  subs: subsOf(["list", "topology", "history", "show-config", "version"]),
});
spec("istioctl", {
  subs: {
    "proxy-status": true,
    ps: true,
    "proxy-config": true,
    pc: true,
    analyze: true,
    version: true,
    x: { subs: subsOf(["describe"]) },
  },
});
spec("cilium", {
  subs: {
    status: true,
    version: true,
    connectivity: { check: () => false },
    endpoint: { subs: subsOf(["list", "get"]) },
    service: { subs: subsOf(["list", "get"]) },
    bpf: { check: (args) => args.some((w) => w.value === "list") },
  },
});
spec("calicoctl", {
  subs: {
    get: true,
    node: { subs: subsOf(["status", "checksystem"]) },
    version: true,
    ipam: { subs: subsOf(["show", "check"]) },
  },
});
spec("varnishstat", { check: (args) => args.some((w) => /^-[A-Za-z]*[1jx]/.test(w.value)) });
spec("varnishadm", {
  check: (args) => {
    const o = operands(args, ["-T", "-S", "-n", "-t"]);
    return (
      o.length > 0 &&
      /^(?:status|backend\.list|vcl\.list|param\.show|ping|banner|storage\.list|panic\.show)$/.test(
        o[0]!.value,
      )
    );
  },
});

// passwd -S/--status reports an account's state; every other form changes a password or an account.
spec("passwd", {
  check: (args) => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return options.length > 0 && options.every((w) => /^(?:-S|--status|-a|--all)$/.test(w.value));
  },
});

export const SYSTEM_PROGRAMS: ReadonlyMap<string, ReadEntry> = system;
