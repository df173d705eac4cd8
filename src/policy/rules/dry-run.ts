import type { Args } from "./args.js";

/**
 * Dry-run, simulate and check forms: the program reports what it would do and
 * changes nothing, so the command is never the tier of the act it describes.
 *
 * Only flags a program documents as a dry run are trusted, per program: the
 * same letter means something else elsewhere (`mkfs.vfat -n` sets a label,
 * `cp -n` is no-clobber, `gsutil cp -n` too, `umount -f` forces, `zypper -D`
 * before the subcommand is a directory, `pacman -Qp` reads a package file),
 * and some programs accept a dry-run flag that their other verbs ignore
 * (`systemctl --dry-run stop sshd` stops sshd: the flag only applies to the
 * power verbs). A generic `--dry-run` on a program not listed here only
 * cancels the generic destructive-subcommand rule (subcommands.ts).
 * `rm`, `dd`, `shred`, `mkfs.vfat` and `zpool destroy` have no dry run.
 */

/** Values of `--dry-run=` that mean a real run (kubectl, helm: `none`). */
const REAL_RUN = /^(?:none|false|no|off|0)$/i;

/** `--name` or `--name=value` (value not a real-run word) before `--`. */
function longFlag(args: Args, ...names: string[]): boolean {
  for (let i = 0; i < args.optionEnd; i++) {
    const v = args.values[i]!;
    if (!v.startsWith("--")) continue;
    const eq = v.indexOf("=");
    const name = (eq < 0 ? v.slice(2) : v.slice(2, eq)).toLowerCase();
    if (!names.includes(name)) continue;
    if (eq < 0 || !REAL_RUN.test(v.slice(eq + 1))) return true;
  }
  return false;
}

/**
 * A short option letter in a cluster before `--`, read the way getopt reads
 * it: a letter after one that takes a value is part of that value
 * (`-Cn` with `-C dir` is not `-n`).
 */
export function shortFlag(args: Args, letter: string, valued = ""): boolean {
  for (let i = 0; i < args.optionEnd; i++) {
    const v = args.values[i]!;
    if (v.length < 2 || v[0] !== "-" || v[1] === "-" || args.words[i]!.dynamic) continue;
    for (let k = 1; k < v.length; k++) {
      if (v[k] === letter) return true;
      if (valued.includes(v[k]!)) {
        if (k === v.length - 1) i++;
        break;
      }
    }
  }
  return false;
}

/** The first operand (subcommand), lower-cased, after options whose values are named. */
function verb(args: Args, valued?: ReadonlySet<string>): { verb: string; rest: Args } | null {
  const found = args.subcommand(valued);
  return found === null ? null : { verb: found.value.toLowerCase(), rest: args.from(found.index + 1) };
}

type DryRun = (args: Args, name: string) => boolean;

/** mke2fs and the ext mkfs: `-n`; mkfs.xfs: `-N`; mkntfs: `-n`/`--no-action`. Not mkfs.vfat (`-n` is the label). */
function mkfs(args: Args, name: string): boolean {
  const type = name.includes(".")
    ? name.slice(name.indexOf(".") + 1)
    : name === "mke2fs"
      ? "ext2"
      : (args.optionValue("-t", "--type")?.toLowerCase() ?? "");
  if (/^ext[234]$/.test(type) || name === "mke2fs") return shortFlag(args, "n", "bCcdEgGiIjJLlMmNoOrtTUeE");
  if (type === "xfs") return shortFlag(args, "N", "bdiLlmnprs");
  if (type === "ntfs" || name === "mkntfs")
    return shortFlag(args, "n", "cCHLpSsz") || longFlag(args, "no-action");
  return false;
}

const GIT_VALUED = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"]);

/** git verbs whose `-n` is `--dry-run` (`git push -n`, `git clean -n`, `git add -n`, `git rm -n`, `git mv -n`, `git prune -n`). */
function git(args: Args): boolean {
  const found = verb(args, GIT_VALUED);
  if (found === null) return false;
  const { verb: sub, rest } = found;
  const dashN = ["push", "clean", "add", "rm", "mv", "prune", "remote", "worktree", "reflog"];
  if (dashN.includes(sub) && (shortFlag(rest, "n", "oeXx") || longFlag(rest, "dry-run"))) return true;
  return (sub === "fetch" || sub === "filter-repo" || sub === "send-email") && longFlag(rest, "dry-run");
}

/** systemctl --dry-run is documented for the power verbs only; other verbs run. */
const SYSTEMCTL_DRY = new Set([
  "halt",
  "poweroff",
  "reboot",
  "kexec",
  "suspend",
  "hibernate",
  "hybrid-sleep",
  "suspend-then-hibernate",
  "default",
  "rescue",
  "emergency",
  "exit",
]);

