import { subsOf, tablePart } from "./define.js";
import type { ReadEntry, ReadSpec } from "./spec.js";

/** Packages, as the managers report them: listing, searching and showing, never installing. */

const { entries, spec } = tablePart();

// Packages, as the managers report them.
// Every option must be a query: dpkg takes one action, and a second one would be another act.
const DPKG_QUERY =
  /^(?:-[lLsSpcI]|--(?:list|listfiles|status|search|print-avail|contents|info|get-selections|print-architecture|print-foreign-architectures|audit|verify|compare-versions))$/;
spec("dpkg", {
  check: (args) => {
    const options = args.filter((w) => w.value.startsWith("-"));
    return options.length > 0 && options.every((w) => DPKG_QUERY.test(w.value));
  },
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
entries.set("pip3", entries.get("pip")!);
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
// go is left out: inside a module whose go.mod names another toolchain, any go command downloads
// that toolchain and runs it.

export const PACKAGE_PROGRAMS: ReadonlyMap<string, ReadEntry> = entries;
