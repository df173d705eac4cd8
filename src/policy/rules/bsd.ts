import { type Hit, hit, type Rule, type RuleInput, table } from "./args.js";
import { criticalRemoval } from "./packages.js";
import { isNetworkUnit } from "./system.js";

/**
 * BSD and macOS administration: launchd and the rc systems, the base-system updaters and package
 * tools, boot environments, disks and partitions, Time Machine, the directory service and the
 * security and power settings. The kinds are those of the Linux tools they stand beside:
 * stopping or disabling the SSH server cuts the operator off (Tier 3, as `systemctl stop sshd`),
 * erasing or repartitioning a disk and deleting snapshots or backups cannot be undone (Tier 3),
 * other service, package, setting and account changes are Tier 2, and what only reports is left
 * to the read-only table (`src/policy/readonly/programs-bsd.ts`).
 */

const POWER = hit(3, "power_kernel");
const LOCKOUT = hit(3, "network_lockout");
const ERASE = hit(3, "storage_destruction");
const SERVICE = hit(2, "service_change");
const PACKAGE = hit(2, "package_change");
const CONFIG = hit(2, "config_change");
const HOST = hit(2, "host_change");
const FILESYSTEM = hit(2, "filesystem_change");
const ACCOUNT = hit(2, "account_change");
const BOOT = hit(2, "power_kernel");

/** Verbs by the verdict they get: each list is space-separated and lower-case. */
function verbs(...groups: [Hit, string][]): ReadonlyMap<string, Hit> {
  return new Map(groups.flatMap(([h, list]) => list.split(" ").map((v): [string, Hit] => [v, h])));
}

/** The subcommand (lower-cased, after the options whose value is the next word) looked up in `map`. */
function byVerb(map: ReadonlyMap<string, Hit>, valued: readonly string[] = []): Rule {
  const skip = new Set(valued);
  return ({ args }: RuleInput) => {
    const verb = args.subcommand(skip)?.value.toLowerCase();
    return verb === undefined ? null : (map.get(verb) ?? null);
  };
}

/** A launchd job named by its label, domain target or plist path (`system/com.openssh.sshd`, `ssh.plist`). */
function networkJob(target: string): boolean {
  const base = target.slice(target.lastIndexOf("/") + 1).replace(/\.plist$/i, "");
  return isNetworkUnit(base.slice(base.lastIndexOf(".") + 1));
}

/** launchctl subcommands that only report: the read-only table proves them. */
export const LAUNCHCTL_READS: readonly string[] =
  "list print print-cache print-disabled blame procinfo dumpstate hostinfo resolveport error plist getenv managerpid manageruid managername version".split(
    " ",
  );
const LAUNCHD_READS: ReadonlySet<string> = new Set(LAUNCHCTL_READS);

/**
 * launchctl: `reboot` (any of its forms) restarts the host or its user space; `asuser` and
 * `bsexec` run a command in another user's or bootstrap's context; `limit` and `umask` with a value
 * set them for every job. Taking the SSH job out (`bootout`, `unload`, `disable`, `kill`, `stop`,
 * `remove`) is a lock-out; every other verb loads, starts or changes jobs.
 */
function launchctl({ args }: RuleInput): Hit | null {
  const found = args.subcommand();
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  const rest = args.from(found.index + 1).operands();
  if (LAUNCHD_READS.has(verb)) return null;
  if (verb === "reboot") return POWER;
  if (verb === "asuser" || verb === "bsexec") return hit(2, "privilege_escalation");
  if (verb === "limit" || verb === "umask") return rest.length > (verb === "limit" ? 1 : 0) ? HOST : null;
  const stopping = /^(?:bootout|unload|disable|kill|stop|remove)$/.test(verb);
  return stopping && rest.some(networkJob) ? LOCKOUT : SERVICE;
}

/** OpenBSD rcctl: `ls`, `get`, `getdef` and `check` report; stopping or disabling sshd is a lock-out. */
function rcctl({ args }: RuleInput): Hit | null {
  const [verb, ...rest] = args.operands().map((v) => v.toLowerCase());
  if (verb === undefined || !/^(?:enable|disable|set|start|stop|restart|reload|order)$/.test(verb))
    return null;
  const turnedOff =
    verb === "stop" || verb === "disable"
      ? rest
      : verb === "set" && rest[1] === "status" && rest[2] === "off"
        ? rest.slice(0, 1)
        : [];
  return turnedOff.some(isNetworkUnit) ? LOCKOUT : SERVICE;
}

