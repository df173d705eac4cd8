import { type Args, always, type Hit, hit, type RuleInput, table } from "./args.js";
import { SYSTEMCTL_VALUED } from "./option-lists.js";

/**
 * Power, kernel, services and the host's identity. Anything that takes the host (or its
 * network) away from the operator is Tier 3: the session that could undo it is
 * gone. Starting, stopping and reconfiguring ordinary services is Tier 2.
 */

const POWER = hit(3, "power_kernel");
const LOCKOUT = hit(3, "network_lockout");
const SERVICE = hit(2, "service_change");

/**
 * Units whose loss cuts the host off the network or ends remote logins (also FreeBSD's `netif`
 * and `routing` rc scripts and launchd labels such as `com.openssh.sshd`, by their last part).
 */
export function isNetworkUnit(unit: string): boolean {
  const base = unit
    .toLowerCase()
    .replace(/\.(?:service|socket|target)$/, "")
    .replace(/@.*$/, "");
  return /^(?:ssh|sshd|openssh-server|networking|network|networkmanager|network-manager|systemd-networkd|wpa_supplicant|dhcpcd|dhclient|wg-quick|openvpn|tailscaled|zerotier-one|netplan|ifup|iwd|connman|netif|routing)$/.test(
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

/**
 * Init-script verbs that act. FreeBSD's rc.subr adds `one…` (run a service that is not enabled),
 * `force…`, `fast…` and `quiet…` forms, and `enable`/`disable`/`delete` that edit rc.conf.
 */
const SYSV_VERBS =
  /^(?:(?:one|force|fast|quiet)?(?:start|stop|restart|reload)|force-reload|try-restart|condrestart|zap|enable|disable|delete)$/;

/** Verbs that take the service away now or at the next boot. */
const SYSV_STOPPING = /^(?:(?:one|force|fast|quiet)?stop|disable|delete)$/;

/** `service ssh stop`, `/etc/init.d/ssh stop`, `rc-service sshd stop`, `service sshd onestop` (FreeBSD). */
function sysv(unit: string | undefined, verb: string | undefined): Hit | null {
  if (unit === undefined || verb === undefined) return null;
  const v = verb.toLowerCase();
  if (!SYSV_VERBS.test(v)) return null;
  return SYSV_STOPPING.test(v) && isNetworkUnit(unit) ? LOCKOUT : SERVICE;
}

/** FreeBSD's `service -R` restarts every enabled local service; `-j JAIL` runs the rest in a jail. */
function service({ args }: RuleInput): Hit | null {
  if (args.short("R")) return SERVICE;
  const ops = args.from(args.values[0] === "-j" ? 2 : 0).operands();
  return sysv(ops[0], ops[1]);
}

/** An init script run by path (`/etc/init.d/ssh`, FreeBSD's `/usr/local/etc/rc.d/nginx`): the name is the service, the first argument the verb. */
/** A SysV or rc.d script by its path (`/etc/init.d/ssh`): named after its service, not a program. */
export function isInitScriptPath(path: string): boolean {
  return /^(?:\/usr\/local)?\/etc\/(?:rc\.d\/(?:init\.d\/)?|init\.d\/)./.test(path);
}

export function initScript(path: string, args: Args): Hit | null {
  if (!isInitScriptPath(path)) return null;
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

/**
 * macOS kmutil: unloading a kernel extension is rmmod's Tier 3; loading one, and building,
 * installing or choosing the kernel collections the next boot loads, Tier 2. Its reports
 * (`showloaded`, `inspect`, `find`, `libraries`, `print-diagnostics`, `check`) and unknown verbs are left lower.
 */
function kmutil({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "unload") return POWER;
  const boot = /^(?:load|create|install|rebuild|configure-boot|clear-staging|trigger-panic-medic|migrate)$/;
  return verb !== undefined && boot.test(verb) ? hit(2, "power_kernel") : null;
}

function efibootmgr({ args }: RuleInput): Hit | null {
  if (args.short("Bo") || args.long("delete-bootnum") || args.long("bootorder")) return POWER;
  const writes = args.short("cbnNaAO") || args.long("create") || args.long("bootnext") || args.long("active");
  return writes ? hit(2, "power_kernel") : null;
}

/** certbot: obtaining, renewing or installing a certificate runs hooks and reloads services; listing reads. */
/** certbot's options whose value is the next word (`-c FILE certificates`). */
const CERTBOT_VALUED = new Set([
  "-c",
  "--config",
  "-d",
  "--domains",
  "-m",
  "--email",
  "--cert-name",
  "-w",
  "--webroot-path",
  "--config-dir",
  "--work-dir",
  "--logs-dir",
  "-a",
  "--authenticator",
  "-i",
  "--installer",
  "--server",
]);

function certbot({ args }: RuleInput): Hit | null {
  const verb = args.subcommand(CERTBOT_VALUED)?.value ?? "run";
  if (/^(?:certificates|plugins|show_account)$/.test(verb) || args.long("version") || args.long("help"))
    return null;
  return verb === "delete" || verb === "revoke" ? hit(3, "infrastructure_destruction") : SERVICE;
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

/** `nginx -s reload|stop|quit|reopen` signals the running server; -t/-T/-v/-V only check or print. */
function nginx({ args }: RuleInput): Hit | null {
  const i = args.values.indexOf("-s");
  return i >= 0 && args.at(i + 1) !== undefined ? SERVICE : null;
}

/** apachectl's control verbs (`graceful`, `restart`, `-k stop`) act on the server; configtest and -S/-M/-v report. */
function apachectl({ args }: RuleInput): Hit | null {
  const verb = args.values.find((v) => !v.startsWith("-"))?.toLowerCase() ?? "";
  const k = args.values.indexOf("-k");
  const acts = /^(?:start|stop|restart|graceful|graceful-stop|reload|fullstatus-?)$/.test(verb);
  return acts || (k >= 0 && args.at(k + 1) !== undefined) ? SERVICE : null;
}

/** hwclock's setting modes write the hardware clock or set the system clock from it. */
function hwclock({ args }: RuleInput): Hit | null {
  const sets = args.values.some((v) =>
    /^(?:-w|--systohc|-s|--hctosys|--set|--date(?:=.*)?|-a|--adjust|--systz|--setepoch|--update-drift|--param-set(?:=.*)?|--vl-clear)$/.test(
      v,
    ),
  );
  return sets ? hit(2, "host_change") : null;
}

export const SYSTEM_RULES = table([
  ["hwclock", hwclock],
  ["nginx", nginx],
  [["apachectl", "apache2ctl", "httpd"], apachectl],
  [["shutdown", "reboot", "halt", "poweroff", "kexec", "systemd-hibernate"], always(3, "power_kernel")],
  ["killall5", always(3, "process_kill")],
  ["systemctl", systemctl],
  [["service", "invoke-rc.d", "rc-service"], service],
  [["init", "telinit"], init],
  ["sysctl", sysctl],
  // FreeBSD's kldunload and macOS's kextunload take a driver away, as rmmod does; loading one is Tier 2.
  [["rmmod", "kldunload", "kextunload"], always(3, "power_kernel")],
  [["modprobe", "insmod"], modprobe],
  [["kldload", "kextload"], always(2, "power_kernel")],
  ["kmutil", kmutil],
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
  [["chkconfig", "update-rc.d", "rc-update", "sv", "initctl", "systemd-run"], always(2, "service_change")],
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
  ["hostname", hostname],
  ["hostnamectl", setVerb(/^(?:set-|hostname$)/)],
  ["timedatectl", setVerb(/^set-/)],
  ["localectl", setVerb(/^set-/)],
  ["date", date],
  ["ipmitool", ipmitool],
  // logrotate runs the configured rotation and its postrotate scripts (-d only reports what it would do).
  ["logrotate", ({ args }) => (args.short("d") || args.long("debug") ? null : SERVICE)],
  ["certbot", certbot],
  ["racadm", racadm],
]);
