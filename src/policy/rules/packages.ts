import { type Args, type Hit, hit, type Rule, type RuleInput, table } from "./args.js";
import { packageScript, projectCode } from "./build.js";

/**
 * Packages of every manager, and scheduled jobs: Tier 2. What they change is
 * visible and can be reverted by the same tool (remove what was installed,
 * reinstall what was removed, put the crontab back).
 */

const PACKAGE = hit(2, "package_change");

/**
 * Packages the host cannot lose: the SSH server and the network stack (the
 * operator is cut off: network_lockout), sudo and PAM (nobody becomes root or
 * logs in: account_access), the kernel and boot loader (the next boot fails:
 * power_kernel), and libc, init, the shell, coreutils and the package managers
 * themselves (nothing runs, or nothing can reinstall them: system_removal).
 * Removing one with any manager is Tier 3.
 */
const NETWORK_PACKAGE =
  /^(?:openssh-server|openssh|openssh-sshd|ssh|sshd|dropbear|dropbear-bin|tinysshd|network-manager|networkmanager|netplan\.io|netplan|ifupdown2?|iproute2?|netbase|systemd-networkd|wpasupplicant|wpa_supplicant|isc-dhcp-client|dhcpcd5?|dhclient|tailscale|wireguard-tools)$/;
const ACCESS_PACKAGE =
  /^(?:sudo|sudo-ldap|doas|opendoas|libpam-modules|libpam-modules-bin|libpam-runtime|libpam0g|pam|linux-pam|login|passwd|shadow|shadow-utils)$/;
const BOOT_PACKAGE =
  /^(?:linux-image|linux-modules|grub|shim)|^(?:linux|linux-lts|linux-zen|linux-hardened|linux-generic|linux-virtual|linux-aws|linux-azure|linux-gcp|linux-kvm|linux-firmware|kernel|kernel-core|kernel-default|kernel-modules|initramfs-tools|dracut|mkinitcpio)$/;
const SYSTEM_PACKAGE =
  /^(?:systemd|systemd-sysv|libsystemd0|init|sysvinit-core|openrc|libc6|libc-bin|glibc|glibc-common|musl|bash|dash|coreutils|util-linux|base-files|base|filesystem|dpkg|rpm|apt|dnf|yum|pacman|zypper|apk-tools|busybox|tar|gzip|findutils|grep|sed)$/;

/** `openssh-server:amd64`, `sudo=1.9.5-1`, `glibc-2.34-1.x86_64` → the bare package name. */
function packageName(word: string): string {
  return word
    .toLowerCase()
    .replace(/[:=].*$/, "")
    .replace(/-\d[\w.+~:-]*$/, "");
}

/** The Tier-3 verdict for removing these packages, or null when none is critical. */
export function criticalRemoval(packages: readonly string[]): Hit | null {
  const names = packages.map(packageName);
  if (names.some((n) => NETWORK_PACKAGE.test(n))) return hit(3, "network_lockout");
  if (names.some((n) => ACCESS_PACKAGE.test(n))) return hit(3, "account_access");
  if (names.some((n) => BOOT_PACKAGE.test(n))) return hit(3, "power_kernel");
  if (names.some((n) => SYSTEM_PACKAGE.test(n))) return hit(3, "system_removal");
  return null;
}

/** Operands after the verb, skipping options (`apt-get remove --purge -y openssh-server`). */
function packagesAfter(args: Args, index: number): string[] {
  return args.from(index + 1).operands();
}

/**
 * A manager whose verb removes (`apt remove`, `dnf erase`, `zypper rm`, `apk del`),
 * or `apt install pkg-` (a trailing minus removes): Tier 3 for a critical package,
 * else what the manager's table gives.
 */
function removing(base: Rule, removeVerbs: string[], valued: string[] = [], minusRemoves = false): Rule {
  const verbsSet = new Set(removeVerbs);
  const valuedSet = new Set(valued);
  return (input: RuleInput): Hit | null => {
    const found = input.args.subcommand(valuedSet);
    if (found !== null) {
      const verb = found.value.toLowerCase();
      const pkgs = packagesAfter(input.args, found.index);
      const removed = verbsSet.has(verb)
        ? pkgs
        : minusRemoves && verb === "install"
          ? pkgs.filter((p) => p.endsWith("-")).map((p) => p.slice(0, -1))
          : [];
      const critical = criticalRemoval(removed);
      if (critical !== null) return critical;
    }
    return base(input);
  };
}

