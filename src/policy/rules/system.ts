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
  const sig = (signal ?? "TERM").toUpperCase().replace(/^SIG/, "");
  if (sig === "0") return null;
  if (pids.some((p) => p === "1" || p === "-1")) return hit(3, "process_kill");
  return sig === "KILL" || sig === "9" ? hit(2, "process_kill") : null;
}

function killall({ args }: RuleInput): Hit | null {
  if (args.short("l") || args.long("list")) return null;
  const regex = args.short("r") || args.long("regexp");
  const names = args.operands();
  if (names.some((n) => CRITICAL_PROCESS.test(n))) return hit(3, "process_kill");
  if (regex && names.some(broadPattern)) return hit(3, "process_kill");
  return hit(2, "process_kill");
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
  if (pattern === null)
    return user === "root" || user === "0" ? hit(3, "process_kill") : hit(2, "process_kill");
  if (broadPattern(pattern) || CRITICAL_PROCESS.test(pattern)) return hit(3, "process_kill");
  return hit(2, "process_kill");
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
  [["swapoff", "swapon", "setenforce", "sysctl-set"], always(2, "host_change")],
  ["kill", kill],
  ["killall", killall],
  ["pkill", pkill],
  [["fuser"], ({ args }) => (args.short("k") || args.long("kill") ? hit(2, "process_kill") : null)],
  [["skill", "snice"], always(2, "process_kill")],
  ["hostname", hostname],
  ["hostnamectl", setVerb(/^(?:set-|hostname$)/)],
  ["timedatectl", setVerb(/^set-/)],
  ["localectl", setVerb(/^set-/)],
  ["date", date],
]);
