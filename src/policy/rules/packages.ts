import { type Hit, hit, type Rule, type RuleInput, table } from "./args.js";

/**
 * Packages of every manager, and scheduled jobs: Tier 2. What they change is
 * visible and can be reverted by the same tool (remove what was installed,
 * reinstall what was removed, put the crontab back).
 */

const PACKAGE = hit(2, "package_change");

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
  return verb !== undefined && NPM.includes(verb) ? PACKAGE : null;
}

/** pacman: the operation is the upper-case letter; `-Ss`, `-Si`, `-Sl`, `-Sg`, `-Sp` only query. */
function pacman({ args }: RuleInput): Hit | null {
  for (const c of args.clusters()) {
    if (/[RUD]/.test(c)) return PACKAGE;
    if (c.includes("S")) return /[silgp]/.test(c.replace("S", "")) && !/[yu]/.test(c) ? null : PACKAGE;
  }
  const longs = args.longs();
  return longs.includes("sync") || longs.includes("remove") || longs.includes("upgrade") ? PACKAGE : null;
}

function dpkg({ args }: RuleInput): Hit | null {
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

/** `python -m pip install x` reaches here as pip via the interpreter unwrapping. */
const PIP = verbs(["install", "uninstall", "remove"]);

function make({ args }: RuleInput): Hit | null {
  return args.operands().some((o) => o === "install" || o === "uninstall") ? PACKAGE : null;
}

/**
 * crontab: `-r` removes every job with no backup and no prompt (Tier 3);
 * `-l` only lists; installing a file or editing is Tier 2.
 */
function crontab({ args }: RuleInput): Hit | null {
  const clusters = args.clusters();
  if (clusters.some((c) => c.includes("r")) && !clusters.some((c) => c.includes("i")))
    return hit(3, "schedule_change");
  if (clusters.length > 0 && clusters.every((c) => /^[lu]$/.test(c)) && !args.has("-e")) {
    return args.operands().length > (args.has("-u") ? 1 : 0) ? hit(2, "schedule_change") : null;
  }
  return hit(2, "schedule_change");
}

function at({ name, args }: RuleInput): Hit | null {
  if (name === "atq" || args.short("lc")) return null;
  return hit(2, "schedule_change");
}

export const PACKAGE_RULES = table([
  [["apt", "apt-get", "aptitude", "nala"], verbs(APT, ["-o", "-c", "-t"])],
  ["apt-mark", verbs(["hold", "unhold", "auto", "manual", "install", "remove", "purge"])],
  [["add-apt-repository", "apt-add-repository"], () => PACKAGE],
  [["yum", "dnf", "microdnf", "tdnf", "dnf5"], verbs(YUM, ["-c", "--releasever", "--installroot", "-x"])],
  [
    "zypper",
    verbs([
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
  ["apk", verbs(["add", "del", "upgrade", "fix", "update"])],
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
    "yarn",
    verbs(["add", "remove", "install", "upgrade", "up", "global", "link", "unlink", "dedupe", "publish"]),
  ],
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
  ["bun", verbs(["add", "install", "i", "remove", "rm", "update", "upgrade", "link", "unlink", "publish"])],
  ["gem", verbs(["install", "uninstall", "update", "cleanup", "i"])],
  ["cargo", verbs(["install", "uninstall"])],
  ["go", verbs(["install", "get"])],
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
  [
    [
      "xbps-install",
      "xbps-remove",
      "emerge",
      "pkg_add",
      "pkg_delete",
      "installpkg",
      "removepkg",
      "upgradepkg",
    ],
    () => PACKAGE,
  ],
  ["pkg", verbs(["install", "delete", "remove", "upgrade", "autoremove", "add"])],
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
  ["make", make],
  ["crontab", crontab],
  [["at", "batch", "atq", "atrm"], at],
]);