/** `dnf history`, `dnf history list|info|summary`: the transaction log, read; undo, redo and rollback act. */
function historyReads(base: Rule): Rule {
  return (input) => {
    const at = input.args.values.indexOf("history");
    if (at >= 0) {
      const next = input.args.values.slice(at + 1).find((v) => !v.startsWith("-"));
      if (next === undefined || /^(?:list|info|summary|userinstalled|stats|package-list)$/.test(next))
        return null;
    }
    return base(input);
  };
}

/** A manager whose first operand is the verb. */
function verbs(changing: string[], valued: string[] = []): Rule {
  const set = new Set(changing);
  const valuedSet = new Set(valued);
  return ({ args }: RuleInput): Hit | null => {
    const verb = args.subcommand(valuedSet)?.value.toLowerCase();
    return verb !== undefined && set.has(verb) ? PACKAGE : null;
  };
}

const APT = [
  "install",
  "remove",
  "purge",
  "upgrade",
  "dist-upgrade",
  "full-upgrade",
  "autoremove",
  "autopurge",
  "reinstall",
  "build-dep",
  "markauto",
  "unmarkauto",
  "hold",
  "unhold",
  "satisfy",
  "source",
];

const YUM = [
  "install",
  "remove",
  "erase",
  "update",
  "upgrade",
  "downgrade",
  "reinstall",
  "autoremove",
  "groupinstall",
  "groupremove",
  "swap",
  "distro-sync",
  "distrosync",
  "module",
  "localinstall",
  "config-manager",
  "group",
  "history",
];

const NPM = [
  "i",
  "in",
  "ins",
  "inst",
  "insta",
  "instal",
  "install",
  "isnt",
  "isntal",
  "isntall",
  "add",
  "un",
  "uninstall",
  "unlink",
  "remove",
  "rm",
  "r",
  "update",
  "up",
  "upgrade",
  "udpate",
  "ci",
  "clean-install",
  "install-clean",
  "link",
  "ln",
  "publish",
  "unpublish",
  "deprecate",
  "dedupe",
  "prune",
  "audit",
];

/** npm with -g changes the machine whatever the verb (`npm -g i x`); `npm audit` only writes with `fix`. */
function npm(input: RuleInput): Hit | null {
  const verb = input.args.subcommand()?.value.toLowerCase();
  if (verb === "audit") return input.args.hasLower("fix") ? PACKAGE : null;
  if (verb !== undefined && NPM.includes(verb)) return PACKAGE;
  return packageScript(input);
}

/** pacman: the operation is the upper-case letter; `-Ss`, `-Si`, `-Sl`, `-Sg`, `-Sp` only query. */
function pacman({ args }: RuleInput): Hit | null {
  if (args.clusters().some((c) => c.includes("R")) || args.long("remove")) {
    const critical = criticalRemoval(args.operands());
    if (critical !== null) return critical;
  }
  for (const c of args.clusters()) {
    if (/[RUD]/.test(c)) return PACKAGE;
    if (c.includes("S")) return /[silgp]/.test(c.replace("S", "")) && !/[yu]/.test(c) ? null : PACKAGE;
  }
  const longs = args.longs();
  return longs.includes("sync") || longs.includes("remove") || longs.includes("upgrade") ? PACKAGE : null;
}

function dpkg({ args }: RuleInput): Hit | null {
  if (args.clusters().some((c) => /^[rP]$/.test(c)) || args.long("remove") || args.long("purge")) {
    const critical = criticalRemoval(args.operands());
    if (critical !== null) return critical;
  }
  if (args.clusters().some((c) => /^[irPV]$/.test(c) || c === "-configure")) return PACKAGE;
  const writes = [
    "install",
    "remove",
    "purge",
    "configure",
    "unpack",
    "set-selections",
    "clear-selections",
    "triggers-only",
  ];
  return args.longs().some((l) => writes.includes(l)) ? PACKAGE : null;
}

function rpm({ args }: RuleInput): Hit | null {
  if (args.clusters().some((c) => c.startsWith("e")) || args.long("erase")) {
    const critical = criticalRemoval(args.operands());
    if (critical !== null) return critical;
  }
  if (args.clusters().some((c) => /^[iUFe]/.test(c))) return PACKAGE;
  const writes = [
    "install",
    "upgrade",
    "freshen",
    "erase",
    "reinstall",
    "import",
    "rebuilddb",
    "setperms",
    "setugids",
  ];
  return args.longs().some((l) => writes.includes(l)) ? PACKAGE : null;
}

