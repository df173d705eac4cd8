import { dsclCommand, LAUNCHCTL_READS } from "../rules/bsd.js";
import { pfctlOptions } from "../rules/network.js";
import type { Word } from "../shell/words.js";
import { subsOf, tablePart } from "./define.js";
import { operands } from "./programs-files.js";
import type { ReadEntry } from "./spec.js";

/**
 * FreeBSD, OpenBSD and macOS as they report themselves: launchd and rc jobs, the packet filter,
 * disks, partitions and boot environments, packages and base-system updates, Time Machine, the
 * directory service, and the security and power settings. Only the forms that report are listed;
 * the acting forms are judged by rules/bsd.ts, rules/network.ts and rules/system.ts.
 */

const { entries, spec, all } = tablePart();

all(["sw_vers", "system_profiler", "ioreg", "kextstat", "kldstat", "sockstat", "fstat", "pkg_info"]);

/** No word of the command is decided at run time (a dynamic word could be any option or verb). */
const literal = (args: readonly Word[]): boolean => args.every((w) => !w.dynamic && !w.glob);

// Without a subcommand, launchctl reads its subcommands from stdin (the legacy interactive mode).
spec("launchctl", {
  bare: false,
  subs: { ...subsOf(LAUNCHCTL_READS), limit: { check: (args) => operands(args).length <= 1 } },
});

// pfctl -s MODIFIER, -T show|test on a table, with verbosity, anchor and interface selectors only.
// -n (a parse-only load) is a dry run and -z resets counters: neither is proven.
spec("pfctl", {
  check: (args) => {
    const call = pfctlOptions(args.map((w) => w.value));
    if (!literal(args) || !call.complete || !call.options.every(([l]) => "svgrPqaitT".includes(l)))
      return false;
    const tables = call.options.filter(([l]) => l === "T").map(([, v]) => v);
    if (!tables.every((t) => t === "show" || t === "test")) return false;
    if (call.operands.length > 0 && (tables.length === 0 || !tables.every((t) => t === "test"))) return false;
    return tables.length > 0 || call.options.some(([l]) => l === "s");
  },
});

// diskutil's verbs that report; verifyVolume and verifyDisk check without repairing.
const DISKUTIL_LISTS = subsOf(["list", "info"]);
spec("diskutil", {
  subs: {
    ...subsOf(["list", "info", "activity", "listFilesystems", "verifyVolume", "verifyDisk"]),
    apfs: {
      bare: false,
      subs: subsOf(["list", "listSnapshots", "listCryptoUsers", "listVolumeGroups"]),
    },
    cs: { bare: false, subs: DISKUTIL_LISTS },
    corestorage: { bare: false, subs: DISKUTIL_LISTS },
    ar: { bare: false, subs: subsOf(["list"]) },
    appleRAID: { bare: false, subs: subsOf(["list"]) },
  },
});

// defaults export DOMAIN - prints the domain; to a file it writes one.
spec("defaults", {
  words: true,
  valued: ["-host"],
  subs: {
    ...subsOf(["read", "read-type", "domains", "find"]),
    export: {
      check: (args) => {
        const o = operands(args);
        return o.length === 2 && o[1]!.value === "-";
      },
    },
  },
});