/**
 * FreeBSD sysrc edits rc.conf: `NAME=VALUE`, `NAME+=`, `NAME-=` and `-x NAME` are Tier 2, and
 * turning the SSH server or the network scripts off for the next boot (`sshd_enable=NO`,
 * `-x sshd_enable`) is the lock-out `systemctl disable sshd` is. `-c` only compares.
 */
function sysrc({ args }: RuleInput): Hit | null {
  if (args.short("c")) return null;
  const removing = args.short("x");
  const edits = args.operands().filter((o) => removing || o.includes("="));
  if (edits.length === 0) return null;
  const off = edits.some((o) => {
    const m = /^(\w+)_enable(?:[+-]?=(.*))?$/i.exec(o);
    return m !== null && isNetworkUnit(m[1]!) && (removing || /^(?:no|false|off|0)$/i.test(m[2] ?? ""));
  });
  return off ? LOCKOUT : CONFIG;
}

/** pkg's global options whose value is the next word (a jail, a chroot, a root, a configuration). */
const PKG_VALUED = ["-j", "-c", "-r", "-C", "-R", "-o"];

/**
 * FreeBSD pkg, judged as apt is (rules/packages.ts): installing, upgrading, deleting, locking and
 * marking packages is Tier 2, and deleting one the host cannot lose is Tier 3. Refreshing the
 * catalogue (`update`), downloading (`fetch`), cleaning the cache and building packages stay Tier 1.
 */
function pkg({ args }: RuleInput): Hit | null {
  const found = args.subcommand(new Set(PKG_VALUED));
  if (found === null) return null;
  const verb = found.value.toLowerCase();
  const rest = args.from(found.index + 1);
  if (verb === "delete" || verb === "remove") return criticalRemoval(rest.operands()) ?? PACKAGE;
  if (/^(?:install|add|upgrade|autoremove|lock|unlock|set|register)$/.test(verb)) return PACKAGE;
  // annotate -A/-M/-D, backup -r and check -d (which installs missing dependencies) write; -S, -d FILE and -n do not.
  if (verb === "annotate")
    return rest.short("AMD") || ["add", "modify", "delete"].some((l) => rest.long(l)) ? PACKAGE : null;
  if (verb === "backup") return rest.short("r") || rest.long("restore") ? PACKAGE : null;
  const fixes = verb === "check" && (rest.short("d") || rest.long("dependencies", 3));
  return fixes && !rest.short("n") && !rest.long("dry-run") ? PACKAGE : null;
}

/** softwareupdate: installing is package_change, and `-R`/`--restart` restarts the Mac when it needs to. */
function softwareupdate({ args }: RuleInput): Hit | null {
  if (args.short("R") || args.long("restart")) return POWER;
  const acts = ["install", "fetch-full-installer", "install-rosetta", "ignore", "reset-ignored"];
  if (args.short("i") || acts.some((l) => args.long(l))) return PACKAGE;
  return /^(?:on|off)$/i.test(args.optionValue("--schedule") ?? "") ? CONFIG : null;
}

/**
 * diskutil's verbs (case does not matter to it). Erasing, partitioning, resizing and zeroing lose
 * data; mounting, renaming, journaling, ownership and repairs change a file system. In the `apfs`,
 * `cs` and `appleRAID` groups, deleting, erasing, resizing and creating containers (which formats
 * their disks), adding a RAID member and rebuilding a mirror overwrite data; the other verbs change.
 */
const DISKUTIL = verbs(
  [
    ERASE,
    "erasedisk erasevolume reformat partitiondisk zerodisk randomdisk secureerase erasecd splitpartition mergepartitions resizevolume addpartition",
  ],
  [
    FILESYSTEM,
    "mount mountdisk unmount umount unmountdisk umountdisk eject rename renamevolume enablejournal disablejournal enableownership disableownership repairvolume repairdisk repairpermissions resetuserpermissions",
  ],
);

