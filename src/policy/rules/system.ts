import { type Args, always, type Hit, hit, type RuleInput, table } from "./args.js";

/**
 * Power, kernel, services and processes. Anything that takes the host (or its
 * network) away from the operator is Tier 3: the session that could undo it is
 * gone. Starting, stopping and reconfiguring ordinary services is Tier 2.
 */

const POWER = hit(3, "power_kernel");
const LOCKOUT = hit(3, "network_lockout");
const SERVICE = hit(2, "service_change");

/** Units whose loss cuts the host off the network or ends remote logins. */
function isNetworkUnit(unit: string): boolean {
  const base = unit
    .toLowerCase()
    .replace(/\.(?:service|socket|target)$/, "")
    .replace(/@.*$/, "");
  return /^(?:ssh|sshd|openssh-server|networking|network|networkmanager|network-manager|systemd-networkd|wpa_supplicant|dhcpcd|dhclient|wg-quick|openvpn|tailscaled|zerotier-one|netplan|ifup|iwd|connman)$/.test(
    base,
  );
}

const POWER_VERBS = new Set([
  "reboot",
  "poweroff",
  "halt",
  "kexec",
  "suspend",
  "hibernate",
  "hybrid-sleep",
  "suspend-then-hibernate",
  "soft-reboot",
  "emergency",
  "rescue",
]);

const POWER_TARGETS = /^(?:rescue|emergency|poweroff|reboot|halt|kexec|shutdown|runlevel[016])(?:\.target)?$/;

const SERVICE_VERBS = new Set([
  "start",
  "stop",
  "restart",
  "reload",
  "try-restart",
  "reload-or-restart",
  "try-reload-or-restart",
  "condrestart",
  "force-reload",
  "enable",
  "disable",
  "reenable",
  "mask",
  "unmask",
  "kill",
  "daemon-reload",
  "daemon-reexec",
  "isolate",
  "set-default",
  "edit",
  "set-property",
  "preset",
  "preset-all",
  "revert",
  "link",
  "freeze",
  "thaw",
  "clean",
  "set-environment",
  "unset-environment",
]);

/** Verbs that take a unit away (now or at the next boot). */
const STOPPING = new Set(["stop", "disable", "mask", "kill", "freeze", "isolate"]);

const SYSTEMCTL_VALUED = new Set([
  "-H",
  "--host",
  "-M",
  "--machine",
  "-t",
  "--type",
  "-p",
  "--property",
  "-n",
  "--lines",
  "-o",
  "--output",
  "-s",
  "--signal",
  "--kill-whom",
  "--kill-value",
  "--state",
  "--root",
  "--what",
  "--when",
  "--message",
  "--job-mode",
  "--timestamp",
  "--drop-in",
]);

function systemctl({ args }: RuleInput): Hit | null {
  const found = args.subcommand(SYSTEMCTL_VALUED);
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  const units = args.from(found.index + 1).operands();
  if (POWER_VERBS.has(verb)) return POWER;
  if (verb === "isolate" || verb === "set-default" || verb === "start") {
    if (units.some((u) => POWER_TARGETS.test(u.toLowerCase()))) return POWER;
  }
  if (!SERVICE_VERBS.has(verb)) return null;
  if (STOPPING.has(verb) && units.some(isNetworkUnit)) return LOCKOUT;
  return SERVICE;
}

const SYSV_VERBS = new Set([
  "start",
  "stop",
  "restart",
  "reload",
  "force-reload",
  "try-restart",
  "condrestart",
  "zap",
]);

/** `service ssh stop`, `/etc/init.d/ssh stop`, `rc-service sshd stop`, `invoke-rc.d networking stop`. */
function sysv(unit: string | undefined, verb: string | undefined): Hit | null {
  if (unit === undefined || verb === undefined) return null;
  const v = verb.toLowerCase();
  if (!SYSV_VERBS.has(v)) return null;
  return v === "stop" && isNetworkUnit(unit) ? LOCKOUT : SERVICE;
}

function service({ args }: RuleInput): Hit | null {
  const ops = args.operands();
  return sysv(ops[0], ops[1]);
}

/** An init script run by path: the name is the service, the first argument the verb. */
export function initScript(path: string, args: Args): Hit | null {
  if (!/^\/etc\/(?:rc\.d\/)?init\.d\/./.test(path)) return null;
  return sysv(path.slice(path.lastIndexOf("/") + 1), args.operands()[0]);
}

function init({ args }: RuleInput): Hit | null {
  const level = args.operands()[0]?.toLowerCase();
  if (level === undefined) return null;
  if (/^[016s]$/.test(level) || level === "single" || level === "emergency") return POWER;
  return /^[2-5]$/.test(level) ? SERVICE : null;
}

