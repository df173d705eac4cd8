import { SYSTEMCTL_VALUED } from "../rules/option-lists.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/**
 * The host itself: processes, memory, the kernel, services and their logs,
 * time, accounts and keys. Subcommand tables list the forms that only
 * report; the rest of a program (start, set, add, delete …) is left out and
 * so never proven.
 */

const { entries, spec, all } = tablePart();

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
    "--cursor-file",
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
  valued: [...SYSTEMCTL_VALUED],
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
  // Without a command chronyc runs the commands on its stdin (`settime`, `makestep`).
  bare: false,
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
// service NAME status; FreeBSD's rc.subr also reports with `describe`, `enabled`, `rcvar`,
// `extracommands` and `onestatus`, and `service -e|-l|-r` list the enabled, all and ordered scripts.
spec("service", {
  check: (args) => {
    const o = operands(args, ["-j"]);
    if (o.length === 2)
      return /^(?:status|onestatus|describe|enabled|rcvar|extracommands)$/.test(o[1]!.value);
    const listing = args.some((w) => /^(?:--status-all|-[elr])$/.test(w.value));
    return o.length === 0 && listing && args.every((w) => /^(?:--status-all|-[elrv])$/.test(w.value));
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

// passwd -S/--status reports an account's state; every other form changes a password or an account.
spec("passwd", {
  check: (args) => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return options.length > 0 && options.every((w) => /^(?:-S|--status|-a|--all)$/.test(w.value));
  },
});

// ss -K kills the sockets it matches; -D dumps raw diagnostics into a file.
spec("ss", { deny: ["-K", "--kill", "-D", "--diag"] });

// kill sends nothing with signal 0 (it only asks whether the process exists) and lists signals with -l/-L.
spec("kill", {
  check: (args) => {
    const first = args[0]?.value ?? "";
    if (/^(?:-l|-L|--list|--table)$/.test(first)) return args.slice(1).every((w) => /^\d+$/.test(w.value));
    const zero = /^(?:-0|-SIG0)$/.test(first) || (/^(?:-s|-n)$/.test(first) && args[1]?.value === "0");
    const pids = args.slice(first === "-s" || first === "-n" ? 2 : 1);
    // A later `-9` would be read as a signal again (bash's kill takes options until the pids).
    return zero && pids.length > 0 && pids.every((w) => /^\d+$|^%\d+$/.test(w.value) && !w.dynamic);
  },
});
// hwclock alone shows the hardware clock; the setting modes (-w, -s, --set, --adjust, --systz) write.
spec("hwclock", {
  check: (args) =>
    args.every((w) =>
      /^(?:-r|--show|--get|-v|--verbose|-u|--utc|-l|--localtime|--debug|-D|--predict|--test|--rtc=\S+|--adjfile=\S+|--noadjfile|-V|--version)$/.test(
        w.value,
      ),
    ),
});
// efibootmgr prints the boot entries when given nothing but verbosity; every other option edits them.
spec("efibootmgr", { check: (args) => args.every((w) => /^(?:-v+|--verbose)$/.test(w.value)) });

export const SYSTEM_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