function diskutil({ args }: RuleInput): Hit | null {
  const [verb, second] = args.operands().map((v) => v.toLowerCase());
  if (verb === undefined) return null;
  if (!/^(?:apfs|cs|corestorage|ar|appleraid)$/.test(verb)) return DISKUTIL.get(verb) ?? null;
  if (second === undefined || /^(?:list|info)/.test(second)) return null;
  return /^(?:delete|erase|resize|create|addmember|repairmirror)/.test(second) ? ERASE : FILESYSTEM;
}

/** camcontrol: a low-level format, a sanitize and an ATA security erase (`-e`, `-h`) wipe the device. */
function camcontrol({ args }: RuleInput): Hit | null {
  const verb = args.operands()[0]?.toLowerCase();
  if (verb === "format" || verb === "sanitize") return ERASE;
  return verb === "security" && args.short("eh") ? ERASE : null;
}

/**
 * dscl `DATASOURCE [-]COMMAND …` after its own options (`-u USER`, `-P PASSWORD`, `-f FILE` take a
 * value): the command, lower-cased without its dash, and the words after it. Null for the
 * interactive form, which reads its commands from stdin.
 */
export function dsclCommand(values: readonly string[]): { command: string; rest: string[] } | null {
  let i = 0;
  while (i < values.length && values[i]!.startsWith("-")) i += /^-[uPf]$/.test(values[i]!) ? 2 : 1;
  const command = values[i + 1];
  if (command === undefined) return null;
  return { command: command.replace(/^-/, "").toLowerCase(), rest: values.slice(i + 2) };
}

/**
 * dscl: deleting a whole record (a user, a group) is `userdel`'s Tier 3, and so is setting a
 * password (`passwd`); creating, appending, merging, changing or deleting attributes is Tier 2.
 */
function dscl({ args }: RuleInput): Hit | null {
  const call = dsclCommand(args.values);
  if (call === null) return null;
  const { command, rest } = call;
  const record = command.startsWith("delete") && rest.filter((w) => !w.startsWith("-")).length === 1;
  if (command === "passwd" || record) return hit(3, "account_access");
  return /^(?:create|append|merge|change|delete)/.test(command) ? ACCOUNT : null;
}

/** dseditgroup `-o edit|create|delete` changes a group, as groupadd and groupdel do; `read` and `checkmember` report. */
function dseditgroup({ args }: RuleInput): Hit | null {
  const ops = args.values.map((v, i) =>
    v === "-o" ? (args.at(i + 1) ?? "") : v.startsWith("-o") ? v.slice(2) : "",
  );
  return ops.some((op) => /^(?:edit|create|delete)$/i.test(op)) ? ACCOUNT : null;
}

/** profiles: installing, removing, renewing or syncing configuration profiles (and the old -I, -R, -D flags). */
function profiles({ args }: RuleInput): Hit | null {
  const verb = args.operands()[0]?.toLowerCase() ?? "";
  return /^(?:install|remove|renew|sync)$/.test(verb) || args.short("IRD") ? CONFIG : null;
}

/** csrutil: every form but `status`, `authenticated-root status` and `netboot list` changes System Integrity Protection. */
function csrutil({ args }: RuleInput): Hit | null {
  const [a, b] = args.operands().map((v) => v.toLowerCase());
  const reads = a === undefined || a === "status" || b === "status" || (a === "netboot" && b === "list");
  return reads ? null : HOST;
}

/** spctl: turning Gatekeeper or its rules and kernel-extension consent on or off, or adding and removing rules. */
function spctl({ args }: RuleInput): Hit | null {
  const [a, b] = args.operands().map((v) => v.toLowerCase());
  if (a === "kext-consent") return /^(?:add|remove|enable|disable)$/.test(b ?? "") ? HOST : null;
  const acts =
    /^(?:add|remove|enable|disable|master-enable|master-disable|global-enable|global-disable|reset-default|disable-status)$/;
  return args.longs().some((l) => acts.test(l)) ? HOST : null;
}

/** log: `erase` deletes the whole unified log, `config` with `--mode` or `--reset` changes what is kept. */
function log({ args }: RuleInput): Hit | null {
  const verb = args.subcommand()?.value.toLowerCase();
  if (verb === "erase") return hit(3, "file_destruction");
  return verb === "config" && (args.long("mode") || args.long("reset")) ? CONFIG : null;
}

/**
 * pmset: sleeping now is `systemctl suspend`'s Tier 3; scheduled power events are Tier 2 power
 * changes, settings Tier 2 host changes. `-g` reports; `touch`, `noidle` and `displaysleepnow` change nothing kept.
 */