/** sysctl writes change the running kernel until reboot; writing the old value back undoes them. */
function sysctl({ args }: RuleInput): Hit | null {
  const writes = args.short("wp") || args.long("write") || args.long("load") || args.long("system");
  return writes || args.operands().some((o) => o.includes("=")) ? hit(2, "host_change") : null;
}

/**
 * Unloading a driver can take away the disk or the network the host is
 * reached through, so rmmod / modprobe -r are Tier 3; loading one is Tier 2.
 */
function modprobe({ args }: RuleInput): Hit | null {
  if (args.short("r") || args.long("remove")) return POWER;
  if (args.short("lcn") || args.long("dry-run") || args.long("show-depends") || args.length === 0)
    return null;
  return hit(2, "power_kernel");
}

function efibootmgr({ args }: RuleInput): Hit | null {
  if (args.short("Bo") || args.long("delete-bootnum") || args.long("bootorder")) return POWER;
  const writes = args.short("cbnNaAO") || args.long("create") || args.long("bootnext") || args.long("active");
  return writes ? hit(2, "power_kernel") : null;
}

const CRITICAL_PROCESS =
  /^(?:sshd|systemd|init|systemd-networkd|networkmanager|dhclient|dhcpcd|wpa_supplicant|dbus-daemon|dbus|systemd-logind|systemd-journald)$/i;

/**
 * kill: signalling PID 1 (init) or -1 (every process the caller may signal) is
 * Tier 3, whatever the signal except 0 (a probe). A SIGKILL to a chosen
 * process is Tier 2 (no chance to clean up); other signals to one process
 * stay Tier 1, like any reversible action.
 */
function kill({ args }: RuleInput): Hit | null {
  let signal: string | null = null;
  const pids: string[] = [];
  const v = args.values;
  let optionsDone = false;
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (!optionsDone && a === "--") {
      optionsDone = true;
    } else if (!optionsDone && (a === "-l" || a === "-L" || a === "--list" || a === "--table")) {
      return null;
    } else if (!optionsDone && (a === "-s" || a === "-n" || a === "--signal")) {
      signal = v[++i] ?? "";
    } else if (!optionsDone && signal === null && /^-[A-Za-z0-9+]+$/.test(a)) {
      signal = a.slice(1);
    } else {
      pids.push(a);
    }
  }
  const sig = signalName(signal ?? "TERM");
  if (sig === "0") return null;
  if (pids.some((p) => p === "1" || p === "-1")) return hit(3, "process_kill");
  if (pids.length === 0) return null;
  return isKill(sig) ? hit(2, "process_kill") : PROCESS_CHANGE;
}

/**
 * A signal that ends the process or makes it act: any but 0 (a probe). Plain
 * `kill PID` (TERM), HUP and STOP reach one process and it can be started
 * again (Tier 2, process_change); KILL gives it no chance to clean up
 * (Tier 2, process_kill).
 */
const PROCESS_CHANGE = hit(2, "process_change");

/** `-9`, `KILL`, `SIGKILL`, `sigkill` → `9` / `KILL`. */
function signalName(s: string): string {
  return s.toUpperCase().replace(/^SIG/, "");
}

function isKill(sig: string): boolean {
  return sig === "KILL" || sig === "9";
}

/** Signals that only ask a daemon to reload, reopen logs or report (`pkill -HUP nginx`). */
const GENTLE_SIGNAL = /^(?:HUP|1|USR1|10|USR2|12|WINCH|28|CONT|18|CHLD|17|URG|23)$/;

/**
 * The signal killall or pkill sends: `-9`, `-KILL`, `-SIGKILL`, `-s KILL`,
 * `--signal=KILL`; null when none is given (TERM). pkill's other short
 * options are letters (`-f`, `-x`), never a digit or an upper-case name.
 */
const SIGNAL_OPTION = /^-(?:\d+|[Ss][Ii][Gg]\w+|[A-Z]{2}[A-Z0-9+]*)$/;

function selectorSignal(args: Args, dashS: boolean): string | null {
  const v = args.values;
  for (let i = 0; i < args.optionEnd; i++) {
    const a = v[i]!;
    if ((dashS && a === "-s") || a === "--signal") return signalName(v[i + 1] ?? "");
    if (a.startsWith("--signal=")) return signalName(a.slice(9));
    if (SIGNAL_OPTION.test(a)) return signalName(a.slice(1));
  }
  return null;
}

/**
 * killall and pkill select processes by name or owner, so they reach every
 * match: a SIGKILL to all of them, every process of a user (`-u`), a pattern
 * that matches nearly everything or a critical daemon is Tier 3; a reload
 * signal is a process change; anything else is Tier 2.
 */