function zfs(args: Args, name: string): boolean {
  const found = verb(args);
  if (found === null) return false;
  // zfs destroy/receive -n; zpool create/add/remove/split -n. `zpool destroy` has no dry run.
  const verbs = name === "zfs" ? ["destroy", "receive", "recv"] : ["create", "add", "remove", "split"];
  return verbs.includes(found.verb) && shortFlag(found.rest, "n", "oOdeRt");
}

/** LVM's -t/--test: "run in test mode; commands will not update metadata". */
function lvm(args: Args): boolean {
  return (
    longFlag(args, "test") ||
    args.values.some((v, i) => i < args.optionEnd && /^-[fyvqdA]*t[fyvqdA]*$/.test(v))
  );
}

const LVM_TOOLS = [
  "lvremove",
  "vgremove",
  "pvremove",
  "lvreduce",
  "vgreduce",
  "pvcreate",
  "vgcreate",
  "lvcreate",
  "lvresize",
  "lvextend",
  "lvconvert",
  "lvchange",
  "vgchange",
  "pvmove",
  "lvm",
];

/** The s3cmd commands that honour -n/--dry-run (rb, mb and the others ignore it). */
const S3CMD_DRY = new Set(
  (
    "put get del rm restore cp mv sync setacl setobjectlegalhold setobjectretention setpolicy delpolicy " +
    "setcors delcors payer setlifecycle dellifecycle fixbucket"
  ).split(" "),
);