function pmset({ args }: RuleInput): Hit | null {
  const ops = args.operands().map((v) => v.toLowerCase());
  if (args.at(0) === "-g" || ops.every((o) => /^(?:displaysleepnow|touch|noidle)$/.test(o))) return null;
  if (ops.includes("sleepnow")) return POWER;
  return /^(?:schedule|repeat|relative)$/.test(ops[0] ?? "") ? BOOT : HOST;
}

/** systemsetup: `-setremotelogin off` ends SSH logins; the startup disk is the next boot's; other setters are host changes. */
function systemsetup({ args }: RuleInput): Hit | null {
  const opt = args.values.find((v) => /^-set/i.test(v))?.toLowerCase();
  if (opt === undefined) return null;
  if (opt === "-setremotelogin" && args.values.some((v) => /^off$/i.test(v))) return LOCKOUT;
  return /^-set(?:startupdisk|kernelbootarchitecture)$/.test(opt) ? BOOT : HOST;
}

/** OpenBSD syspatch applies (bare) or reverts (`-r`, `-R`) patches; `-l` and `-c` list. */
function syspatch({ args }: RuleInput): Hit | null {
  return args.short("lc") && !args.short("rR") ? null : PACKAGE;
}

export const BSD_RULES = table([
  ["launchctl", launchctl],
  ["rcctl", rcctl],
  ["sysrc", sysrc],
  ["pkg", pkg],
  [
    "freebsd-update",
    byVerb(verbs([PACKAGE, "fetch cron install rollback upgrade"]), [
      "-b",
      "-d",
      "-f",
      "-k",
      "-r",
      "-s",
      "-t",
    ]),
  ],
  ["syspatch", syspatch],
  // sysupgrade installs the next release and reboots into it; -n stops before the reboot.
  ["sysupgrade", ({ args }) => (args.short("n") ? PACKAGE : POWER)],
  // fw_update -i lists the firmware and -n only says what it would do.
  ["fw_update", ({ args }) => (args.short("in") ? null : PACKAGE)],
  ["softwareupdate", softwareupdate],
  // Boot environments: destroying one loses it, activating one decides what the next boot runs.
  [
    ["bectl", "beadm"],
    byVerb(
      verbs(
        [ERASE, "destroy"],
        [BOOT, "activate"],
        [FILESYSTEM, "create mount umount unmount rename import jail unjail"],
      ),
      ["-r"],
    ),
  ],
  ["diskutil", diskutil],
  // gpart: deleting, destroying, shrinking or restoring a table loses partitions; create refuses a
  // disk that has a scheme and add takes free space only, so they change (Tier 2) without erasing.
  [
    "gpart",
    byVerb(
      verbs(
        [ERASE, "destroy delete resize restore"],
        [BOOT, "bootcode set unset"],
        [FILESYSTEM, "create add modify recover commit undo"],
      ),
    ),
  ],
  ["camcontrol", camcontrol],
  // Time Machine: deleting backups or snapshots (and `disablelocal`, which deleted the local
  // snapshots) cannot be undone; the backup settings and a restore over live files are Tier 2.
  [
    "tmutil",
    byVerb(
      verbs(
        [ERASE, "delete deletelocalsnapshots thinlocalsnapshots deleteinprogress disablelocal"],
        [
          CONFIG,
          "enable disable enablelocal setdestination removedestination addexclusion removeexclusion setquota associatedisk inheritbackup",
        ],
        [FILESYSTEM, "restore"],
      ),
    ),
  ],
  ["defaults", byVerb(verbs([CONFIG, "write delete import rename"]), ["-host"])],
  ["dscl", dscl],
  ["dseditgroup", dseditgroup],
  ["profiles", profiles],
  ["csrutil", csrutil],
  ["spctl", spctl],
  // FileVault: authrestart restarts the Mac; turning encryption or the recovery keys on or off
  // changes the volume, and adding or removing a user changes who may unlock it.
  [
    "fdesetup",
    byVerb(
      verbs(
        [POWER, "authrestart"],
        [FILESYSTEM, "enable disable changerecovery removerecovery updatepreboot"],
        [ACCOUNT, "add remove sync"],
      ),
    ),
  ],
  ["log", log],
  ["pmset", pmset],
  ["systemsetup", systemsetup],
]);