// scutil alone, and --prefs, read commands from stdin; a reporting mode comes first, and no option
// but the reporting modes, their timeout and the verbosity follows.
spec("scutil", {
  check: (args) =>
    /^(?:--get|--dns|--proxy|--nwi|-r|-w)$/.test(args[0]?.value ?? "") &&
    literal(args) &&
    args.every((w) => !w.value.startsWith("-") || /^(?:--get|--dns|--proxy|--nwi|-[rwWtdv])$/.test(w.value)),
});
spec("systemsetup", {
  check: (args) => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return (
      options.length > 0 &&
      literal(args) &&
      options.every((w) => /^-(?:get|list)[a-z]+$|^-(?:printcommands|help|version)$/i.test(w.value))
    );
  },
});
spec("pmset", {
  check: (args) =>
    args[0]?.value === "-g" && args.length <= 2 && literal(args) && /^[a-z]*$/.test(args[1]?.value ?? ""),
});
// networksetup runs the one command its options name: only the listing and getting ones are proven.
spec("networksetup", {
  check: (args) => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return (
      args[0]?.value.startsWith("-") === true &&
      literal(args) &&
      options.every((w) => /^-(?:list|get|show|is|print)[a-z0-9]*$|^-(?:version|help)$/i.test(w.value))
    );
  },
});
spec("csrutil", {
  subs: {
    status: true,
    "authenticated-root": { bare: false, subs: subsOf(["status"]) },
    netboot: { bare: false, subs: subsOf(["list"]) },
  },
});
// spctl --status, --assess (-a) and --list; any other option turns Gatekeeper or a rule on or off.
const SPCTL_VALUED = new Set(["-t", "--type", "--context", "--label", "--path"]);
spec("spctl", {
  check: (args) => {
    if (!literal(args) || !args.some((w) => /^(?:--status|-a|--assess|--list)$/.test(w.value))) return false;
    for (let i = 0; i < args.length; i++) {
      const v = args[i]!.value;
      if (SPCTL_VALUED.has(v)) i++;
      else if (
        v.startsWith("-") &&
        !/^(?:--status|-a|--assess|--list|-v+|--verbose|--raw|--ignore-cache|--no-cache)$/.test(v)
      )
        return false;
    }
    return true;
  },
});
spec("fdesetup", {
  subs: subsOf([
    "status",
    "list",
    "isactive",
    "haspersonalrecoverykey",
    "hasinstitutionalrecoverykey",
    "usingrecoverykey",
    "supportsauthrestart",
    "showdeferralinfo",
  ]),
});
spec("kmutil", { subs: subsOf(["showloaded", "inspect", "find", "libraries", "print-diagnostics"]) });
spec("log", { subs: subsOf(["show", "stream", "stats"]) });
// softwareupdate --list scans the update catalogue as dnf check-update does; --history lists installs.
spec("softwareupdate", {
  check: (args) =>
    args.some((w) => /^(?:-l|--list|--history|--list-full-installers)$/.test(w.value)) &&
    args.every((w) =>
      /^(?:-l|--list|--history|--list-full-installers|--all|--no-scan|--include-config-data|--verbose)$/.test(
        w.value,
      ),
    ),
});
// dscl DATASOURCE -read|-list|-search …; without a command it reads commands from stdin, and -f opens another node file.
spec("dscl", {
  check: (args) => {
    const call = dsclCommand(args.map((w) => w.value));
    const at = args.length - (call?.rest.length ?? 0);
    const head = args.slice(0, at);
    const options = head.slice(0, -2).filter((w) => w.value.startsWith("-"));
    return (
      call !== null &&
      literal(head) &&
      /^(?:read|readall|readpl|readpli|list|search|diff)$/.test(call.command) &&
      options.every((w) => /^-(?:raw|plist|url|q|u|P)$/.test(w.value))
    );
  },
});
spec("dseditgroup", {
  check: (args) => {
    const o = args.findIndex((w) => w.value === "-o");
    return (
      args.filter((w) => w.value.startsWith("-o")).length === 1 &&
      /^(?:read|checkmember)$/.test(args[o + 1]?.value ?? "") &&
      literal(args) &&
      !args.some((w) => w.value === "-p")
    );
  },
});
// profiles without a verb is the old flag syntax, where -I installs and -R/-D remove: not proven.
spec("profiles", { bare: false, subs: subsOf(["show", "list", "status"]) });
spec("tmutil", {
  subs: subsOf([
    "listbackups",
    "status",
    "latestbackup",
    "machinedirectory",
    "destinationinfo",
    "listlocalsnapshots",
    "listlocalsnapshotdates",
    "isexcluded",
    "compare",
    "calculatedrift",
    "uniquesize",
    "verifychecksums",
  ]),
});