function selectorVerdict(sig: string | null, broad: boolean): Hit | null {
  if (sig === "0") return null;
  if (broad || (sig !== null && isKill(sig))) return hit(3, "process_kill");
  if (sig !== null && GENTLE_SIGNAL.test(sig)) return PROCESS_CHANGE;
  return hit(2, "process_kill");
}

const KILLALL_VALUED = new Set([
  "-u",
  "--user",
  "-s",
  "--signal",
  "-o",
  "--older-than",
  "-y",
  "--younger-than",
  "-n",
  "--ns",
  "-Z",
  "--context",
]);

function killall({ args }: RuleInput): Hit | null {
  if (args.short("l") || args.long("list")) return null;
  const regex = args.short("r") || args.long("regexp");
  const names: string[] = [];
  let user = false;
  for (let i = 0; i < args.length; i++) {
    const a = args.values[i]!;
    if (i > args.optionEnd || !(a.startsWith("-") && a.length > 1)) {
      if (a !== "--") names.push(a);
    } else if (KILLALL_VALUED.has(a)) {
      user ||= a === "-u" || a === "--user";
      i++;
    } else user ||= a.startsWith("--user=");
  }
  // `killall -u bob` with no name is every process bob owns.
  const broad =
    (user && names.length === 0) ||
    names.some((n) => CRITICAL_PROCESS.test(n)) ||
    (regex && names.some(broadPattern));
  return selectorVerdict(selectorSignal(args, true), broad);
}

function broadPattern(p: string): boolean {
  return p.length <= 1 || /^[.^$*+?()|\\[\]]*$/.test(p);
}

const PKILL_VALUED = new Set([
  "-u",
  "-U",
  "-g",
  "-G",
  "-P",
  "-s",
  "-t",
  "-F",
  "--signal",
  "--ns",
  "--nslist",
  "--euid",
  "--uid",
  "--pidfile",
  "--parent",
  "--session",
  "--terminal",
  "--group",
  "--pgroup",
]);

/** pkill selects by pattern, so it is at least Tier 2; a pattern that matches nearly everything, or a critical daemon, is Tier 3. */
function pkill({ args }: RuleInput): Hit | null {
  const v = args.values;
  let pattern: string | null = null;
  let user: string | null = null;
  for (let i = 0; i < v.length; i++) {
    const a = v[i]!;
    if (PKILL_VALUED.has(a)) {
      if (a === "-u" || a === "-U" || a === "--euid" || a === "--uid") user = v[i + 1] ?? null;
      i++;
    } else if (a.startsWith("-") && a.length > 1) {
      if (/^-[uU]./.test(a)) user = a.slice(2);
    } else if (pattern === null) {
      pattern = a;
    }
  }
  // `pkill -u bob` with no pattern is every process bob owns.
  const broad = pattern === null ? user !== null : broadPattern(pattern) || CRITICAL_PROCESS.test(pattern);
  // pkill's `-s` is a session id; its signal is `--signal` or `-SIG`.
  return selectorVerdict(selectorSignal(args, false), broad);
}

/**
 * renice, ionice, chrt and taskset change how an existing process is
 * scheduled (`renice -n 10 -p 123`, `ionice -c3 -p 123`); without a new value
 * `ionice -p`, `chrt -p PID` and `taskset -p PID` only print it.
 */
function renice({ args }: RuleInput): Hit | null {
  return args.operands().length > 0 || args.optionValue("-n", "--priority") !== undefined
    ? PROCESS_CHANGE
    : null;
}

function ionice({ args }: RuleInput): Hit | null {
  const sets = args.optionValue("-c", "--class", "-n", "--classdata") !== undefined || args.short("t");
  return sets ? PROCESS_CHANGE : null;
}

/** `chrt -p PRIO PID`, `taskset -p MASK PID`: two operands set, one reads. */
function schedulerSet({ args }: RuleInput): Hit | null {
  if (!args.clusters().some((c) => c.includes("p")) && !args.long("pid")) return null;
  return args.operands().length >= 2 ? PROCESS_CHANGE : null;
}

function hostname({ args }: RuleInput): Hit | null {
  return args.operands().length > 0 || args.short("bF") || args.long("file") ? hit(2, "host_change") : null;
}

function setVerb(prefix: RegExp) {
  return ({ args }: RuleInput): Hit | null =>
    args.operands().some((o) => prefix.test(o.toLowerCase())) ? hit(2, "host_change") : null;
}