const TRUSTED: ReadonlyMap<string, DryRun> = new Map<string, DryRun>([
  // rsync: -n/--dry-run ("perform a trial run with no changes made"); popt permutes, so anywhere.
  ["rsync", (a) => shortFlag(a, "n", "eBfTM") || longFlag(a, "dry-run")],
  // make: -n/--just-print/--dry-run/--recon print recipes without running them.
  ["make", (a) => shortFlag(a, "n", "CfIjloWE") || longFlag(a, "just-print", "dry-run", "recon")],
  ["gmake", (a) => shortFlag(a, "n", "CfIjloWE") || longFlag(a, "just-print", "dry-run", "recon")],
  ["git", git],
  ["mkfs", mkfs],
  ["mke2fs", mkfs],
  ["mkntfs", mkfs],
  // apt-get: -s, --simulate, --just-print, --dry-run, --recon, --no-act are one option.
  [
    "apt-get",
    (a) => shortFlag(a, "s", "octa") || longFlag(a, "simulate", "just-print", "dry-run", "recon", "no-act"),
  ],
  [
    "apt",
    (a) => shortFlag(a, "s", "octa") || longFlag(a, "simulate", "just-print", "dry-run", "recon", "no-act"),
  ],
  ["aptitude", (a) => shortFlag(a, "s", "otFwO") || longFlag(a, "simulate")],
  ["dpkg", (a) => longFlag(a, "dry-run", "no-act", "simulate")],
  // dnf/yum --assumeno answers no to the transaction prompt: nothing is changed.
  ["dnf", (a) => longFlag(a, "assumeno")],
  ["yum", (a) => longFlag(a, "assumeno")],
  ["microdnf", (a) => longFlag(a, "assumeno")],
  // zypper: --dry-run, and -D after the subcommand (before it, -D is --reposd-dir).
  [
    "zypper",
    (a) =>
      longFlag(a, "dry-run") || (verb(a, new Set(["-D", "-R", "-C", "-c", "-r"]))?.rest.has("-D") ?? false),
  ],
  ["rpm", (a) => longFlag(a, "test")],
  // pacman -p/--print for -S/-R/-U; with -Q, p selects a package file (read-only anyway).
  ["pacman", (a) => longFlag(a, "print") || (shortFlag(a, "p", "bbr") && !shortFlag(a, "Q"))],
  ["emerge", (a) => shortFlag(a, "p") || longFlag(a, "pretend")],
  ["apk", (a) => shortFlag(a, "s", "XpX") || longFlag(a, "simulate")],
  ["brew", (a) => shortFlag(a, "n") || longFlag(a, "dry-run")],
  ["pip", (a) => longFlag(a, "dry-run")],
  ["npm", (a) => longFlag(a, "dry-run")],
  ["cargo", (a) => longFlag(a, "dry-run")],
  ["composer", (a) => longFlag(a, "dry-run")],
  ["gem", (a) => longFlag(a, "dry-run", "dryrun")],
  ["nix-collect-garbage", (a) => longFlag(a, "dry-run")],
  ["nix-env", (a) => longFlag(a, "dry-run")],
  ["nix", (a) => longFlag(a, "dry-run")],
  // Orchestration and IaC: a documented check or preview mode.
  ["ansible", (a) => shortFlag(a, "C", "aBefilMmPtTuc") || longFlag(a, "check")],
  ["ansible-playbook", (a) => shortFlag(a, "C", "eBfilMPtTuck") || longFlag(a, "check", "syntax-check")],
  ["helm", (a) => longFlag(a, "dry-run")],
  ["kubectl", (a) => longFlag(a, "dry-run")],
  ["oc", (a) => longFlag(a, "dry-run")],
  ["kubeadm", (a) => longFlag(a, "dry-run")],
  ["eksctl", (a) => longFlag(a, "dry-run")],
  ["argocd", (a) => longFlag(a, "dry-run")],
  ["pulumi", (a) => longFlag(a, "preview-only")],
  ["puppet", (a) => longFlag(a, "noop")],
  ["chef-client", (a) => shortFlag(a, "W") || longFlag(a, "why-run")],
  ["chef-solo", (a) => shortFlag(a, "W") || longFlag(a, "why-run")],
  ["certbot", (a) => longFlag(a, "dry-run")],
  // kops previews every change unless --yes is given.
  ["kops", (a) => !(shortFlag(a, "y") || longFlag(a, "yes"))],
  // docker compose has a global --dry-run; plain docker has none (it rejects the flag).
  [
    "docker",
    (a) =>
      verb(a, new Set(["-H", "--host", "-c", "--context"]))?.verb === "compose" && longFlag(a, "dry-run"),
  ],
  ["docker-compose", (a) => longFlag(a, "dry-run")],
  // Storage: test modes that write nothing.
  ["zfs", zfs],
  ["zpool", zfs],
  ["wipefs", (a) => shortFlag(a, "n", "otO") || longFlag(a, "no-act")],
  ["sgdisk", (a) => a.has("-P") || longFlag(a, "pretend")],
  ["sfdisk", (a) => shortFlag(a, "n", "NoOuYXL") || longFlag(a, "no-act")],
  ["mount", (a) => longFlag(a, "fake") || shortFlag(a, "f", "oOtLUTN")],
  ["umount", (a) => longFlag(a, "fake")],
  // Firewalls: parse and check, do not commit.
  ["nft", (a) => shortFlag(a, "c", "fIi") || longFlag(a, "check")],
  ["iptables-restore", (a) => shortFlag(a, "t", "MTW") || longFlag(a, "test")],
  ["ip6tables-restore", (a) => shortFlag(a, "t", "MTW") || longFlag(a, "test")],
  ["ufw", (a) => longFlag(a, "dry-run")],
  // Power: systemctl's dry run for power verbs; shutdown -k only warns, -c cancels; -w only writes wtmp.
  [
    "systemctl",
    (a) =>
      longFlag(a, "dry-run") &&
      SYSTEMCTL_DRY.has(verb(a, new Set(["-H", "-M", "--host", "--machine"]))?.verb ?? ""),
  ],
  ["shutdown", (a) => shortFlag(a, "k") || shortFlag(a, "c")],
  ["reboot", (a) => shortFlag(a, "w") || longFlag(a, "wtmp-only")],
  ["halt", (a) => shortFlag(a, "w") || longFlag(a, "wtmp-only")],
  ["poweroff", (a) => shortFlag(a, "w") || longFlag(a, "wtmp-only")],
  // Backups and object stores.
  ["rclone", (a) => shortFlag(a, "n") || longFlag(a, "dry-run")],
  ["aws", (a) => longFlag(a, "dryrun", "dry-run")],
  ["gsutil", (a) => verb(a, new Set(["-o", "-h", "-u"]))?.verb === "rsync" && shortFlag(a, "n", "xpe")],
  ["restic", (a) => shortFlag(a, "n", "rpo") || longFlag(a, "dry-run")],
  ["borg", (a) => shortFlag(a, "n", "e") || longFlag(a, "dry-run")],
  ["mongorestore", (a) => longFlag(a, "dryrun")],
  // duplicity's remove-* and cleanup only list what they would delete until --force is given.
  [
    "duplicity",
    (a) =>
      longFlag(a, "dry-run") ||
      (a.values.some((v) => /^(?:remove-|cleanup$)/.test(v)) && !longFlag(a, "force")),
  ],
  // s3cmd: -n/--dry-run, for the commands that honour it.
  [
    "s3cmd",
    (a) =>
      (shortFlag(a, "n", "c") || longFlag(a, "dry-run")) &&
      S3CMD_DRY.has(verb(a, new Set(["-c", "--config"]))?.verb ?? ""),
  ],
  // wal-g delete only prints what it would delete until --confirm is given.
  ["wal-g", (a) => verb(a, new Set(["--config"]))?.verb === "delete" && !longFlag(a, "confirm")],
  ...LVM_TOOLS.map((n): [string, DryRun] => [n, lvm]),
]);

/** Lower-cased name → its dry-run test: exact, `mkfs.*`, then without a version suffix (`pip3`). */
function trusted(name: string): DryRun | undefined {
  const exact = TRUSTED.get(name);
  if (exact !== undefined) return exact;
  if (name.startsWith("mkfs.")) return mkfs;
  const bare = name.replace(/[\d.]+$/, "");
  return bare !== name ? TRUSTED.get(bare) : undefined;
}

/** Is this argv a documented dry-run, simulate or check form of its program? */
export function isDryRun(name: string, args: Args): boolean {
  if (args.length === 0) return false;
  return trusted(name)?.(args, name) === true;
}