// pkg: its reporting subcommands, each with the options that keep it one.
const PKG_SUBS: Readonly<Record<string, readonly string[] | true>> = {
  info: true,
  version: true,
  query: true,
  rquery: true,
  search: true,
  which: true,
  stats: true,
  shlib: true,
  updating: true,
  config: true,
  help: true,
  // audit -F fetches the vulnerability database and writes it.
  audit: ["-F", "--fetch"],
  // check -d installs missing dependencies, -B and -r rewrite the database.
  check: ["-d", "--dependencies", "-B", "--shlibs", "-r", "--recompute", "-y", "--yes"],
};
const PKG_GLOBALS = { valued: ["-j", "-c", "-r"], flags: /^-[dlNv46]+$/ };

/**
 * pkg [GLOBALS] SUBCOMMAND …: -C and -o before the subcommand point pkg at another configuration
 * (which can load plugins), so only the jail, chroot and root selectors and the plain flags are
 * allowed there; after it, the subcommand's own options (`pkg info -o` is the origin).
 */
function pkgReads(args: readonly Word[]): boolean {
  let i = 0;
  for (; i < args.length && args[i]!.value.startsWith("-"); i++) {
    const v = args[i]!.value;
    if (PKG_GLOBALS.valued.includes(v)) i++;
    else if (!PKG_GLOBALS.flags.test(v)) return false;
  }
  const sub = args[i];
  if (sub === undefined) return true;
  const rule = Object.hasOwn(PKG_SUBS, sub.value) ? PKG_SUBS[sub.value] : undefined;
  if (rule === undefined || !literal(args.slice(0, i + 1))) return false;
  return rule === true || args.slice(i + 1).every((w) => !optionIn(w.value, rule));
}

/** A short option in a cluster (`-sd`), or a long one in full or abbreviated (`--dep`). */
function optionIn(v: string, options: readonly string[]): boolean {
  if (v.startsWith("--")) {
    const name = v.split("=", 1)[0]!;
    return name.length > 2 && options.some((o) => o.startsWith(name));
  }
  return /^-[A-Za-z]+$/.test(v) && options.some((o) => o.length === 2 && v.includes(o[1]!));
}
// The /usr/sbin/pkg bootstrap on a host without pkg asks on stdin whether to install it, so
// nothing may arrive there. Remote queries refresh the repository catalogue first, as dnf's
// listings refresh its metadata.
spec("pkg", { sendsStdin: true, check: pkgReads });
spec("freebsd-update", {
  valued: ["-b", "-d", "-k", "-r", "-s", "-t"],
  deny: ["-f"],
  subs: subsOf(["IDS", "updatesready", "showconfig"]),
});
const BE_READ = { subs: subsOf(["list", "check"]) };
spec("bectl", { valued: ["-r"], ...BE_READ });
spec("beadm", BE_READ);
// sysrc NAME, -a, -A, -n …: -c only compares an assignment; -f, -R and -j read another rc.conf (shell code) or jail.
spec("sysrc", {
  deny: ["-f", "-R", "-j"],
  check: (args) =>
    args.some((w) => /^-[A-Za-z]*c/.test(w.value)) ||
    (!args.some((w) => /^-[A-Za-z]*x/.test(w.value)) && operands(args).every((w) => !w.value.includes("="))),
});
spec("rcctl", { subs: subsOf(["ls", "get", "getdef", "check"]) });
spec("syspatch", { check: (args) => args.length > 0 && args.every((w) => /^-[lc]+$/.test(w.value)) });
spec("gpart", { subs: subsOf(["show", "list", "status", "backup"]) });
spec("camcontrol", {
  subs: {
    ...subsOf([
      "devlist",
      "periphlist",
      "inquiry",
      "identify",
      "readcap",
      "reportluns",
      "defects",
      "opcodes",
    ]),
    tags: { deny: ["-N"] },
  },
});

export const BSD_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