function date({ args }: RuleInput): Hit | null {
  if (args.short("s") || args.long("set")) return hit(2, "host_change");
  return args.operands().some((o) => /^\d{8,12}(?:\.\d\d)?$/.test(o)) ? hit(2, "host_change") : null;
}

const IPMI_VALUED = new Set("IHUPfkyLApCNRoObBtTlme".split("").map((l) => `-${l}`));

/**
 * ipmitool drives the machine's BMC, out of band: powering off, cycling or
 * resetting the chassis, resetting the BMC itself and raw commands (which can
 * do any of that) take the host, or the only console left, away (Tier 3);
 * powering on, a boot device for the next boot, BMC users and LAN settings
 * change it (Tier 2). Sensors, FRU, SDR and status read.
 */
function ipmitool({ args }: RuleInput): Hit | null {
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = args.values[i]!;
    if (IPMI_VALUED.has(v)) i++;
    else if (!v.startsWith("-")) words.push(v.toLowerCase());
  }
  const [a, b, c] = words;
  if (a === "raw" || a === "i2c" || (a === "mc" && b === "reset")) return POWER;
  // `ipmitool power off` is short for `ipmitool chassis power off`.
  const action = a === "power" ? b : a === "chassis" && b === "power" ? c : undefined;
  if (action !== undefined) {
    if (/^(?:off|cycle|reset|soft|diag)$/.test(action)) return POWER;
    return action === "on" ? hit(2, "power_kernel") : null;
  }
  if (a === "chassis" && (b === "bootdev" || b === "bootparam" || b === "policy"))
    return hit(2, "power_kernel");
  if (a === "user" && /^(?:set|enable|disable|priv)$/.test(b ?? "")) return hit(3, "account_access");
  if ((a === "lan" || a === "sol" || a === "channel") && b === "set") return hit(2, "firewall_change");
  if (a === "sel" && b === "clear") return hit(2, "file_destruction");
  return null;
}

/** racadm (Dell iDRAC): server power actions and resetting the controller or the system. */
function racadm({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  const i = ops.findIndex((o) => /^(?:serveraction|racreset|racresetcfg|systemerase|set|config)$/.test(o));
  if (i < 0) return null;
  const [verb, action] = [ops[i], ops[i + 1]];
  if (verb === "serveraction") {
    if (action === "powerup") return hit(2, "power_kernel");
    return action === undefined || action === "powerstatus" ? null : POWER;
  }
  if (verb === "racreset" || verb === "racresetcfg") return POWER;
  if (verb === "systemerase") return hit(3, "storage_destruction");
  return hit(2, "host_change");
}

export const SYSTEM_RULES = table([
  [["shutdown", "reboot", "halt", "poweroff", "kexec", "systemd-hibernate"], always(3, "power_kernel")],
  ["killall5", always(3, "process_kill")],
  ["systemctl", systemctl],
  [["service", "invoke-rc.d", "rc-service"], service],
  [["init", "telinit"], init],
  ["sysctl", sysctl],
  [["rmmod"], always(3, "power_kernel")],
  [["modprobe", "insmod"], modprobe],
  ["efibootmgr", efibootmgr],
  [
    [
      "grub-install",
      "update-grub",
      "grub-mkconfig",
      "grub2-mkconfig",
      "grub2-install",
      "update-initramfs",
      "dracut",
      "mkinitcpio",
      "kernel-install",
    ],
    always(2, "power_kernel"),
  ],
  [
    ["chkconfig", "update-rc.d", "rc-update", "sv", "initctl", "launchctl", "systemd-run"],
    always(2, "service_change"),
  ],
  [["swapoff", "setenforce", "sysctl-set"], always(2, "host_change")],
  // swapon lists the swap areas with --show or -s/--summary and nothing else; any other form enables one.
  [
    ["swapon"],
    ({ args }) =>
      args.length > 0 &&
      args.values.every((v) => /^(?:-s|--summary|--show(?:=.*)?|--bytes|--noheadings|--raw)$/.test(v))
        ? null
        : hit(2, "host_change"),
  ],
  ["kill", kill],
  ["killall", killall],
  ["pkill", pkill],
  [["fuser"], ({ args }) => (args.short("k") || args.long("kill") ? hit(2, "process_kill") : null)],
  [["skill", "snice"], always(2, "process_kill")],
  ["renice", renice],
  ["ionice", ionice],
  [["chrt", "taskset"], schedulerSet],
  ["hostname", hostname],
  ["hostnamectl", setVerb(/^(?:set-|hostname$)/)],
  ["timedatectl", setVerb(/^set-/)],
  ["localectl", setVerb(/^set-/)],
  ["date", date],
  ["ipmitool", ipmitool],
  ["racadm", racadm],
]);