function zypperRemoving(changing: string[]): Rule {
  return removing(verbs(changing), ["rm", "remove"]);
}

/** `python -m pip install x` reaches here as pip via the interpreter unwrapping. */
const PIP = verbs(["install", "uninstall", "remove"]);

/** The first rule's verdict, else the second's: a package manager that also runs project code. */
function orElse(first: Rule, second: Rule): Rule {
  return (input) => first(input) ?? second(input);
}

export const PACKAGE_RULES = table([
  [
    ["apt", "apt-get", "aptitude", "nala"],
    removing(
      verbs(APT, ["-o", "-c", "-t"]),
      ["remove", "purge", "autoremove", "autopurge"],
      ["-o", "-c", "-t"],
      true,
    ),
  ],
  ["apt-mark", verbs(["hold", "unhold", "auto", "manual", "install", "remove", "purge"])],
  [["add-apt-repository", "apt-add-repository"], () => PACKAGE],
  [
    ["yum", "dnf", "microdnf", "tdnf", "dnf5"],
    historyReads(
      removing(
        verbs(YUM, ["-c", "--releasever", "--installroot", "-x"]),
        ["remove", "erase", "autoremove", "rm"],
        ["-c", "--releasever", "--installroot", "-x"],
      ),
    ),
  ],
  [
    "zypper",
    zypperRemoving([
      "in",
      "install",
      "rm",
      "remove",
      "up",
      "update",
      "dup",
      "dist-upgrade",
      "patch",
      "addrepo",
      "ar",
      "removerepo",
      "rr",
    ]),
  ],
  [["pacman", "yay", "paru"], pacman],
  ["apk", removing(verbs(["add", "del", "upgrade", "fix", "update"]), ["del"])],
  [
    "snap",
    verbs([
      "install",
      "remove",
      "refresh",
      "revert",
      "disable",
      "enable",
      "set",
      "unset",
      "connect",
      "disconnect",
    ]),
  ],
  ["flatpak", verbs(["install", "uninstall", "update", "remove", "remote-add", "remote-delete", "override"])],
  [
    "brew",
    verbs([
      "install",
      "uninstall",
      "remove",
      "rm",
      "upgrade",
      "reinstall",
      "tap",
      "untap",
      "link",
      "unlink",
      "cleanup",
      "pin",
      "unpin",
      "autoremove",
    ]),
  ],
  [["pip", "pipx"], PIP],
  ["uv", verbs(["add", "remove", "sync", "pip", "tool"])],
  ["poetry", verbs(["add", "remove", "install", "update", "lock"])],
  ["npm", npm],
  [
    "pnpm",
    verbs([
      "add",
      "install",
      "i",
      "remove",
      "rm",
      "uninstall",
      "un",
      "update",
      "up",
      "upgrade",
      "link",
      "unlink",
      "publish",
      "prune",
    ]),
  ],
  [
    "bun",
    orElse(
      verbs(["add", "install", "i", "remove", "rm", "update", "upgrade", "link", "unlink", "publish"]),
      projectCode,
    ),
  ],
  ["gem", verbs(["install", "uninstall", "update", "cleanup", "i"])],
  ["cargo", orElse(verbs(["install", "uninstall"]), projectCode)],
  ["go", orElse(verbs(["install", "get"]), projectCode)],
  [
    ["conda", "mamba", "micromamba"],
    verbs(["install", "remove", "uninstall", "create", "update", "upgrade", "env"]),
  ],
  ["composer", verbs(["require", "install", "remove", "update", "upgrade", "global"])],
  ["dpkg", dpkg],
  ["rpm", rpm],
  [
    ["nix-env"],
    ({ args }) =>
      args.short("ieu") || args.long("install") || args.long("uninstall") || args.long("upgrade")
        ? PACKAGE
        : null,
  ],
  ["nix", verbs(["profile"])],
  ["port", verbs(["install", "uninstall", "upgrade", "selfupdate", "activate", "deactivate"])],
  ["opkg", verbs(["install", "remove", "upgrade", "update"])],
  [["xbps-install", "emerge", "pkg_add", "installpkg", "upgradepkg"], () => PACKAGE],
  [["xbps-remove", "pkg_delete", "removepkg"], ({ args }) => criticalRemoval(args.operands()) ?? PACKAGE],
  [
    "update-alternatives",
    ({ args }) =>
      args.long("set") ||
      args.long("install") ||
      args.long("remove") ||
      args.long("config") ||
      args.long("auto")
        ? hit(2, "config_change")
        : null,
  ],
]);
